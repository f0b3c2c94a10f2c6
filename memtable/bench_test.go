package memtable

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shale-db/shale/internal/batchrepr"
	"github.com/shale-db/shale/internal/ikey"
)

const (
	benchKeyLen   = 16
	benchValueLen = 100
	// benchEntries is about what a 4 MiB write buffer holds of 16-byte
	// keys and 100-byte values.
	benchEntries = 20_000
)

var benchValue = make([]byte, benchValueLen)

// benchKeys returns n 16-byte keys, ascending if sequential, else random.
func benchKeys(n int, sequential bool) [][]byte {
	rng := rand.New(rand.NewPCG(1, 2))
	keys := make([][]byte, n)
	for i := range keys {
		k := make([]byte, benchKeyLen)
		if sequential {
			binary.BigEndian.PutUint64(k[8:], uint64(i))
		} else {
			binary.BigEndian.PutUint64(k, rng.Uint64())
			binary.BigEndian.PutUint64(k[8:], rng.Uint64())
		}
		keys[i] = k
	}
	return keys
}

// cpuMeter reports process CPU time per op beside wall time. Benchmarks
// here are often run on a shared machine, where wall time swings with the
// load; CPU time (which includes the garbage collector's) barely does.
type cpuMeter struct {
	b     *testing.B
	start int64
}

func startCPU(b *testing.B) cpuMeter {
	b.ResetTimer()
	return cpuMeter{b, processCPU()}
}

// stop stops the timer and reports cpu-ns/op over n ops (b.N if n is 0).
func (c cpuMeter) stop(n int) {
	c.b.StopTimer()
	if n == 0 {
		n = c.b.N
	}
	if end := processCPU(); end > 0 {
		c.b.ReportMetric(float64(end-c.start)/float64(n), "cpu-ns/op")
	}
}

func benchMemtable(tb testing.TB, n int, sequential bool) *Memtable {
	m := New()
	for i, k := range benchKeys(n, sequential) {
		m.Add(uint64(i+1), ikey.KindSet, k, benchValue)
	}
	return m
}

// BenchmarkAdd adds entries to memtables of benchEntries entries (a fresh
// one each time one fills), with and without the arena.
func BenchmarkAdd(b *testing.B) {
	for _, order := range []struct {
		name string
		seq  bool
	}{{"sequential", true}, {"random", false}} {
		keys := benchKeys(benchEntries, order.seq)
		for _, chunk := range []struct {
			name   string
			size   int
			buffer int64 // NewSized's
		}{{"arena", arenaChunkSize, 0}, {"noarena", 0, 0}, {"filter", arenaChunkSize, 8 << 20}} {
			b.Run(order.name+"/"+chunk.name, func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(benchKeyLen + benchValueLen)
				var m *Memtable
				cpu := startCPU(b)
				for i := 0; i < b.N; i++ {
					j := i % benchEntries
					if j == 0 {
						m = NewSized(nil, chunk.buffer)
						m.arena.chunkSize = chunk.size
					}
					m.Add(uint64(i+1), ikey.KindSet, keys[j], benchValue)
				}
				cpu.stop(0)
			})
		}
	}
}

// BenchmarkGCWithMemtable times a full garbage collection while a
// memtable of 200,000 entries (about 24 MiB, a large write buffer) is
// live: the cost each GC cycle pays for the memtable, with and without the
// arena. ns/op is per collection.
func BenchmarkGCWithMemtable(b *testing.B) {
	keys := benchKeys(200_000, false)
	for _, chunk := range []struct {
		name string
		size int
	}{{"arena", arenaChunkSize}, {"noarena", 0}} {
		b.Run(chunk.name, func(b *testing.B) {
			m := New()
			m.arena.chunkSize = chunk.size
			for i, k := range keys {
				m.Add(uint64(i+1), ikey.KindSet, k, benchValue)
			}
			runtime.GC()
			cpu := startCPU(b)
			for i := 0; i < b.N; i++ {
				runtime.GC()
			}
			cpu.stop(0)
			runtime.KeepAlive(m)
		})
	}
}

