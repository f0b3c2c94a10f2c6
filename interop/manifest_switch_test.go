package interop

import (
	"fmt"
	"testing"

	"github.com/shale-db/shale"
	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/opt"
)

// A shale database that switched to a new MANIFEST many times while open
// (Options.MaxManifestFileSize) opens in goleveldb with every write, and
// shale reopens it after goleveldb wrote to it.
func TestSwitchedManifestOpensInGoleveldb(t *testing.T) {
	dir := t.TempDir()
	db, err := shale.Open(dir, &shale.Options{MaxManifestFileSize: 1, WriteBufferSize: 8 << 10, TargetFileSize: 8 << 10})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for i := range 3000 {
		k, v := fmt.Sprintf("key%05d", i*7919%3000), fmt.Sprintf("value%d", i)
		if err := db.Put([]byte(k), []byte(v), shale.NoSync); err != nil {
			t.Fatal(err)
		}
		want[k] = v
	}
	switches := db.Metrics().ManifestSwitches
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if switches < 5 {
		t.Fatalf("%d MANIFEST switches; the test needs several", switches)
	}
	gdb, err := leveldb.OpenFile(dir, &opt.Options{ErrorIfMissing: true})
	if err != nil {
		t.Fatalf("goleveldb cannot open a directory after %d MANIFEST switches: %v", switches, err)
	}
	var got []kv
	it := gdb.NewIterator(nil, nil)
	for it.Next() {
		got = append(got, kv{string(it.Key()), string(it.Value())})
	}
	it.Release()
	if err := it.Error(); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("goleveldb reads %d keys, want %d", len(got), len(want))
	}
	for _, e := range got {
		if want[e.k] != e.v {
			t.Fatalf("goleveldb: %s = %q, want %q", e.k, e.v, want[e.k])
		}
	}
	if err := gdb.Put([]byte("from-goleveldb"), []byte("x"), nil); err != nil {
		t.Fatal(err)
	}
	if err := gdb.Close(); err != nil {
		t.Fatal(err)
	}
	sdb, err := shale.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sdb.Close()
	if v, err := sdb.Get([]byte("from-goleveldb")); err != nil || string(v) != "x" {
		t.Fatalf("shale after goleveldb: Get = %q, %v", v, err)
	}
	if v, err := sdb.Get([]byte("key00042")); err != nil || string(v) != want["key00042"] {
		t.Fatalf("shale after goleveldb: Get(key00042) = %q, %v", v, err)
	}
}
