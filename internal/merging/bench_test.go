package merging_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/shale-db/shale/internal/ikey"
	"github.com/shale-db/shale/internal/iterator"
	"github.com/shale-db/shale/internal/itertest"
	"github.com/shale-db/shale/internal/merging"
)

const benchKeys = 1 << 16

// benchSources spreads benchKeys entries at random over n sorted sources.
func benchSources(n int) ([][]itertest.KV, [][]byte) { return benchSourcesSkewed(n, 0) }

// benchSourcesSkewed is benchSources with the last source, as an LSM's
// bottom level, taking share of the entries (0: an even spread).
func benchSourcesSkewed(n int, share float64) ([][]itertest.KV, [][]byte) {
	rng := rand.New(rand.NewPCG(1, 2))
	srcs := make([][]itertest.KV, n)
	keys := make([][]byte, benchKeys)
	for i := range keys {
		keys[i] = ikey.Make(fmt.Appendf(nil, "key%08d", i), uint64(i+1), ikey.KindSet)
		s := rng.IntN(n)
		if share > 0 {
			s = n - 1
			if rng.Float64() >= share {
				s = rng.IntN(n - 1)
			}
		}
		srcs[s] = append(srcs[s], itertest.KV{Key: keys[i], Value: []byte("0123456789abcdef")})
	}
	return srcs, keys
}

func newMerged(srcs [][]itertest.KV) iterator.Iterator {
	if len(srcs) == 1 {
		return itertest.New(srcs[0]) // the peer: one source, no merging
	}
	iters := make([]iterator.Iterator, len(srcs))
	for i, s := range srcs {
		iters[i] = itertest.New(s)
	}
	return merging.New(iters...)
}

// BenchmarkScan reports the cost per entry of a full forward scan; n=1 is
// the bare source, the peer the others are measured against.
func BenchmarkScan(b *testing.B) {
	for _, n := range []int{1, 4, 8} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			srcs, _ := benchSources(n)
			scanBench(b, srcs)
		})
	}
}

// BenchmarkScanBottomHeavy is BenchmarkScan over an LSM's shape: a bottom
// level with 80% of the entries under four newer sources, as a database
// just reopened is, with level 0 not yet compacted.
func BenchmarkScanBottomHeavy(b *testing.B) {
	srcs, _ := benchSourcesSkewed(5, 0.8)
	scanBench(b, srcs)
}

// BenchmarkScanAlone is BenchmarkScan over one source beside an empty one,
// as a settled database's scan with an empty memtable: the merge steps a
// source that is alone in its heap.
func BenchmarkScanAlone(b *testing.B) {
	srcs, _ := benchSources(1)
	scanBench(b, [][]itertest.KV{srcs[0], nil})
}

// scanBench times b.N forward steps over srcs merged, in full scans.
func scanBench(b *testing.B, srcs [][]itertest.KV) {
	it := newMerged(srcs)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N / benchKeys {
		for ok := it.First(); ok; ok = it.Next() {
		}
	}
	for ok, i := it.First(), 0; ok && i < b.N%benchKeys; ok, i = it.Next(), i+1 {
	}
}

// BenchmarkSeekScan reports the cost of one SeekGE to a random key
// followed by 10 Next calls.
func BenchmarkSeekScan(b *testing.B) {
	for _, n := range []int{1, 4, 8} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			srcs, keys := benchSources(n)
			it := newMerged(srcs)
			rng := rand.New(rand.NewPCG(3, 4))
			targets := make([][]byte, 1024)
			for i := range targets {
				targets[i] = keys[rng.IntN(len(keys))]
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				for ok, j := it.SeekGE(targets[i%len(targets)]), 0; ok && j < 10; ok, j = it.Next(), j+1 {
				}
			}
		})
	}
}

// BenchmarkDirectionChange reports one Prev and one Next at a random place.
func BenchmarkDirectionChange(b *testing.B) {
	srcs, keys := benchSources(8)
	it := newMerged(srcs)
	it.SeekGE(keys[len(keys)/2])
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		it.Prev()
		it.Next()
	}
}

func TestNoAllocs(t *testing.T) {
	srcs, keys := benchSources(8)
	it := newMerged(srcs)
	it.First()
	if n := testing.AllocsPerRun(1000, func() {
		if !it.Next() {
			it.First()
		}
	}); n != 0 {
		t.Errorf("Next: %v allocations", n)
	}
	if n := testing.AllocsPerRun(100, func() { it.SeekGE(keys[7]); it.Prev(); it.Next() }); n != 0 {
		t.Errorf("SeekGE, Prev, Next: %v allocations", n)
	}
}
