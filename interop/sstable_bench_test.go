package interop

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/shale-db/shale/internal/cache"
	"github.com/shale-db/shale/internal/ikey"
	"github.com/shale-db/shale/sstable"
	lcache "github.com/syndtr/goleveldb/leveldb/cache"
	"github.com/syndtr/goleveldb/leveldb/storage"
	"github.com/syndtr/goleveldb/leveldb/table"
)

// The table benchmarks run shale's sstable package and goleveldb's table
// package on the same entries with the same settings (4 KiB blocks,
// restart interval 16, snappy, 10-bit bloom filter over user keys,
// checksums verified), so their ratios compare the implementations.

const sstBenchN = 100_000

// sstCPU starts measuring the process's CPU time; the returned function
// reports it per operation ("cpu-ns/op") and, if bytes > 0, as throughput
// per CPU second ("cpu-MB/s"). On a loaded machine these are steadier than
// wall-clock figures.
func sstCPU(b *testing.B, bytes int64) func() {
	start, ok := sstProcessCPU()
	return func() {
		end, _ := sstProcessCPU()
		if !ok || b.N == 0 || end <= start {
			return
		}
		cpu := end - start
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
		if bytes > 0 {
			b.ReportMetric(float64(bytes)*float64(b.N)/cpu.Seconds()/1e6, "cpu-MB/s")
		}
	}
}

// sstBenchSet is the benchmarks' data, built once.
type sstBenchSet struct {
	once      sync.Once
	entries   []sstEntry
	rawBytes  int64 // sum of key and value lengths
	shale     []byte
	goleveldb []byte
}

var sstBench sstBenchSet

// sstBenchData returns 100,000 entries (23-byte internal keys, 100-byte
// values: half random, half repetitive) and the table each library wrote.
func sstBenchData(b *testing.B) *sstBenchSet {
	sstBench.once.Do(func() {
		rng := rand.New(rand.NewPCG(7, 7))
		for i := 0; i < sstBenchN; i++ {
			val := make([]byte, 100)
			for j := 0; j < 50; j++ {
				val[j] = byte(rng.Uint32())
			}
			copy(val[50:], bytes.Repeat([]byte{byte(i)}, 50))
			k := ikey.Make([]byte(fmt.Sprintf("key%012d", i)), uint64(i+1), ikey.KindSet)
			sstBench.entries = append(sstBench.entries, sstEntry{k, val})
			sstBench.rawBytes += int64(len(k) + len(val))
		}
		sstBench.shale = sstWriteShale(b, sstBench.entries)
		sstBench.goleveldb = sstWriteGoleveldb(b, sstBench.entries, sstGoleveldbOptions("leveldb.BuiltinBloomFilter2"))
	})
	return &sstBench
}