// BenchmarkApply applies batches of 16 puts: ns/op is per entry.
func BenchmarkApply(b *testing.B) {
	const perBatch = 16
	keys := benchKeys(benchEntries, false)
	b.ReportAllocs()
	b.SetBytes(benchKeyLen + benchValueLen)
	var m *Memtable
	var repr []byte
	cpu := startCPU(b)
	for i := 0; i < b.N; i += perBatch {
		j := i % benchEntries
		if j == 0 {
			m = New()
		}
		repr = repr[:0]
		for k := 0; k < perBatch; k++ {
			repr = batchrepr.AppendPut(repr, keys[(j+k)%benchEntries], benchValue)
		}
		if err := m.Apply(repr, uint64(i+1)); err != nil {
			b.Fatal(err)
		}
	}
	cpu.stop(0)
}

func BenchmarkGet(b *testing.B) {
	keys := benchKeys(benchEntries, false)
	m := benchMemtable(b, benchEntries, false)
	b.ReportAllocs()
	cpu := startCPU(b)
	for i := 0; i < b.N; i++ {
		if _, found, _ := m.Get(keys[i%benchEntries], ikey.MaxSeq); !found {
			b.Fatal("not found")
		}
	}
	cpu.stop(0)
}

// BenchmarkIterFull scans a whole memtable; ns/op is per entry. The peer
// "callback" is the B-tree's own Ascend, the floor for any design.
func BenchmarkIterFull(b *testing.B) {
	m := benchMemtable(b, benchEntries, false)
	for _, design := range []string{"chunked", "callback"} {
		b.Run(design, func(b *testing.B) {
			b.ReportAllocs()
			cpu := startCPU(b)
			for n := 0; n < b.N; {
				n += scanAll(m, design, b.N-n)
			}
			cpu.stop(0)
		})
	}
}

// BenchmarkIterSeek is the merging iterator's pattern: SeekGE on an open
// iterator, then four Nexts. ns/op is per seek.
func BenchmarkIterSeek(b *testing.B) {
	m := benchMemtable(b, benchEntries, false)
	seeks := benchSeekKeys()
	b.Run("chunked", func(b *testing.B) {
		it := m.NewIter()
		defer it.Close()
		cpu := startCPU(b)
		for i := 0; i < b.N; i++ {
			for ok, n := it.SeekGE(seeks[i%benchEntries]), 0; ok && n < 4; ok, n = it.Next(), n+1 {
			}
		}
		cpu.stop(0)
	})
}

// BenchmarkNewIter opens an iterator, seeks, reads four entries and closes
// it: what a short range read costs the memtable.
func BenchmarkNewIter(b *testing.B) {
	m := benchMemtable(b, benchEntries, false)
	seeks := benchSeekKeys()
	b.ReportAllocs()
	cpu := startCPU(b)
	for i := 0; i < b.N; i++ {
		seekFew(m, seeks[i%benchEntries])
	}
	cpu.stop(0)
}

func benchSeekKeys() [][]byte {
	keys := benchKeys(benchEntries, false)
	for i, k := range keys {
		keys[i] = ikey.SeekKey(k, ikey.MaxSeq)
	}
	return keys
}

// BenchmarkIterWithWriter scans a memtable while another goroutine adds
// to it as fast as it can. ns/op is per entry scanned; adds/s is the
// writer's rate meanwhile.
func BenchmarkIterWithWriter(b *testing.B) {
	m := benchMemtable(b, benchEntries, false)
	stopWriter := startWriter(m)
	b.ResetTimer()
	for n := 0; n < b.N; {
		n += scanAll(m, "chunked", b.N-n)
	}
	b.StopTimer()
	b.ReportMetric(float64(stopWriter())/b.Elapsed().Seconds(), "adds/s")
}

// BenchmarkAddWhileIterating adds while another goroutine keeps opening
// iterators and reading a few entries from each. ns/op is per Add.
func BenchmarkAddWhileIterating(b *testing.B) {
	keys := benchKeys(benchEntries, false)
	seeks := benchSeekKeys()
	m := benchMemtable(b, benchEntries, false)
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; !stop.Load(); i++ {
			seekFew(m, seeks[i%benchEntries])
		}
	}()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m.Add(uint64(benchEntries+i+1), ikey.KindSet, keys[i%benchEntries], benchValue)
	}
	b.StopTimer()
	stop.Store(true)
	wg.Wait()
}

// startWriter adds random keys to m until the returned function is called;
// that function returns how many it added.
func startWriter(m *Memtable) func() int64 {
	var stop atomic.Bool
	var added atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		keys := benchKeys(benchEntries, false)
		for i := 0; !stop.Load(); i++ {
			m.Add(uint64(benchEntries+i+1), ikey.KindSet, keys[i%benchEntries], benchValue)
			added.Add(1)
		}
	}()
	return func() int64 { stop.Store(true); <-done; return added.Load() }
}

