package kv

import (
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// Opening an existing bbolt database must not commit a write transaction
// (and so fsync): the recovery workload times Open, and no other store's
// Open is charged a commit.
func TestBboltReopenCommitsNothing(t *testing.T) {
	dir := t.TempDir()
	txid := func() int {
		db, err := bolt.Open(filepath.Join(dir, "bolt.db"), 0o600, &bolt.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var id int
		db.View(func(tx *bolt.Tx) error { id = tx.ID(); return nil })
		return id
	}
	s := mustOpen(t, "bbolt", dir, Config{})
	if err := s.Put([]byte("k"), []byte("v"), true); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	before := txid()
	s = mustOpen(t, "bbolt", dir, Config{})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if after := txid(); after != before {
		t.Fatalf("open+close of an existing bbolt DB committed %d write transaction(s) (txid %d -> %d)", after-before, before, after)
	}
}
