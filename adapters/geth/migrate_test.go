package geth

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/ethereum/go-ethereum/ethdb/leveldb"
)

// TestMigrateFromLevelDBBackend: a database written by go-ethereum's own
// leveldb backend (goleveldb) is opened in place by the adapter, with every
// key, and written to; and, as no range deletion was written, the leveldb
// backend opens it again afterwards and reads shale's writes.
func TestMigrateFromLevelDBBackend(t *testing.T) {
	dir := t.TempDir()
	ldb, err := leveldb.New(dir, 16, 16, "", false)
	if err != nil {
		t.Fatal(err)
	}
	const n = 20_000
	key := func(i int) []byte { return fmt.Appendf(nil, "h%08d", i) }
	val := func(i int, tag string) []byte { return bytes.Repeat(fmt.Appendf(nil, "%s%d", tag, i), 4) }
	b := ldb.NewBatch()
	for i := range n {
		b.Put(key(i), val(i, "geth"))
		if b.ValueSize() > 64<<10 {
			if err := b.Write(); err != nil {
				t.Fatal(err)
			}
			b.Reset()
		}
	}
	if err := b.Write(); err != nil {
		t.Fatal(err)
	}
	if err := ldb.Delete(key(7)); err != nil {
		t.Fatal(err)
	}
	if err := ldb.Close(); err != nil {
		t.Fatal(err)
	}

	db, err := New(dir, nil)
	if err != nil {
		t.Fatalf("shale cannot open the leveldb backend's directory: %v", err)
	}
	for i := range n {
		v, err := db.Get(key(i))
		if i == 7 {
			if err == nil {
				t.Fatal("the key the leveldb backend deleted is there")
			}
			continue
		}
		if err != nil || !bytes.Equal(v, val(i, "geth")) {
			t.Fatalf("Get(%s) = %q, %v", key(i), v, err)
		}
	}
	it := db.NewIterator([]byte("h"), nil)
	count := 0
	for it.Next() {
		count++
	}
	it.Release()
	if err := it.Error(); err != nil || count != n-1 {
		t.Fatalf("iterated %d keys (%v), want %d", count, err, n-1)
	}
	for i := n; i < n+1000; i++ {
		if err := db.Put(key(i), val(i, "shale")); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	ldb, err = leveldb.New(dir, 16, 16, "", true)
	if err != nil {
		t.Fatalf("the leveldb backend cannot reopen the directory shale wrote: %v", err)
	}
	defer ldb.Close()
	for _, i := range []int{0, n - 1, n, n + 999} {
		tag := "geth"
		if i >= n {
			tag = "shale"
		}
		if v, err := ldb.Get(key(i)); err != nil || !bytes.Equal(v, val(i, tag)) {
			t.Fatalf("leveldb backend Get(%s) = %q, %v", key(i), v, err)
		}
	}
}
