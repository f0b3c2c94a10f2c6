package interop

import (
	"fmt"
	"strings"
	"testing"

	"github.com/shale-db/shale"
	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/opt"
)

// rangeDelDir leaves a shale directory holding keys k0000..k1999 and one
// range deletion of [k0500, k1500): only in the live WAL (inTable false),
// or flushed to a table. It returns the directory.
func rangeDelDir(t *testing.T, inTable bool) string {
	t.Helper()
	dir := t.TempDir()
	db, err := shale.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2000 {
		if err := db.Put(fmt.Appendf(nil, "k%04d", i), []byte("v"), shale.NoSync); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteRange([]byte("k0500"), []byte("k1500"), shale.Sync); err != nil {
		t.Fatal(err)
	}
	if inTable {
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if !db.Metrics().Marked {
		t.Fatal("not marked")
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestGoleveldbRefusesRangeDeletions: goleveldb refuses, with an error, a
// directory whose WAL or tables hold a range deletion (it would otherwise
// show the deleted keys again), both in its default recovery and strict;
// once shale's compaction has dropped the deletion the directory opens in
// goleveldb again with the right keys; a directory that never held one
// opens as always (TestShaleDirectoryOpensInGoleveldb).
func TestGoleveldbRefusesRangeDeletions(t *testing.T) {
	for _, inTable := range []bool{false, true} {
		t.Run(fmt.Sprintf("inTable=%v", inTable), func(t *testing.T) {
			dir := rangeDelDir(t, inTable)
			for _, strict := range []opt.Strict{opt.DefaultStrict, opt.StrictAll} {
				gdb, err := leveldb.OpenFile(dir, &opt.Options{ErrorIfMissing: true, Strict: strict})
				if err == nil {
					n := 0
					it := gdb.NewIterator(nil, nil)
					for it.Next() {
						n++
					}
					it.Release()
					gdb.Close()
					t.Fatalf("goleveldb (strict %v) opened a directory holding a range deletion and sees %d keys", strict, n)
				}
				if !strings.Contains(err.Error(), "corrupted") {
					t.Fatalf("goleveldb's refusal does not say the MANIFEST is not its own: %v", err)
				}
				t.Logf("goleveldb (strict %v): %v", strict, err)
			}
			// shale drops the deletion: the mark comes off.
			db, err := shale.Open(dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := db.Compact(nil, nil); err != nil {
				t.Fatal(err)
			}
			if db.Metrics().Marked {
				t.Fatal("still marked after the compaction that dropped the range deletion")
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			gdb, err := leveldb.OpenFile(dir, &opt.Options{ErrorIfMissing: true, Strict: opt.StrictAll})
			if err != nil {
				t.Fatalf("goleveldb refuses the directory once no range deletion is left: %v", err)
			}
			defer gdb.Close()
			n := 0
			it := gdb.NewIterator(nil, nil)
			for it.Next() {
				k := string(it.Key())
				if k >= "k0500" && k < "k1500" {
					t.Fatalf("goleveldb sees the deleted key %s", k)
				}
				n++
			}
			it.Release()
			if n != 1000 {
				t.Fatalf("goleveldb sees %d keys, want 1000", n)
			}
		})
	}
}

// TestGoleveldbRefusesCompressedWAL: a directory whose live WAL shale wrote
// with Options.WALCompression is refused by goleveldb; reopened once by
// shale without the option, it is goleveldb's again, with every key.
func TestGoleveldbRefusesCompressedWAL(t *testing.T) {
	dir := t.TempDir()
	db, err := shale.Open(dir, &shale.Options{WALCompression: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 500 {
		if err := db.Put(fmt.Appendf(nil, "k%04d", i), []byte(strings.Repeat("v", 50)), shale.NoSync); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if gdb, err := leveldb.OpenFile(dir, &opt.Options{ErrorIfMissing: true}); err == nil {
		gdb.Close()
		t.Fatal("goleveldb opened a directory whose live WAL is compressed")
	}
	db, err = shale.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	gdb, err := leveldb.OpenFile(dir, &opt.Options{ErrorIfMissing: true, Strict: opt.StrictAll})
	if err != nil {
		t.Fatalf("goleveldb refuses the directory once its WAL is plain: %v", err)
	}
	defer gdb.Close()
	n := 0
	it := gdb.NewIterator(nil, nil)
	for it.Next() {
		n++
	}
	it.Release()
	if n != 500 {
		t.Fatalf("goleveldb sees %d keys, want 500", n)
	}
}
