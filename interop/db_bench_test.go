package interop

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/shale-db/shale"
	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/opt"
)

// Engine benchmarks of shale against goleveldb in the same run: 16-byte
// keys, 100-byte values, default options on both sides. Compare each pair
// as a ratio; the machines are shared and absolute times drift.

// kvStore is the part of each engine the benchmarks use.
type kvStore interface {
	put(k, v []byte, sync bool) error
	get(k []byte) error
	scan() (int, error)
	seekScan(k []byte, n int) error
	close() error
}

type shaleStore struct{ db *shale.DB }

func (s shaleStore) put(k, v []byte, sync bool) error {
	d := shale.NoSync
	if sync {
		d = shale.Sync
	}
	return s.db.Put(k, v, d)
}
func (s shaleStore) get(k []byte) error { _, err := s.db.Get(k); return err }
func (s shaleStore) scan() (int, error) {
	it := s.db.NewIterator(nil)
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	return n, it.Close()
}
func (s shaleStore) seekScan(k []byte, n int) error {
	it := s.db.NewIterator(nil)
	for ok := it.SeekGE(k); ok && n > 1; ok = it.Next() {
		n--
	}
	return it.Close()
}
func (s shaleStore) close() error { return s.db.Close() }

type goleveldbStore struct{ db *leveldb.DB }

var goleveldbSync = &opt.WriteOptions{Sync: true}

func (s goleveldbStore) put(k, v []byte, sync bool) error {
	if sync {
		return s.db.Put(k, v, goleveldbSync)
	}
	return s.db.Put(k, v, nil)
}
func (s goleveldbStore) get(k []byte) error { _, err := s.db.Get(k, nil); return err }
func (s goleveldbStore) scan() (int, error) {
	it := s.db.NewIterator(nil, nil)
	defer it.Release()
	n := 0
	for it.Next() {
		n++
	}
	return n, it.Error()
}
func (s goleveldbStore) seekScan(k []byte, n int) error {
	it := s.db.NewIterator(nil, nil)
	defer it.Release()
	for ok := it.Seek(k); ok && n > 1; ok = it.Next() {
		n--
	}
	return it.Error()
}
func (s goleveldbStore) close() error { return s.db.Close() }

var engines = []struct {
	name string
	open func(dir string) (kvStore, error)
}{
	{"shale", func(dir string) (kvStore, error) {
		db, err := shale.Open(dir, nil)
		return shaleStore{db}, err
	}},
	{"goleveldb", func(dir string) (kvStore, error) {
		db, err := leveldb.OpenFile(dir, nil)
		return goleveldbStore{db}, err
	}},
}

func openEngine(b *testing.B, i int, dir string) kvStore {
	s, err := engines[i].open(dir)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.close() })
	return s
}

func benchKey(k []byte, i uint64) []byte {
	binary.BigEndian.PutUint64(k[:8], i)
	binary.BigEndian.PutUint64(k[8:16], i*0x9e3779b97f4a7c15)
	return k[:16]
}

var benchVal = []byte("0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789")

func BenchmarkEnginePut(b *testing.B) {
	for _, order := range []string{"seq", "random"} {
		for i, e := range engines {
			b.Run(order+"/"+e.name, func(b *testing.B) {
				s := openEngine(b, i, b.TempDir())
				k, r := make([]byte, 16), rand.New(rand.NewPCG(1, 1))
				b.SetBytes(116)
				b.ResetTimer()
				for n := range b.N {
					x := uint64(n)
					if order == "random" {
						x = r.Uint64()
					}
					if err := s.put(benchKey(k, x), benchVal, false); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func BenchmarkEnginePutSync(b *testing.B) {
	for _, writers := range []int{1, 8} {
		for i, e := range engines {
			b.Run(fmt.Sprintf("writers=%d/%s", writers, e.name), func(b *testing.B) {
				s := openEngine(b, i, b.TempDir())
				var next atomic.Uint64
				var wg sync.WaitGroup
				b.ResetTimer()
				for range writers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						k := make([]byte, 16)
						for x := next.Add(1); x <= uint64(b.N); x = next.Add(1) {
							if err := s.put(benchKey(k, x), benchVal, true); err != nil {
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
}

// filled returns engine i's store holding n sequential keys, reopened so
// that reads go through tables.
func filled(b *testing.B, i, n int) kvStore {
	dir := b.TempDir()
	s := openEngine(b, i, dir)
	k := make([]byte, 16)
	for x := range n {
		if err := s.put(benchKey(k, uint64(x)), benchVal, false); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.close(); err != nil {
		b.Fatal(err)
	}
	return openEngine(b, i, dir)
}

const engineReadKeys = 1_000_000

func BenchmarkEngineGetRandom(b *testing.B) {
	for i, e := range engines {
		b.Run(e.name, func(b *testing.B) {
			s := filled(b, i, engineReadKeys)
			k, r := make([]byte, 16), rand.New(rand.NewPCG(2, 2))
			b.ResetTimer()
			for range b.N {
				if err := s.get(benchKey(k, uint64(r.IntN(engineReadKeys)))); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkEngineScan(b *testing.B) {
	const n = 300_000
	for i, e := range engines {
		b.Run(e.name, func(b *testing.B) {
			s := filled(b, i, n)
			b.SetBytes(n * 116)
			b.ResetTimer()
			for range b.N {
				if c, err := s.scan(); err != nil || c != n {
					b.Fatalf("scanned %d of %d: %v", c, n, err)
				}
			}
		})
	}
}

func BenchmarkEngineSeekScan10(b *testing.B) {
	const n = 300_000
	for i, e := range engines {
		b.Run(e.name, func(b *testing.B) {
			s := filled(b, i, n)
			k, r := make([]byte, 16), rand.New(rand.NewPCG(3, 3))
			b.ResetTimer()
			for range b.N {
				if err := s.seekScan(benchKey(k, uint64(r.IntN(n))), 10); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
