package dbiter_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/shale-db/shale/internal/dbiter"
	"github.com/shale-db/shale/internal/ikey"
	"github.com/shale-db/shale/internal/iterator"
	"github.com/shale-db/shale/internal/itertest"
	"github.com/shale-db/shale/internal/merging"
)

const benchKeys = 1 << 16

// benchInner merges 4 sources holding benchKeys user keys; every fourth
// key has an older version and every eighth is deleted by a newer entry.
func benchInner() (iterator.Iterator, [][]byte) {
	rng := rand.New(rand.NewPCG(1, 2))
	srcs := make([][]itertest.KV, 4)
	ukeys := make([][]byte, benchKeys)
	val := []byte("0123456789abcdef")
	seq := uint64(0)
	add := func(uk []byte, kind ikey.Kind) {
		seq++
		s := rng.IntN(len(srcs))
		srcs[s] = append(srcs[s], itertest.KV{Key: ikey.Make(uk, seq, kind), Value: val})
	}
	for i := range ukeys {
		ukeys[i] = fmt.Appendf(nil, "key%08d", i)
		add(ukeys[i], ikey.KindSet)
		if i%4 == 0 {
			add(ukeys[i], ikey.KindSet)
		}
		if i%8 == 0 {
			add(ukeys[i], ikey.KindDelete)
		}
	}
	iters := make([]iterator.Iterator, len(srcs))
	for i, s := range srcs {
		slices.SortFunc(s, func(a, b itertest.KV) int { return ikey.Compare(a.Key, b.Key) })
		iters[i] = itertest.New(s)
	}
	return merging.New(iters...), ukeys
}

// BenchmarkScan reports the cost per user key of full scans. The merged
// internal scan (more entries: versions and deletions) is the peer.
func BenchmarkScan(b *testing.B) {
	inner, _ := benchInner()
	it := dbiter.New(inner, ikey.MaxSeq, nil, nil)
	for _, bc := range []struct {
		name        string
		start, step func() bool
	}{
		{"internal", inner.First, inner.Next},
		{"forward", it.First, it.Next},
		{"reverse", it.Last, it.Prev},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for n := 0; n < b.N; {
				for ok := bc.start(); ok && n < b.N; ok = bc.step() {
					n++
				}
			}
		})
	}
}

// BenchmarkSeekScan reports one SeekGE to a random user key and 10 Next.
func BenchmarkSeekScan(b *testing.B) {
	inner, ukeys := benchInner()
	it := dbiter.New(inner, ikey.MaxSeq, nil, nil)
	rng := rand.New(rand.NewPCG(3, 4))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for ok, j := it.SeekGE(ukeys[rng.IntN(len(ukeys))]), 0; ok && j < 10; ok, j = it.Next(), j+1 {
		}
	}
}

func TestNoAllocs(t *testing.T) {
	inner, ukeys := benchInner()
	it := dbiter.New(inner, ikey.MaxSeq, nil, nil)
	it.Last()
	it.First()
	for _, step := range []func() bool{it.Next, it.Prev} {
		if n := testing.AllocsPerRun(1000, func() {
			if !step() {
				it.SeekGE(ukeys[len(ukeys)/2])
			}
		}); n != 0 {
			t.Errorf("%v allocations per step", n)
		}
	}
}
