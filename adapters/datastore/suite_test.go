package datastore_test

import (
	"testing"

	dstest "github.com/ipfs/go-datastore/test"
	"github.com/shale-db/shale"
	"github.com/shale-db/shale/adapters/datastore"
)

// newStore opens a datastore in a new temporary directory, closed at the
// end of the test.
func newStore(tb testing.TB, opts *shale.Options) *datastore.Datastore {
	tb.Helper()
	d, err := datastore.New(tb.TempDir(), opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := d.Close(); err != nil {
			tb.Error(err)
		}
	})
	return d
}

// smallMemtable makes the suites read from tables as well as from the
// memtable: 64 KiB memtables flush while a subtest writes.
var smallMemtable = &shale.Options{WriteBufferSize: 64 << 10}

// TestSuite runs go-datastore's own suite, as its authors wrote it: every
// basic subtest (SubtestCombinations only without the race detector, as
// dstest decides) and, since a *Datastore is Batching, its batch tests; on
// disk with the default memtable and a small one, and in memory.
func TestSuite(t *testing.T) {
	t.Run("defaults", func(t *testing.T) { dstest.SubtestAll(t, newStore(t, nil)) })
	t.Run("small-memtable", func(t *testing.T) { dstest.SubtestAll(t, newStore(t, smallMemtable)) })
	t.Run("in-memory", func(t *testing.T) {
		d, err := datastore.New("", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		dstest.SubtestAll(t, d)
	})
}

// TestBatchSuite runs go-datastore's batch tests on their own, each on a
// fresh datastore.
func TestBatchSuite(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(*testing.T, *datastore.Datastore)
	}{
		{"RunBatchTest", func(t *testing.T, d *datastore.Datastore) { dstest.RunBatchTest(t, d) }},
		{"RunBatchDeleteTest", func(t *testing.T, d *datastore.Datastore) { dstest.RunBatchDeleteTest(t, d) }},
		{"RunBatchPutAndDeleteTest", func(t *testing.T, d *datastore.Datastore) { dstest.RunBatchPutAndDeleteTest(t, d) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(t, newStore(t, nil))
			tc.run(t, newStore(t, smallMemtable))
		})
	}
}
