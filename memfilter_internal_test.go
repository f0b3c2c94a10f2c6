package shale

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

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

// TestLazyFilterToLevelZero checks the engine's use of memtable.NewLazy:
// the memtable that took a load's writes, read often afterwards, builds a
// filter of its keys while writes go on; every key is found through it,
// and once the memtable is flushed, its level-0 table keeps the filter and
// every key is still found.
func TestLazyFilterToLevelZero(t *testing.T) {
	db := reviewMustOpen(t, vfs.NewMem(), &Options{WriteBufferSize: 4 << 20})
	key := func(i int) []byte { return fmt.Appendf(nil, "key%07d", i*7919%100_000) }
	for i := range 20_000 {
		if err := db.Put(key(i), key(i), NoSync); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 5_000 {
		if _, err := db.Get(fmt.Appendf(nil, "absent%d", i)); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Get of an absent key: %v", err)
		}
		if err := db.Put(key(20_000+i), key(20_000+i), NoSync); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		db.mu.Lock()
		filtered := db.mu.mem.Filtered()
		db.mu.Unlock()
		if filtered {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the memtable 5,000 Gets read built no filter within 10 s")
		}
		time.Sleep(time.Millisecond)
	}
	check := func(where string) {
		t.Helper()
		for i := range 25_000 {
			if v, err := db.Get(key(i)); err != nil || !bytes.Equal(v, key(i)) {
				t.Fatalf("%s: Get(%s) = %q, %v", where, key(i), v, err)
			}
		}
	}
	check("memtable")
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	v := db.vs.Current()
	l0 := v.Levels[0]
	kept := len(l0) == 1 && l0[0].KeyFilter() != nil
	v.Unref()
	if !kept {
		t.Fatalf("level 0 holds %d tables; want one that keeps the memtable's filter", len(l0))
	}
	check("level 0")
}
