package shale_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/shale-db/shale"
)

func rdKey(i int) []byte { return fmt.Appendf(nil, "k%04d", i) }

// scanKeys returns the keys of a full scan, forward or backward.
func scanKeys(t *testing.T, db interface {
	NewIterator(*shale.IterOptions) *shale.Iterator
}, back bool) []string {
	t.Helper()
	it := db.NewIterator(nil)
	var out []string
	start, step := it.First, it.Next
	if back {
		start, step = it.Last, it.Prev
	}
	for ok := start(); ok; ok = step() {
		out = append(out, string(it.Key()))
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	return out
}

func wantKeys(keep func(i int) bool, n int, back bool) []string {
	var out []string
	for i := range n {
		if keep(i) {
			out = append(out, string(rdKey(i)))
		}
	}
	if back {
		for a, b := 0, len(out)-1; a < b; a, b = a+1, b-1 {
			out[a], out[b] = out[b], out[a]
		}
	}
	return out
}

// TestDeleteRange: a range deletion hides the keys in [start, end) from
// Get and from iterators both ways, in the memtable, after a flush, after
// compactions and after a reopen; a snapshot taken before it still sees
// them; a key put after it inside the range is there; open bounds work.
func TestDeleteRange(t *testing.T) {
	db, dir := openDB(t, &shale.Options{WriteBufferSize: 8 << 10})
	const n = 300
	for i := range n {
		if err := db.Put(rdKey(i), []byte("v"), shale.NoSync); err != nil {
			t.Fatal(err)
		}
	}
	snap := db.NewSnapshot()
	defer snap.Close()
	if err := db.DeleteRange(rdKey(50), rdKey(120), shale.Sync); err != nil {
		t.Fatal(err)
	}
	if err := db.Put(rdKey(60), []byte("again"), shale.NoSync); err != nil {
		t.Fatal(err)
	}
	var b shale.Batch
	b.DeleteRange(nil, rdKey(10)) // open start
	b.Put(rdKey(5), []byte("after, in the batch"))
	b.DeleteRange(rdKey(290), nil) // open end
	if err := db.Write(&b, shale.NoSync); err != nil {
		t.Fatal(err)
	}
	keep := func(i int) bool {
		return i == 60 || i == 5 || !(i < 10 || i >= 50 && i < 120 || i >= 290)
	}
	snapBefore := true
	check := func(stage string) {
		t.Helper()
		for _, back := range []bool{false, true} {
			if got, want := scanKeys(t, db, back), wantKeys(keep, n, back); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("%s: scan (backward %v):\n got %v\nwant %v", stage, back, got, want)
			}
		}
		for i := range n {
			_, err := db.Get(rdKey(i))
			if found := err == nil; found != keep(i) || err != nil && !errors.Is(err, shale.ErrNotFound) {
				t.Fatalf("%s: Get(%s): %v, want found=%v", stage, rdKey(i), err, keep(i))
			}
		}
		if got := len(scanKeys(t, snap, false)); snapBefore && got != n {
			t.Fatalf("%s: the snapshot taken before sees %d keys, want %d", stage, got, n)
		}
	}
	check("memtable")
	if !db.Metrics().Marked {
		t.Fatal("a directory with a range deletion is not marked")
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	check("flushed")
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	check("compacted")
	snap.Close()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = reopen(t, dir, &shale.Options{WriteBufferSize: 8 << 10})
	snap, snapBefore = db.NewSnapshot(), false
	check("reopened")
	snap.Close()
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	if db.Metrics().Marked {
		t.Fatalf("still marked after a full compaction with no snapshot:\n%s", db.Metrics())
	}
	if err := db.DeleteRange(rdKey(3), rdKey(3), shale.Sync); err != nil || db.Metrics().Marked {
		t.Fatalf("an empty range deletion: %v, marked %v", err, db.Metrics().Marked)
	}
}

// TestDeleteRangeReclaimsSpace: keys written and flushed, all deleted by
// one DeleteRange, then Compact(nil, nil): under 5% of the directory is
// left, and the mark is off.
func TestDeleteRangeReclaimsSpace(t *testing.T) {
	db, dir := openDB(t, nil)
	// Incompressible values, enough of them that the WAL's space reserved
	// ahead (a megabyte) is not what the 5% measures.
	const n = 400_000
	rng := rand.New(rand.NewPCG(1, 2))
	val := make([]byte, 100)
	for i := range n {
		for j := range val {
			val[j] = byte(rng.Uint32())
		}
		if err := db.Put(fmt.Appendf(nil, "key%08d", i), val, shale.NoSync); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	before := dirSize(t, dir)
	if err := db.DeleteRange(nil, nil, shale.Sync); err != nil {
		t.Fatal(err)
	}
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	after := dirSize(t, dir)
	if after*20 > before {
		st, _ := db.Stats()
		t.Fatalf("%d bytes before, %d after the range deletion and Compact: over 5%%\n%s\n%+v", before, after, db.Metrics(), st.Tables)
	}
	if m := db.Metrics(); m.Marked {
		st, _ := db.Stats()
		t.Fatalf("still marked:\n%s\n%+v", m, st.Tables)
	}
	t.Logf("%d keys: %d bytes, then %d (%.2f%%)", n, before, after, 100*float64(after)/float64(before))
}

// TestDeleteRangeReclaimsSpaceIdle: without a manual Compact, automatic
// compaction gives the space of a range deletion back within a minute of
// idleness, as it does for point deletions: under 5% of the directory is
// left, and the mark is off.
func TestDeleteRangeReclaimsSpaceIdle(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for idle compactions")
	}
	db, dir := openDB(t, nil)
	const n = 400_000
	rng := rand.New(rand.NewPCG(3, 4))
	val := make([]byte, 100)
	for i := range n {
		for j := range val {
			val[j] = byte(rng.Uint32())
		}
		if err := db.Put(fmt.Appendf(nil, "key%08d", i), val, shale.NoSync); err != nil {
			t.Fatal(err)
		}
	}
	before := dirSize(t, dir)
	if err := db.DeleteRange(nil, nil, shale.NoSync); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for {
		after := dirSize(t, dir)
		m := db.Metrics()
		if after*20 <= before && !m.Marked {
			t.Logf("%d bytes, then %d (%.2f%%) %v after the range deletion, unmarked", before, after,
				100*float64(after)/float64(before), time.Since(start).Round(100*time.Millisecond))
			return
		}
		if time.Since(start) > time.Minute {
			t.Fatalf("a minute after the range deletion: %d bytes of %d, marked %v\n%s", after, before, m.Marked, m)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
