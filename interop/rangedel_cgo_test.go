//go:build leveldb_cgo

package interop

import (
	"fmt"
	"testing"

	"github.com/shale-db/shale"
	"github.com/shale-db/shale/interop/leveldbc"
)

// TestLevelDBRefusesRangeDeletions: LevelDB (C++) refuses, with an error,
// a directory whose WAL or tables hold a range deletion, with and without
// paranoid checks; it opens the directory once shale's compaction has
// dropped the deletion and started a MANIFEST without the mark, and reads
// the right keys.
func TestLevelDBRefusesRangeDeletions(t *testing.T) {
	for _, inTable := range []bool{false, true} {
		t.Run(fmt.Sprintf("inTable=%v", inTable), func(t *testing.T) {
			dir := rangeDelDir(t, inTable)
			for _, paranoid := range []bool{false, true} {
				ldb, err := leveldbc.Open(dir, leveldbc.Options{NoParanoidChecks: !paranoid})
				if err == nil {
					ldb.Close()
					t.Fatalf("LevelDB (paranoid %v) opened a directory holding a range deletion", paranoid)
				}
				t.Logf("LevelDB (paranoid %v): %v", paranoid, err)
			}
			db, err := shale.Open(dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := db.Compact(nil, nil); err != nil {
				t.Fatal(err)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			ldb := openLevelDB(t, dir, leveldbc.Options{})
			got := scanLevelDB(t, ldb)
			if len(got) != 1000 {
				t.Fatalf("LevelDB sees %d keys, want 1000", len(got))
			}
			for _, e := range got {
				if e.k >= "k0500" && e.k < "k1500" {
					t.Fatalf("LevelDB sees the deleted key %s", e.k)
				}
			}
		})
	}
}

// TestLevelDBRefusesCompressedWAL: LevelDB refuses a directory whose live
// WAL shale wrote with Options.WALCompression, and opens it once shale
// has reopened it without the option.
func TestLevelDBRefusesCompressedWAL(t *testing.T) {
	dir := t.TempDir()
	db, err := shale.Open(dir, &shale.Options{WALCompression: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 500 {
		if err := db.Put(fmt.Appendf(nil, "k%04d", i), []byte("vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv"), shale.NoSync); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	if ldb, err := leveldbc.Open(dir, leveldbc.Options{NoParanoidChecks: true}); err == nil {
		ldb.Close()
		t.Fatal("LevelDB opened a directory whose live WAL is compressed")
	}
	db, err = shale.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	ldb := openLevelDB(t, dir, leveldbc.Options{})
	if got := len(scanLevelDB(t, ldb)); got != 500 {
		t.Fatalf("LevelDB sees %d keys, want 500", got)
	}
}
