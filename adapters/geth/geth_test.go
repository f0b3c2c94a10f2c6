package geth

import (
	"testing"

	"github.com/ethereum/go-ethereum/ethdb"
	"github.com/ethereum/go-ethereum/ethdb/dbtest"
)

// TestDatabaseSuite runs go-ethereum's own ethdb test suite, as its
// authors wrote it, against the adapter.
func TestDatabaseSuite(t *testing.T) {
	dbtest.TestDatabaseSuite(t, func() ethdb.KeyValueStore {
		db, err := New(t.TempDir(), nil)
		if err != nil {
			t.Fatal(err)
		}
		return db
	})
}