// scanAll scans up to limit entries from the start of m, with the index's
// own callback ("callback", the floor for any iterator) or an Iterator,
// and returns how many it saw.
func scanAll(m *Memtable, design string, limit int) int {
	n := 0
	if design == "callback" {
		m.mu.RLock()
		m.mu.idx.ascend(func(entry) bool { n++; return n < limit })
		m.mu.RUnlock()
		return n
	}
	it := m.NewIter()
	for ok := it.First(); ok && n < limit; ok = it.Next() {
		n++
	}
	it.Close()
	return n
}

func seekFew(m *Memtable, key []byte) {
	it := m.NewIter()
	for ok, n := it.SeekGE(key), 0; ok && n < 4; ok, n = it.Next(), n+1 {
	}
	it.Close()
}

// BenchmarkAddDescending adds keys in descending order, each below every
// key before it, to memtables of benchEntries entries.
func BenchmarkAddDescending(b *testing.B) {
	var k [benchKeyLen]byte
	m := New()
	b.ReportAllocs()
	cpu := startCPU(b)
	for i := 0; i < b.N; i++ {
		if i%benchEntries == 0 {
			m = New()
		}
		binary.BigEndian.PutUint64(k[8:], uint64(1<<40-i))
		m.Add(uint64(i+1), ikey.KindSet, k[:], benchValue)
	}
	cpu.stop(0)
}

// BenchmarkApplyLarge applies one batch of random 32-byte keys and 32-byte
// values (go-ethereum's benchmark's shape) to a memtable holding 50,000
// entries already, or none: ns/op is per entry.
func BenchmarkApplyLarge(b *testing.B) {
	for _, pre := range []int{0, 50_000} {
		for _, n := range []int{64, 256, 1000, 10_000, 100_000, 1_000_000} {
			for _, sorted := range []bool{false, true} {
				b.Run(fmt.Sprintf("pre=%d/n=%d/sorted=%v", pre, n, sorted), func(b *testing.B) {
					rng := rand.New(rand.NewPCG(7, 7))
					key := make([]byte, 32)
					var repr []byte
					for range n {
						binary.BigEndian.PutUint64(key, rng.Uint64())
						binary.BigEndian.PutUint64(key[8:], rng.Uint64())
						repr = batchrepr.AppendPut(repr, key, key)
					}
					old := sortApplyMin
					defer func() { sortApplyMin = old }()
					sortApplyMin = 1 << 30
					if sorted {
						sortApplyMin = 0
					}
					benchApply(b, repr, uint64(pre+1), n, func() *Memtable {
						m := New()
						for i := range pre {
							binary.BigEndian.PutUint64(key, rng.Uint64())
							m.Add(uint64(i+1), ikey.KindSet, key, key)
						}
						return m
					})
				})
			}
		}
	}
}

// BenchmarkApplyInOrder applies a batch whose keys ascend as it stands (a
// bulk load in key order: go-ethereum's BenchWriteSorted writes 1,000,000
// such puts of 32-byte keys and values in one batch) to an empty memtable
// in chunks outside the Go heap, as the engine's are.
func BenchmarkApplyInOrder(b *testing.B) {
	for _, n := range []int{10_000, 100_000, 1_000_000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			key := make([]byte, 32)
			var repr []byte
			for i := range n {
				binary.BigEndian.PutUint64(key[8:], uint64(i))
				repr = batchrepr.AppendPut(repr, key, key)
			}
			chunks := NewChunks(0)
			defer chunks.Close()
			benchApply(b, repr, 1, n, func() *Memtable { return NewIn(chunks) })
		})
	}
}

// benchApply times, b.N times, Apply of repr (n entries, from sequence
// number seq) to a memtable from mk, made and released untimed, and
// reports the time an entry.
func benchApply(b *testing.B, repr []byte, seq uint64, n int, mk func() *Memtable) {
	var ns time.Duration
	for range b.N {
		b.StopTimer()
		m := mk()
		b.StartTimer()
		t0 := time.Now()
		if err := m.Apply(repr, seq); err != nil {
			b.Fatal(err)
		}
		ns += time.Since(t0)
		b.StopTimer()
		m.Unref()
		b.StartTimer()
	}
	b.ReportMetric(float64(ns.Nanoseconds())/float64(b.N*n), "ns/entry")
}
