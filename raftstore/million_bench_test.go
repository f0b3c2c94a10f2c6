package raftstore

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// A million entries of 100 bytes of data, stored once per process for
// BenchmarkMillionGetLogTail and BenchmarkMillionTruncated.
const (
	millionN    = 1_000_000
	millionKeep = 10_000
)

var million struct {
	once  sync.Once
	dir   string
	store *Store
	err   error
	fill  time.Duration
	// deleteRange is how long the DeleteRange of BenchmarkMillionTruncated
	// took (it runs once, whatever b.N).
	deleteRange time.Duration
	diskBefore  int64 // the directory's bytes just before the DeleteRange
}

func millionStore(b *testing.B) *Store {
	million.once.Do(func() {
		million.dir, million.err = os.MkdirTemp("", "raftstore-million-")
		if million.err != nil {
			return
		}
		if million.store, million.err = New(million.dir, nil); million.err != nil {
			return
		}
		start := time.Now()
		million.err = fillLog(million.store, millionN, 100)
		million.fill = time.Since(start)
	})
	if million.err != nil {
		b.Fatal(million.err)
	}
	return million.store
}

// fillLog appends entries 1..n with size bytes of data each, 1,000 per
// StoreLogs. The data is random, so that compression does not shrink it.
func fillLog(s *Store, n, size int) error {
	random := make([]byte, 1<<20)
	rand.NewChaCha8([32]byte{}).Read(random)
	logs := make([]*raft.Log, 1000)
	for i := 0; i < n; i += len(logs) {
		for j := range logs {
			off := ((i + j) * 7919) % (len(random) - size)
			logs[j] = &raft.Log{Index: uint64(i + j + 1), Term: 1, Data: random[off : off+size], AppendedAt: time.Now()}
		}
		if err := s.StoreLogs(logs); err != nil {
			return err
		}
	}
	return nil
}

// BenchmarkMillionGetLogTail reads entries among the last 10,000 of
// 1,000,000 (each op one GetLog, indexes spread over the range) and
// reports the p50 and p99 of their latencies.
func BenchmarkMillionGetLogTail(b *testing.B) {
	s := millionStore(b)
	timeTailReads(b, s)
	b.ReportMetric(million.fill.Seconds(), "fill-s")
}

// BenchmarkMillionTruncated deletes all but the last 10,000 of the million
// entries with one DeleteRange, waits RAFTSTORE_SETTLE (default 10s) for
// background work, and reports the directory's bytes beside the live
// entries' bytes. No manual Compact is called. b.N is ignored (so is
// the ns/op it prints).
func BenchmarkMillionTruncated(b *testing.B) {
	s := millionStore(b)
	first, _ := s.FirstIndex()
	if first == 1 {
		million.diskBefore = dirBytes(b, million.dir)
		t0 := time.Now()
		if err := s.DeleteRange(1, millionN-millionKeep); err != nil {
			b.Fatal(err)
		}
		million.deleteRange = time.Since(t0)
	}
	b.ReportMetric(million.deleteRange.Seconds(), "deleterange-s")
	settle := 10 * time.Second
	if d, err := time.ParseDuration(os.Getenv("RAFTSTORE_SETTLE")); err == nil {
		settle = d
	}
	time.Sleep(settle)
	var l raft.Log
	if err := s.GetLog(millionN, &l); err != nil {
		b.Fatal(err)
	}
	live := millionKeep * (logKeyLen + len(appendLog(nil, &l)))
	disk := dirBytes(b, million.dir)
	b.ReportMetric(float64(million.diskBefore), "disk-before-bytes")
	b.ReportMetric(float64(disk), "disk-bytes")
	b.ReportMetric(float64(live), "live-bytes")
	b.ReportMetric(float64(disk)/float64(live), "disk/live")
}

func dirBytes(b *testing.B, dir string) int64 {
	var n int64
	err := filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			n += fi.Size()
		}
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// TestMain removes the million-entry store that the benchmarks above may
// have created.
func TestMain(m *testing.M) {
	code := m.Run()
	if million.store != nil {
		million.store.Close()
	}
	if million.dir != "" {
		os.RemoveAll(million.dir)
	}
	os.Exit(code)
}

// BenchmarkMillionGetLogAfterTruncate runs after BenchmarkMillionTruncated
// (go test runs benchmarks in the order of the file): GetLog over the
// 10,000 entries left and FirstIndex, once the million were truncated by
// one range deletion, with their p50 and p99, to compare with
// BenchmarkMillionGetLogTail's before it.
func BenchmarkMillionGetLogAfterTruncate(b *testing.B) {
	s := millionStore(b)
	first, _ := s.FirstIndex()
	if first != millionN-millionKeep+1 {
		b.Skipf("first index %d: run BenchmarkMillionTruncated first (-bench Million)", first)
	}
	var l raft.Log
	// The entries left were just rewritten by the compaction that dropped
	// the deleted ones: one pass reads their new table into the block
	// cache, as the entries of BenchmarkMillionGetLogTail were, just
	// written, in memory.
	for i := uint64(millionN - millionKeep + 1); i <= millionN; i++ {
		if err := s.GetLog(i, &l); err != nil {
			b.Fatal(err)
		}
	}
	timeTailReads(b, s)
	t0 := time.Now()
	for range 1000 {
		if _, err := s.FirstIndex(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(time.Since(t0).Nanoseconds())/1000, "firstindex-ns")
}

// timeTailReads times b.N GetLogs of entries spread over the last
// millionKeep of the million, and reports their p50 and p99.
func timeTailReads(b *testing.B, s *Store) {
	lat := make([]time.Duration, b.N)
	var l raft.Log
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		idx := uint64(millionN - millionKeep + 1 + (i*7919)%millionKeep)
		t0 := time.Now()
		if err := s.GetLog(idx, &l); err != nil {
			b.Fatal(err)
		}
		lat[i] = time.Since(t0)
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
}
