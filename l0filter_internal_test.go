package shale

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shale-db/shale/internal/manifest"
)

// readOften makes db's current memtable count as read often, so that the
// memtable after it keeps a filter of its keys.
func readOften(t *testing.T, db *DB) {
	t.Helper()
	for i := range 5000 {
		if _, err := db.Get(fmt.Appendf(nil, "warm%d", i)); !errors.Is(err, ErrNotFound) {
			t.Fatal(err)
		}
	}
}

// TestLevelZeroKeyFilter: a table flushed from a memtable that kept a
// filter keeps it in level 0. A Get of a key it does not hold then reads
// none of the table's blocks, and still answers as before: keys held are
// found, a range deletion in a newer source still covers an older one's
// key, and one in the table itself still applies.
func TestLevelZeroKeyFilter(t *testing.T) {
	db, err := Open(t.TempDir(), &Options{WriteBufferSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	key := func(i int) []byte { return fmt.Appendf(nil, "key%05d", i) }
	put := func(from, to int, tag string) { // the even keys of [from, to)
		for i := from; i < to; i += 2 {
			if err := db.Put(key(i), []byte(tag), NoSync); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A memtable keeps a filter when the one before it served Gets (and
	// Flush switches only a memtable that holds something).
	readOften(t, db)
	put(5000, 5001, "first")
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	put(0, 1000, "old")
	readOften(t, db)
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	put(1000, 2000, "new")
	readOften(t, db)
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	v := db.vs.Current()
	l0 := append([]*manifest.FileMeta(nil), v.Levels[0]...)
	v.Unref()
	if len(l0) != 3 {
		t.Fatalf("%d tables in level 0, want 3", len(l0))
	}
	for _, f := range l0[:2] {
		if f.KeyFilter() == nil {
			t.Fatalf("table %d in level 0 has no key filter", f.Num)
		}
	}

	var tableReads atomic.Int64
	hook := func(*manifest.FileMeta) { tableReads.Add(1) }
	testHookGetFromTable.Store(&hook)
	defer testHookGetFromTable.Store(nil)
	for i := 1; i < 2000; i += 2 { // within the filtered tables' bounds
		if _, err := db.Get(key(i)); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Get(%s) = %v; want ErrNotFound", key(i), err)
		}
	}
	// A filter lets about 1% through.
	if n := tableReads.Load(); n > 30 {
		t.Errorf("1,000 Gets of keys no table holds read %d tables", n)
	}
	for i := 0; i < 2000; i += 14 {
		want := "old"
		if i >= 1000 {
			want = "new"
		}
		v, err := db.Get(key(i))
		if err != nil || string(v) != want {
			t.Fatalf("Get(%s) = %q, %v; want %q", key(i), v, err, want)
		}
	}

	// A range deletion in the memtable over keys of the older table, which
	// the newer table's filter passes over.
	if err := db.DeleteRange(key(100), key(200), NoSync); err != nil {
		t.Fatal(err)
	}
	for i := 90; i < 210; i += 2 {
		_, err := db.Get(key(i))
		if deleted := i >= 100 && i < 200; deleted != errors.Is(err, ErrNotFound) {
			t.Fatalf("Get(%s) after DeleteRange: %v", key(i), err)
		}
	}
	// Flushed, the range deletion's table has a filter too, and is read
	// all the same.
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	v = db.vs.Current()
	newest := v.Levels[0][0]
	v.Unref()
	if !newest.RangeDels || newest.KeyFilter() == nil {
		t.Fatalf("the newest table: range deletions %v, key filter %v", newest.RangeDels, newest.KeyFilter() != nil)
	}
	for i := 90; i < 210; i += 2 {
		_, err := db.Get(key(i))
		if deleted := i >= 100 && i < 200; deleted != errors.Is(err, ErrNotFound) {
			t.Fatalf("Get(%s) after the flush of DeleteRange: %v", key(i), err)
		}
	}
}

// TestMovedTableDropsKeyFilter: a level-0 table that a compaction moves
// down a level without rewriting it keeps no filter there.
func TestMovedTableDropsKeyFilter(t *testing.T) {
	db, err := Open(t.TempDir(), &Options{WriteBufferSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	readOften(t, db)
	// Tables of keys that do not overlap: level 0's compactions move them.
	for table := range 6 {
		for i := range 100 {
			if err := db.Put(fmt.Appendf(nil, "t%d-%03d", table, i), []byte("v"), NoSync); err != nil {
				t.Fatal(err)
			}
		}
		readOften(t, db)
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
		if table > 0 && table < 3 { // below level 0's trigger: nothing moved yet
			v := db.vs.Current()
			kf := v.Levels[0][0].KeyFilter()
			v.Unref()
			if kf == nil {
				t.Fatalf("table %d has no key filter in level 0", table)
			}
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for db.Metrics().Compactions.Move == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no table moved: %v", db.Metrics().Compactions)
		}
		time.Sleep(10 * time.Millisecond)
	}
	v := db.vs.Current()
	defer v.Unref()
	moved := 0
	for level := 1; level < manifest.NumLevels; level++ {
		for _, f := range v.Levels[level] {
			moved++
			if f.KeyFilter() != nil {
				t.Errorf("table %d in level %d keeps a key filter", f.Num, level)
			}
		}
	}
	if moved == 0 {
		t.Fatal("no table below level 0")
	}
	for table := range 6 {
		if got, err := db.Get(fmt.Appendf(nil, "t%d-050", table)); err != nil || string(got) != "v" {
			t.Fatalf("table %d's key: %q, %v", table, got, err)
		}
	}
}
