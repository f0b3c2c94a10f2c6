package geth

import (
	"testing"

	"github.com/ethereum/go-ethereum/ethdb"
	"github.com/ethereum/go-ethereum/ethdb/dbtest"
	"github.com/ethereum/go-ethereum/ethdb/leveldb"
	"github.com/ethereum/go-ethereum/ethdb/pebble"
)

// go-ethereum's own benchmark suite over shale's adapter and over
// go-ethereum's pebble and leveldb backends, with the same dataset. Each of
// its benchmarks does its whole dataset once, whatever b.N is: run them
// with -benchtime 1x, several times, the backends alternating (see the
// README).

func BenchmarkShale(b *testing.B) {
	dbtest.BenchDatabaseSuite(b, func() ethdb.KeyValueStore {
		db, err := New(b.TempDir(), nil)
		if err != nil {
			b.Fatal(err)
		}
		return db
	})
}

func BenchmarkPebble(b *testing.B) {
	dbtest.BenchDatabaseSuite(b, func() ethdb.KeyValueStore {
		db, err := pebble.New(b.TempDir(), 16, 16, "", false)
		if err != nil {
			b.Fatal(err)
		}
		return db
	})
}

func BenchmarkLevelDB(b *testing.B) {
	dbtest.BenchDatabaseSuite(b, func() ethdb.KeyValueStore {
		db, err := leveldb.New(b.TempDir(), 16, 16, "", false)
		if err != nil {
			b.Fatal(err)
		}
		return db
	})
}