func BenchmarkSSTWrite(b *testing.B) {
	d := sstBenchData(b)
	var buf bytes.Buffer
	b.Run("shale", func(b *testing.B) {
		b.SetBytes(d.rawBytes)
		defer sstCPU(b, d.rawBytes)()
		for i := 0; i < b.N; i++ {
			buf.Reset()
			w := sstable.NewWriter(&buf, sstable.WriterOptions{})
			for _, e := range d.entries {
				if err := w.Add(e.key, e.val); err != nil {
					b.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("goleveldb", func(b *testing.B) {
		b.SetBytes(d.rawBytes)
		defer sstCPU(b, d.rawBytes)()
		o := sstGoleveldbOptions("leveldb.BuiltinBloomFilter2")
		for i := 0; i < b.N; i++ {
			buf.Reset()
			w := table.NewWriter(&buf, o, nil, 0)
			for _, e := range d.entries {
				if err := w.Append(e.key, e.val); err != nil {
					b.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// sstReaders opens both tables, with a block cache big enough for either
// table (cached) or none.
func sstReaders(b *testing.B, cached bool) (*sstable.Reader, *table.Reader) {
	d := sstBenchData(b)
	so := sstable.ReaderOptions{FileNum: 1}
	var ns *lcache.NamespaceGetter
	if cached {
		so.Cache = cache.New(64 << 20)
		ns = &lcache.NamespaceGetter{Cache: lcache.NewCache(lcache.NewLRU(64 << 20)), NS: 1}
	}
	sr, err := sstable.Open(bytes.NewReader(d.shale), int64(len(d.shale)), so)
	if err != nil {
		b.Fatal(err)
	}
	gr, err := table.NewReader(bytes.NewReader(d.goleveldb), int64(len(d.goleveldb)),
		storage.FileDesc{Type: storage.TypeTable, Num: 1}, ns, nil, sstGoleveldbOptions("leveldb.BuiltinBloomFilter2"))
	if err != nil {
		b.Fatal(err)
	}
	return sr, gr
}

func BenchmarkSSTGet(b *testing.B) {
	for _, cached := range []bool{false, true} {
		for _, absent := range []bool{false, true} {
			name := fmt.Sprintf("cache=%v/absent=%v", cached, absent)
			sr, gr := sstReaders(b, cached)
			key := func(i int) []byte {
				n := (i * 7919) % sstBenchN
				if absent {
					return []byte(fmt.Sprintf("key%012d!", n))
				}
				return []byte(fmt.Sprintf("key%012d", n))
			}
			b.Run(name+"/shale", func(b *testing.B) {
				defer sstCPU(b, 0)()
				for i := 0; i < b.N; i++ {
					_, _, found, err := sr.Get(key(i), ikey.MaxSeq, nil)
					if err != nil || found == absent {
						b.Fatalf("found %v, err %v", found, err)
					}
				}
			})
			b.Run(name+"/goleveldb", func(b *testing.B) {
				defer sstCPU(b, 0)()
				for i := 0; i < b.N; i++ {
					rkey, _, err := gr.Find(ikey.SeekKey(key(i), ikey.MaxSeq), true, nil)
					found := err == nil && bytes.Equal(ikey.UserKey(rkey), key(i))
					if found == absent {
						b.Fatalf("found %v, err %v", found, err)
					}
				}
			})
		}
	}
}

func BenchmarkSSTSeek(b *testing.B) {
	sr, gr := sstReaders(b, true)
	key := func(i int) []byte {
		return ikey.SeekKey([]byte(fmt.Sprintf("key%012d", (i*7919)%sstBenchN)), ikey.MaxSeq)
	}
	b.Run("shale", func(b *testing.B) {
		defer sstCPU(b, 0)()
		it := sr.NewIter()
		defer it.Close()
		for i := 0; i < b.N; i++ {
			if !it.SeekGE(key(i)) {
				b.Fatal(it.Err())
			}
		}
	})
	b.Run("goleveldb", func(b *testing.B) {
		defer sstCPU(b, 0)()
		it := gr.NewIterator(nil, nil)
		defer it.Release()
		for i := 0; i < b.N; i++ {
			if !it.Seek(key(i)) {
				b.Fatal(it.Error())
			}
		}
	})
}

func BenchmarkSSTScan(b *testing.B) {
	d := sstBenchData(b)
	sr, gr := sstReaders(b, false)
	b.Run("shale", func(b *testing.B) {
		b.SetBytes(d.rawBytes)
		defer sstCPU(b, d.rawBytes)()
		for i := 0; i < b.N; i++ {
			it := sr.NewIter()
			n := 0
			for ok := it.First(); ok; ok = it.Next() {
				n++
			}
			if it.Close() != nil || n != sstBenchN {
				b.Fatalf("%d entries: %v", n, it.Err())
			}
		}
	})
	b.Run("goleveldb", func(b *testing.B) {
		b.SetBytes(d.rawBytes)
		defer sstCPU(b, d.rawBytes)()
		for i := 0; i < b.N; i++ {
			it := gr.NewIterator(nil, nil)
			n := 0
			for it.Next() {
				n++
			}
			if it.Error() != nil || n != sstBenchN {
				b.Fatalf("%d entries: %v", n, it.Error())
			}
			it.Release()
		}
	})
}
