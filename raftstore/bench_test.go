package raftstore_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	raftwal "github.com/hashicorp/raft-wal"
	raftbench "github.com/hashicorp/raft/bench"
	"github.com/shale-db/shale/raftstore"
)

// store is what the benchmarks need of a log and stable store.
type store interface {
	raft.LogStore
	raft.StableStore
	io.Closer
}

// peers opens each store under comparison in a fresh directory. All write
// with fsync (raft-boltdb and raft-wal by default).
var peers = []struct {
	name string
	open func(dir string) (store, error)
}{
	{"shale", func(dir string) (store, error) { return raftstore.New(dir, nil) }},
	{"boltdb", func(dir string) (store, error) { return raftboltdb.NewBoltStore(filepath.Join(dir, "raft.db")) }},
	{"wal", func(dir string) (store, error) { return raftwal.Open(dir) }},
}

func openPeer(b *testing.B, open func(string) (store, error)) store {
	b.Helper()
	s, err := open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// BenchmarkRaftBench runs hashicorp/raft's own benchmark functions
// (github.com/hashicorp/raft/bench) against each store. Its DeleteRange is
// left out: it stores entries with gaps in one StoreLogs call, which this
// store and raft-wal refuse by design; BenchmarkTruncatePrefix measures
// the deletion raft does instead. StoreLog is not run on raft-wal, which
// refuses its first entry (index 0; raft's indexes start at 1).
func BenchmarkRaftBench(b *testing.B) {
	funcs := []struct {
		name string
		log  func(*testing.B, raft.LogStore)
		kv   func(*testing.B, raft.StableStore)
		skip string // a peer it does not run on
	}{
		{"FirstIndex", raftbench.FirstIndex, nil, ""},
		{"LastIndex", raftbench.LastIndex, nil, ""},
		{"GetLog", raftbench.GetLog, nil, ""},
		{"StoreLog", raftbench.StoreLog, nil, "wal"},
		{"StoreLogs", raftbench.StoreLogs, nil, ""},
		{"Set", nil, raftbench.Set, ""},
		{"Get", nil, raftbench.Get, ""},
		{"SetUint64", nil, raftbench.SetUint64, ""},
		{"GetUint64", nil, raftbench.GetUint64, ""},
	}
	for _, f := range funcs {
		for _, p := range peers {
			if p.name == f.skip {
				continue
			}
			b.Run(f.name+"/"+p.name, func(b *testing.B) {
				s := openPeer(b, p.open)
				if f.log != nil {
					f.log(b, s)
				} else {
					f.kv(b, s)
				}
			})
		}
	}
}

// BenchmarkTruncatePrefix stores 1,000 entries per op and deletes the
// previous op's 1,000 from the front, as raft compacts its log.
func BenchmarkTruncatePrefix(b *testing.B) {
	for _, p := range peers {
		b.Run(p.name, func(b *testing.B) {
			s := openPeer(b, p.open)
			const n = 1000
			data := bytes.Repeat([]byte{'x'}, 100)
			logs := make([]*raft.Log, n)
			for i := range logs {
				logs[i] = &raft.Log{Data: data}
			}
			for i := 0; i <= b.N; i++ {
				b.StopTimer()
				for j, l := range logs {
					l.Index = uint64(i*n + j + 1)
				}
				if err := s.StoreLogs(logs); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if i > 0 {
					if err := s.DeleteRange(uint64((i-1)*n+1), uint64(i*n)); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// BenchmarkStoreLogs64x1K: StoreLogs of 64 entries of 1 KiB each, from one
// goroutine and from 8. The log must stay contiguous (for this store and
// raft-wal), so each of the 8 takes the next range of indexes and retries
// while the range before it is not yet accepted; raft-boltdb accepts any
// order and never retries. Reported as entries/s.
func BenchmarkStoreLogs64x1K(b *testing.B) {
	for _, goroutines := range []int{1, 8} {
		for _, p := range peers {
			b.Run(fmt.Sprintf("g%d/%s", goroutines, p.name), func(b *testing.B) {
				s := openPeer(b, p.open)
				benchStoreLogs(b, s, goroutines)
			})
		}
	}
}

func benchStoreLogs(b *testing.B, s store, goroutines int) {
	const batch = 64
	data := bytes.Repeat([]byte{'v'}, 1024)
	if err := s.StoreLogs([]*raft.Log{{Index: 1, Data: data}}); err != nil {
		b.Fatal(err)
	}
	var next, ops atomic.Int64
	next.Store(1)
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	b.ResetTimer()
	start := time.Now()
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			logs := make([]*raft.Log, batch)
			for ops.Add(1) <= int64(b.N) {
				first := uint64(next.Add(batch) - batch + 1)
				for i := range logs {
					logs[i] = &raft.Log{Index: first + uint64(i), Term: 1, Data: data}
				}
				if err := storeWhenInTurn(s, logs); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N*batch)/elapsed.Seconds(), "entries/s")
}

// storeWhenInTurn retries StoreLogs while it is refused for not following
// the last index (raftstore.ErrNonContiguous; raft-wal's "non-monotonic").
func storeWhenInTurn(s store, logs []*raft.Log) error {
	for {
		err := s.StoreLogs(logs)
		if err == nil || !(errors.Is(err, raftstore.ErrNonContiguous) || strings.Contains(err.Error(), "non-monotonic")) {
			return err
		}
		time.Sleep(10 * time.Microsecond)
	}
}
