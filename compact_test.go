package shale_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shale-db/shale"
)

// tableFiles returns the names of the .ldb files in dir.
func tableFiles(t *testing.T, dir string) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.ldb"))
	if err != nil {
		t.Fatal(err)
	}
	return names
}

func TestCompactMergesLevelZero(t *testing.T) {
	opts := &shale.Options{WriteBufferSize: 16 << 10}
	db, dir := openDB(t, opts)
	r := rand.New(rand.NewPCG(4, 4))
	want := map[string]string{}
	for i := range 6000 {
		k := fmt.Sprintf("k%05d", r.IntN(3000))
		if r.IntN(5) == 0 {
			if err := db.Delete([]byte(k), shale.NoSync); err != nil {
				t.Fatal(err)
			}
			delete(want, k)
			continue
		}
		v := fmt.Sprintf("v%d", i)
		mustPut(t, db, k, v)
		want[k] = v
	}
	// A table of level 0 beside what the automatic compactions made of the
	// others. A flush can itself start a compaction that merges every table
	// so far into one, so flush again, a key at a time, until there are two:
	// the flush after such a compaction leaves one table in level 0 and one
	// below it, too few to start another.
	var before shale.Stats
	for i := 0; ; i++ {
		mustPut(t, db, fmt.Sprintf("extra%02d", i), "x")
		want[fmt.Sprintf("extra%02d", i)] = "x"
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
		before, _ = db.Stats()
		if len(before.Tables) >= 2 {
			break
		}
		if i == 20 {
			t.Fatalf("only %d tables before Compact after %d flushes", len(before.Tables), i+1)
		}
	}
	snap := db.NewSnapshot()
	snapState := scanPrefix(t, db, "")
	old := db.NewIterator(nil) // pins the tables it reads
	// Overwrite and delete after the snapshot: Compact must keep what the
	// snapshot sees.
	for i := range 500 {
		k := fmt.Sprintf("k%05d", i)
		if i%2 == 0 {
			mustPut(t, db, k, "new")
			want[k] = "new"
		} else {
			db.Delete([]byte(k), shale.NoSync)
			delete(want, k)
		}
	}
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	after, _ := db.Stats()
	if n := countLevel(after, 0); n != 0 {
		t.Fatalf("%d level-0 tables after Compact(nil, nil)", n)
	}
	if len(after.Tables) == 0 || len(after.Tables) >= len(before.Tables) {
		t.Fatalf("%d tables before, %d after", len(before.Tables), len(after.Tables))
	}
	if got := scanPrefix(t, db, ""); !mapsEqual(got, want) {
		t.Fatalf("after Compact: %d keys, want %d", len(got), len(want))
	}
	got := map[string]string{}
	for e, err := range snap.All(nil) {
		if err != nil {
			t.Fatal(err)
		}
		got[string(e.Key)] = string(e.Value)
	}
	if !mapsEqual(got, snapState) {
		t.Fatalf("the snapshot lost data to Compact: %d keys, want %d", len(got), len(snapState))
	}
	// The iterator from before still reads its (now obsolete) tables.
	n := 0
	for ok := old.First(); ok; ok = old.Next() {
		n++
	}
	if err := old.Close(); err != nil || n != len(snapState) {
		t.Fatalf("old iterator read %d keys (%v), want %d", n, err, len(snapState))
	}
	snap.Close()
	// Its tables go at the next cleanup, which a flush triggers.
	mustPut(t, db, "zz", "z")
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	st, _ := db.Stats()
	if files := tableFiles(t, dir); len(files) != len(st.Tables) {
		t.Fatalf("%d table files on disk, %d live: obsolete tables were not deleted", len(files), len(st.Tables))
	}
	db.Close()
	want["zz"] = "z"
	db = reopen(t, dir, opts)
	if got := scanPrefix(t, db, ""); !mapsEqual(got, want) {
		t.Fatalf("after reopen: %d keys, want %d", len(got), len(want))
	}
}

func countLevel(s shale.Stats, level int) int {
	n := 0
	for _, tb := range s.Tables {
		if tb.Level == level {
			n++
		}
	}
	return n
}

func TestCompactDropsDeletedData(t *testing.T) {
	db, dir := openDB(t, nil)
	for i := range 1000 {
		mustPut(t, db, fmt.Sprintf("k%04d", i), "value")
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		if err := db.Delete([]byte(fmt.Sprintf("k%04d", i)), shale.NoSync); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	if st, _ := db.Stats(); len(st.Tables) != 0 {
		t.Fatalf("%d tables remain after deleting every key and compacting", len(st.Tables))
	}
	if files := tableFiles(t, dir); len(files) != 0 {
		t.Fatalf("table files remain: %v", files)
	}
}

func TestCompactRangeAndErrors(t *testing.T) {
	db, dir := openDB(t, &shale.Options{WriteBufferSize: 8 << 10})
	for i := range 3000 {
		mustPut(t, db, fmt.Sprintf("k%04d", i%1000), fmt.Sprint(i))
	}
	if err := db.Compact([]byte("k0100"), []byte("k0200")); err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		wantGet(t, db, fmt.Sprintf("k%04d", i), []byte(fmt.Sprint(2000+i)))
	}
	if err := db.Compact([]byte("b"), []byte("b")); err != nil {
		t.Fatalf("an empty range: %v", err)
	}
	err := db.Compact([]byte("k0200"), []byte("k0100"))
	if err == nil || !strings.Contains(err.Error(), `"k0200"`) || !strings.Contains(err.Error(), `"k0100"`) {
		t.Fatalf("Compact with start after end: %v, want an error naming both keys", err)
	}
	db.Close()
	ro := reopen(t, dir, &shale.Options{ReadOnly: true})
	if err := ro.Compact(nil, nil); err == nil {
		t.Fatal("Compact on a read-only DB succeeded")
	}
	ro.Close()
	if err := db.Compact(nil, nil); err == nil {
		t.Fatal("Compact after Close succeeded")
	}
	_ = os.Remove
}
