package shale_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/shale-db/shale"
)

// benchKey writes the 16-byte key of i into k: sequential in i.
func benchKey(k []byte, i uint64) []byte {
	binary.BigEndian.PutUint64(k[:8], i)
	binary.BigEndian.PutUint64(k[8:16], i*0x9e3779b97f4a7c15)
	return k[:16]
}

func benchValue() []byte {
	v := make([]byte, 100)
	for i := range v {
		v[i] = byte(i*7 + 3)
	}
	return v
}

func BenchmarkPutSequential(b *testing.B) {
	db, _ := openDB(b, nil)
	k, v := make([]byte, 16), benchValue()
	b.SetBytes(116)
	b.ResetTimer()
	for i := range b.N {
		if err := db.Put(benchKey(k, uint64(i)), v, shale.NoSync); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPutRandom(b *testing.B) {
	db, _ := openDB(b, nil)
	k, v := make([]byte, 16), benchValue()
	r := rand.New(rand.NewPCG(1, 1))
	b.SetBytes(116)
	b.ResetTimer()
	for range b.N {
		if err := db.Put(benchKey(k, r.Uint64()), v, shale.NoSync); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPutSync measures Sync puts from 1 and 8 goroutines: group
// commit lets the 8 share fdatasync calls.
func BenchmarkPutSync(b *testing.B) {
	for _, writers := range []int{1, 8} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			db, _ := openDB(b, nil)
			var next atomic.Uint64
			var wg sync.WaitGroup
			b.SetBytes(116)
			b.ResetTimer()
			for range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					k, v := make([]byte, 16), benchValue()
					for {
						i := next.Add(1)
						if i > uint64(b.N) {
							return
						}
						if err := db.Put(benchKey(k, i), v, shale.Sync); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
		})
	}
}

// fillDB writes n sequential keys, closes and reopens the database, so
// that reads go through tables.
func fillDB(b *testing.B, n int) *shale.DB {
	db, dir := openDB(b, nil)
	k, v := make([]byte, 16), benchValue()
	var batch shale.Batch
	for i := range n {
		batch.Put(benchKey(k, uint64(i)), v)
		if batch.Len() == 1000 || i == n-1 {
			if err := db.Write(&batch, shale.NoSync); err != nil {
				b.Fatal(err)
			}
			batch.Reset()
		}
	}
	if err := db.Flush(); err != nil {
		b.Fatal(err)
	}
	db.Close()
	return reopen(b, dir, nil)
}

const benchReadKeys = 1_000_000

func BenchmarkGetRandom(b *testing.B) {
	db := fillDB(b, benchReadKeys)
	k := make([]byte, 16)
	r := rand.New(rand.NewPCG(2, 2))
	b.ResetTimer()
	for range b.N {
		if _, err := db.Get(benchKey(k, uint64(r.IntN(benchReadKeys)))); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkScanFull(b *testing.B) {
	const n = 200_000
	db := fillDB(b, n)
	b.SetBytes(n * 116)
	b.ResetTimer()
	for range b.N {
		it := db.NewIterator(nil)
		c := 0
		for ok := it.First(); ok; ok = it.Next() {
			c++
		}
		if err := it.Close(); err != nil || c != n {
			b.Fatalf("scanned %d of %d: %v", c, n, err)
		}
	}
}

func BenchmarkSeekAndScan10(b *testing.B) {
	const n = 200_000
	db := fillDB(b, n)
	it := db.NewIterator(nil)
	defer it.Close()
	k := make([]byte, 16)
	r := rand.New(rand.NewPCG(3, 3))
	b.ResetTimer()
	for range b.N {
		ok := it.SeekGE(benchKey(k, uint64(r.IntN(n-10))))
		for j := 0; ok && j < 9; j++ {
			ok = it.Next()
		}
		if !ok {
			b.Fatal(it.Err())
		}
	}
}

// BenchmarkNewIterSeek10 is db_bench's seekrandom: each operation makes a
// new iterator, seeks it to a random key, reads 10 entries and closes it,
// so that what making and closing an iterator costs counts.
func BenchmarkNewIterSeek10(b *testing.B) {
	const n = 200_000
	db := fillDB(b, n)
	if err := db.Compact(nil, nil); err != nil {
		b.Fatal(err)
	}
	k := make([]byte, 16)
	r := rand.New(rand.NewPCG(3, 3))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		it := db.NewIterator(nil)
		ok := it.SeekGE(benchKey(k, uint64(r.IntN(n-10))))
		for j := 0; ok && j < 9; j++ {
			ok = it.Next()
		}
		if !ok {
			b.Fatal(it.Err())
		}
		if err := it.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDeleteRangeReads: First, SeekGE into the range and Get of a
// deleted key, on a database whose first 200,000 keys (a truncated log)
// were deleted by one DeleteRange before any compaction ("deleted"), and
// on one that never held them ("absent"); the goal is that the
// first costs about what the second does. DeleteRangeCall times the call
// itself (NoSync): one small write however many keys it covers.
func BenchmarkDeleteRangeReads(b *testing.B) {
	const deleted, live = 200_000, 20_000
	key := func(i int) []byte { return fmt.Appendf(nil, "log/%016d", i) }
	val := make([]byte, 100)
	for _, mode := range []string{"deleted", "absent"} {
		db, _ := openDB(b, nil)
		from := 0
		if mode == "absent" {
			from = deleted
		}
		for i := from; i < deleted+live; i++ {
			if err := db.Put(key(i), val, shale.NoSync); err != nil {
				b.Fatal(err)
			}
		}
		if mode == "deleted" {
			if err := db.DeleteRange(key(0), key(deleted), shale.NoSync); err != nil {
				b.Fatal(err)
			}
		}
		first := string(key(deleted))
		b.Run(mode+"/First", func(b *testing.B) {
			for range b.N {
				it := db.NewIterator(nil)
				if !it.First() || string(it.Key()) != first {
					b.Fatalf("First at %q", it.Key())
				}
				it.Close()
			}
		})
		b.Run(mode+"/SeekGE", func(b *testing.B) {
			for i := range b.N {
				it := db.NewIterator(nil)
				if !it.SeekGE(key(i*7919%deleted)) || string(it.Key()) != first {
					b.Fatalf("SeekGE at %q", it.Key())
				}
				it.Close()
			}
		})
		b.Run(mode+"/Get", func(b *testing.B) {
			for i := range b.N {
				if _, err := db.Get(key(i * 7919 % deleted)); !errors.Is(err, shale.ErrNotFound) {
					b.Fatalf("Get of a deleted key: %v", err)
				}
			}
		})
		if mode == "deleted" {
			b.Run("DeleteRangeCall", func(b *testing.B) {
				for range b.N {
					if err := db.DeleteRange(key(0), key(deleted), shale.NoSync); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		db.Close()
	}
}
