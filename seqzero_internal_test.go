package shale

import (
	"testing"

	"github.com/shale-db/shale/internal/ikey"
)

// A compaction into the bottom keeps a put's sequence number only while a
// snapshot must tell it from a newer version: the snapshot reads the old
// value, the DB the new one, before and after; once the snapshot is gone,
// the surviving put is stored with sequence number 0 and still reads, and
// a later write of the key wins over it, before and after a reopen.
func TestBottomPutsLoseSequenceNumbers(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	put := func(v string) {
		t.Helper()
		if err := db.Put([]byte("k"), []byte(v), NoSync); err != nil {
			t.Fatal(err)
		}
	}
	get := func(what string, g func([]byte) ([]byte, error), want string) {
		t.Helper()
		if v, err := g([]byte("k")); err != nil || string(v) != want {
			t.Fatalf("%s: Get = %q, %v; want %q", what, v, err, want)
		}
	}
	// seqs returns the sequence numbers of k's versions in the tables.
	seqs := func() []uint64 {
		t.Helper()
		rs, err := db.acquire(nil)
		if err != nil {
			t.Fatal(err)
		}
		defer db.release(rs)
		var out []uint64
		for level := range rs.v.Levels {
			for _, f := range rs.v.Levels[level] {
				it, err := db.openTable(f)
				if err != nil {
					t.Fatal(err)
				}
				for ok := it.First(); ok; ok = it.Next() {
					if string(ikey.UserKey(it.Key())) == "k" {
						out = append(out, ikey.Seq(it.Key()))
					}
				}
				if err := it.Close(); err != nil {
					t.Fatal(err)
				}
			}
		}
		return out
	}
	put("v1")
	snap := db.NewSnapshot()
	put("v2")
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	get("the snapshot", snap.Get, "v1")
	get("the DB", db.Get, "v2")
	if s := seqs(); len(s) != 2 || s[0] == 0 || s[1] != 0 {
		t.Fatalf("with the snapshot open, k's versions have sequence numbers %v; want the newer kept and the older 0", s)
	}
	snap.Close()
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	if s := seqs(); len(s) != 1 || s[0] != 0 {
		t.Fatalf("k's versions have sequence numbers %v; want one, 0", s)
	}
	get("the DB after the snapshot closed", db.Get, "v2")
	put("v3")
	get("the DB after a newer put", db.Get, "v3")
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	get("the DB after a flush", db.Get, "v3")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if db, err = Open(dir, nil); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	get("the DB after a reopen", db.Get, "v3")
}
