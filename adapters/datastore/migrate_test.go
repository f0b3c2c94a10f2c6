package datastore_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	ds "github.com/ipfs/go-datastore"
	dsq "github.com/ipfs/go-datastore/query"
	leveldb "github.com/ipfs/go-ds-leveldb"
	"github.com/shale-db/shale/adapters/datastore"
)

// ipfsKeys returns keys laid out as kubo lays out its datastore: blocks
// under /blocks, pins, the DHT's provider records, the peerstore and a
// few single keys at the top.
func ipfsKeys(n int) []ds.Key {
	keys := []ds.Key{ds.NewKey("/local/filesroot"), ds.NewKey("/pins/index/cidRindex"), ds.NewKey("/version")}
	for i := range n {
		keys = append(keys,
			ds.NewKey(fmt.Sprintf("/blocks/CIQ%08XABCDEFGH", i)),
			ds.NewKey(fmt.Sprintf("/providers/CIQ%08X/peer%d", i, i%7)),
			ds.NewKey(fmt.Sprintf("/peers/addrs/12D3Koo%06d", i)))
	}
	return keys
}

// TestMigrateFromLevelDB: a directory written by go-ds-leveldb opens in
// datastore.New with every key present, takes writes, and (shale wrote
// no range deletion) opens in go-ds-leveldb again with those writes.
func TestMigrateFromLevelDB(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	keys := ipfsKeys(3000)

	// go-ds-leveldb writes it: small write buffers, so that most of it
	// is in tables at several levels and the rest in its log.
	ldb, err := leveldb.NewDatastore(dir, &leveldb.Options{WriteBuffer: 64 << 10, CompactionTableSize: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	b, err := ldb.Batch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i, k := range keys {
		if err := b.Put(ctx, k, value(i, 10+i%300)); err != nil {
			t.Fatal(err)
		}
		if i%500 == 499 {
			if err := b.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			if b, err = ldb.Batch(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := b.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	deleted := map[ds.Key]bool{}
	for i := 0; i < len(keys); i += 17 {
		if err := ldb.Delete(ctx, keys[i]); err != nil {
			t.Fatal(err)
		}
		deleted[keys[i]] = true
	}
	if err := ldb.Put(ctx, keys[1], []byte("rewritten")); err != nil { // a newer version, in the log
		t.Fatal(err)
	}
	if err := ldb.Close(); err != nil {
		t.Fatal(err)
	}
	tables, _ := filepath.Glob(filepath.Join(dir, "*.ldb"))
	if len(tables) < 2 {
		t.Fatalf("go-ds-leveldb wrote %d tables; the test wants several", len(tables))
	}
	want := func(i int) []byte {
		if i == 1 {
			return []byte("rewritten")
		}
		return value(i, 10+i%300)
	}

	d, err := datastore.New(dir, nil)
	if err != nil {
		t.Fatalf("open go-ds-leveldb's directory: %v", err)
	}
	for i, k := range keys {
		got, err := d.Get(ctx, k)
		switch {
		case deleted[k]:
			if err != ds.ErrNotFound {
				t.Fatalf("get deleted %s: %q, %v", k, got, err)
			}
		case err != nil:
			t.Fatalf("get %s: %v", k, err)
		case !bytes.Equal(got, want(i)):
			t.Fatalf("get %s: %d bytes, not the value go-ds-leveldb wrote", k, len(got))
		}
	}
	live := len(keys) - len(deleted)
	if n := len(queryKeys(t, d, dsq.Query{KeysOnly: true})); n != live {
		t.Fatalf("query of everything: %d keys, want %d", n, live)
	}
	if n := len(queryKeys(t, d, dsq.Query{Prefix: "/blocks", KeysOnly: true})); n < 2800 || n > 3000 {
		t.Fatalf("query /blocks: %d keys", n)
	}
	if err := d.Check(ctx); err != nil {
		t.Fatal(err)
	}

	// Writes to it, through each path.
	mustPut(t, d, "/blocks/NEW", "new block")
	if err := d.Delete(ctx, keys[2]); err != nil {
		t.Fatal(err)
	}
	tx := newTxn(t, d, false)
	mustPut(t, tx, "/local/filesroot", "new root")
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := d.Sync(ctx, ds.NewKey("/")); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}

	// Both stores read the result.
	d, err = datastore.New(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkAfter := func(r ds.Read, name string) {
		t.Helper()
		if got := mustGet(t, r, "/blocks/NEW"); string(got) != "new block" {
			t.Fatalf("%s: /blocks/NEW = %q", name, got)
		}
		if got := mustGet(t, r, "/local/filesroot"); string(got) != "new root" {
			t.Fatalf("%s: /local/filesroot = %q", name, got)
		}
		mustBeAbsent(t, r, keys[2].String())
		if got := mustGet(t, r, keys[4].String()); !bytes.Equal(got, want(4)) {
			t.Fatalf("%s: %s changed", name, keys[4])
		}
	}
	checkAfter(d, "shale")
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	ldb, err = leveldb.NewDatastore(dir, nil)
	if err != nil {
		t.Fatalf("go-ds-leveldb reopens the directory: %v", err)
	}
	checkAfter(ldb, "go-ds-leveldb")
	if err := ldb.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "CURRENT")); err != nil {
		t.Fatal(err)
	}
}
