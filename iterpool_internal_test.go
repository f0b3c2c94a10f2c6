package shale

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

// An iterator's stack (dbiter, merging and level iterators, table
// iterators) goes back to a pool at Close for the next iterator to use. A
// closed Iterator must then stay closed whatever the next one does: its
// calls find nothing and report ErrClosed, a second Close changes nothing,
// and the iterator that took over its stack reads its own view.
func TestClosedIteratorLeavesItsStackAlone(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	key := func(i int) []byte { return []byte(fmt.Sprintf("k%05d", i)) }
	for i := 0; i < 5000; i++ {
		if err := db.Put(key(i), key(i), NoSync); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	for i := 5000; i < 5100; i++ { // some in the memtable too
		if err := db.Put(key(i), key(i), NoSync); err != nil {
			t.Fatal(err)
		}
	}
	old := db.NewIterator(nil)
	if !old.SeekGE(key(2500)) || !bytes.Equal(old.Key(), key(2500)) {
		t.Fatalf("SeekGE: %q, %v", old.Key(), old.Err())
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	snap := db.NewSnapshot()
	defer snap.Close()
	if err := db.Put(key(2501), []byte("new"), NoSync); err != nil {
		t.Fatal(err)
	}
	for round := 0; round < 20; round++ {
		it := snap.NewIterator(&IterOptions{LowerBound: key(2490), UpperBound: key(2510)})
		if old.First() || old.Next() || old.SeekGE(key(10)) || old.Key() != nil || old.Value() != nil {
			t.Fatal("a closed iterator moved")
		}
		if err := old.Err(); !errors.Is(err, ErrClosed) {
			t.Fatalf("closed iterator's Err = %v, want ErrClosed", err)
		}
		if err := old.Close(); err != nil {
			t.Fatalf("second Close = %v", err)
		}
		n := 0
		for ok := it.First(); ok; ok = it.Next() {
			if want := key(2490 + n); !bytes.Equal(it.Key(), want) || !bytes.Equal(it.Value(), want) {
				t.Fatalf("round %d: entry %d = %q=%q, want %q", round, n, it.Key(), it.Value(), want)
			}
			n++
		}
		if err := it.Close(); err != nil || n != 20 {
			t.Fatalf("round %d: %d entries, %v", round, n, err)
		}
	}
	if v, err := db.Get(key(2501)); err != nil || string(v) != "new" {
		t.Fatalf("Get = %q, %v", v, err)
	}
}

// Making an iterator, seeking it and reading a few entries from tables
// allocates the Iterator and little more: the stack and the table
// iterators come from pools (24 allocations, 2.3 KB, before).
func TestShortScanAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector drops pooled objects at random")
	}
	dir := t.TempDir()
	db, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i := 0; i < 20000; i++ {
		k := []byte(fmt.Sprintf("k%06d", i))
		if err := db.Put(k, k, NoSync); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	i := 0
	scan := func() {
		it := db.NewIterator(nil)
		ok := it.SeekGE([]byte(fmt.Appendf(nil, "k%06d", i%20*900)))
		for j := 0; ok && j < 10; j++ {
			ok = it.Next()
		}
		if !ok {
			t.Fatal(it.Err())
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		i++
	}
	for range 20 { // the blocks it reads into the cache
		scan()
	}
	// The Iterator, the table iterator's wrapper, the seek key.
	if allocs := testing.AllocsPerRun(200, scan); allocs > 3 {
		t.Fatalf("%.1f allocations for a new iterator, a seek and 10 steps", allocs)
	}
}
