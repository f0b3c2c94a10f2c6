package shale

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/shale-db/shale/internal/vfs"
)

// TestMemtableFilterFollowsReads checks the engine's rule for memtable
// filters: a new memtable keeps one when the memtable it replaces served
// Gets often (memtable.ReadOften), and Gets through a filtered memtable
// find every key it holds, deleted ones included, and none it does not.
func TestMemtableFilterFollowsReads(t *testing.T) {
	db := reviewMustOpen(t, vfs.NewMem(), &Options{WriteBufferSize: 1 << 20})
	filtered := func() bool {
		db.mu.Lock()
		defer db.mu.Unlock()
		return db.mu.mem.Filtered()
	}
	key := func(i int) []byte { return fmt.Appendf(nil, "k%05d", i) }
	put := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			if err := db.Put(key(i), key(i), NoSync); err != nil {
				t.Fatal(err)
			}
		}
	}
	flush := func() {
		t.Helper()
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if filtered() {
		t.Fatal("the memtable Open made keeps a filter")
	}
	put(0, 100)
	flush()
	if filtered() {
		t.Fatal("a filter after a memtable no Get read")
	}
	put(100, 200)
	for i := range 5000 {
		db.Get(key(i % 300))
	}
	flush()
	if !filtered() {
		t.Fatal("no filter after a memtable 5,000 Gets read")
	}
	put(200, 300)
	if err := db.Delete(key(250), NoSync); err != nil {
		t.Fatal(err)
	}
	for i := range 400 {
		v, err := db.Get(key(i))
		switch {
		case i == 250 || i >= 300:
			if !errors.Is(err, ErrNotFound) {
				t.Fatalf("Get(%s) = %q, %v; want ErrNotFound", key(i), v, err)
			}
		case err != nil || !bytes.Equal(v, key(i)):
			t.Fatalf("Get(%s) = %q, %v", key(i), v, err)
		}
	}
	flush() // that memtable served 400 Gets: too few
	if filtered() {
		t.Fatal("a filter after a memtable 400 Gets read")
	}
}
