package interop

import (
	"fmt"
	"testing"

	"github.com/shale-db/shale"
	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/opt"
)

// A shale directory whose writes were carried forward from Open to Open in
// the WAL (one-shot writers: no table yet) opens in goleveldb, which
// refuses WAL records below the MANIFEST's last sequence, and holds every
// write, also after a table was written in between.
func TestCarriedWALOpensInGoleveldb(t *testing.T) {
	dir := t.TempDir()
	var want []kv
	put := func(i int) {
		db, err := shale.Open(dir, nil)
		if err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
		k, v := fmt.Sprintf("key%03d", i), fmt.Sprintf("value%d", i)
		if err := db.Put([]byte(k), []byte(v), shale.NoSync); err != nil {
			t.Fatal(err)
		}
		if i == 10 {
			if err := db.Flush(); err != nil { // a table below the carried records
				t.Fatal(err)
			}
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		want = append(want, kv{k, v})
	}
	for i := range 20 {
		put(i)
	}
	gdb, err := leveldb.OpenFile(dir, &opt.Options{ErrorIfMissing: true})
	if err != nil {
		t.Fatalf("goleveldb cannot open a directory with carried WAL records: %v", err)
	}
	sameScan(t, "goleveldb reading carried records", scanGoleveldb(t, gdb), want)
	if err := gdb.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := shale.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	sameScan(t, "shale after goleveldb", scanShale(t, db), want)
}
