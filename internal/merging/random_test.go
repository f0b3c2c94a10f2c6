package merging_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/shale-db/shale/internal/ikey"
	"github.com/shale-db/shale/internal/iterator"
	"github.com/shale-db/shale/internal/itertest"
	"github.com/shale-db/shale/internal/merging"
)

// randomSources splits random entries among n sorted sources. With dups,
// some internal keys appear in several sources (with different values).
// It returns the sources and the merged model: entries ordered by key,
// then by source index.
func randomSources(rng *rand.Rand, n int, dups bool) ([][]itertest.KV, []itertest.KV) {
	return randomSourcesOf(rng, n, dups, func(r *rand.Rand) []byte { return itertest.InternalKey(r, 20) })
}

// randomSourcesOf is randomSources over the internal keys that key draws.
func randomSourcesOf(rng *rand.Rand, n int, dups bool, key func(*rand.Rand) []byte) ([][]itertest.KV, []itertest.KV) {
	srcs := make([][]itertest.KV, n)
	if n == 0 {
		return srcs, nil
	}
	seen := map[string]bool{}
	for i, total := 0, rng.IntN(80); i < total; i++ {
		k := key(rng)
		if seen[string(k)] && !dups {
			continue
		}
		seen[string(k)] = true
		s := rng.IntN(n)
		if slices.ContainsFunc(srcs[s], func(kv itertest.KV) bool { return ikey.Compare(kv.Key, k) == 0 }) {
			continue
		}
		srcs[s] = append(srcs[s], itertest.KV{Key: k, Value: fmt.Appendf(nil, "v%d.%d", s, i)})
	}
	var want []itertest.KV
	for _, src := range srcs {
		slices.SortFunc(src, func(a, b itertest.KV) int { return ikey.Compare(a.Key, b.Key) })
		want = append(want, src...)
	}
	slices.SortStableFunc(want, func(a, b itertest.KV) int { return ikey.Compare(a.Key, b.Key) })
	return srcs, want
}

func TestMergeRandom(t *testing.T) {
	// Seeks reach sequence numbers above every entry's.
	mergeRandom(t, func(r *rand.Rand) []byte { return itertest.InternalKey(r, 20) },
		func(r *rand.Rand) []byte { return itertest.InternalKey(r, 22) })
}

// TestMergeRandomLongKeys is TestMergeRandom over user keys around the 16
// bytes that the heap compares as two integers before it compares keys:
// keys that share those 16 bytes and differ after them, keys shorter than
// 16 bytes that end in zero bytes (which the integers pad with), and
// bytes at both ends of the range.
func TestMergeRandomLongKeys(t *testing.T) {
	key := func(maxSeq uint64) func(*rand.Rand) []byte {
		return func(r *rand.Rand) []byte {
			k := []byte("0123456789abcdef0")[:r.IntN(18)]
			k = append([]byte(nil), k...)
			for range r.IntN(3) {
				k = append(k, []byte{0, 1, 0xff}[r.IntN(3)])
			}
			return ikey.Make(k, r.Uint64N(maxSeq), ikey.Kind(r.IntN(2)))
		}
	}
	mergeRandom(t, key(6), key(8))
}

// mergeRandom checks merged random sources of the internal keys that key
// draws against their model, positioned with seeks to keys that seekKey
// draws.
func mergeRandom(t *testing.T, key, seekKey func(*rand.Rand) []byte) {
	rng := itertest.Rand(t)
	boom := errors.New("boom")
	cfg := itertest.Config{
		Cmp:       ikey.Compare,
		SeekKey:   seekKey,
		FormatKey: ikey.String,
		Ops:       200,
	}
	for trial := range itertest.Scale(400, 40000) {
		srcs, want := randomSourcesOf(rng, rng.IntN(7), trial%4 == 0, key)
		kids := make([]*itertest.Iter, len(srcs))
		iters := make([]iterator.Iterator, len(srcs))
		for i, kvs := range srcs {
			kids[i] = itertest.New(kvs).Strict()
			iters[i] = kids[i]
		}
		inject := len(kids) > 0 && rng.IntN(5) == 0
		if inject {
			kids[rng.IntN(len(kids))].FailAfter(rng.IntN(100), boom)
		}
		m := merging.New(iters...)
		err := itertest.Run(rng, m, want, cfg)
		if err != nil && !(inject && errors.Is(err, boom)) {
			t.Fatalf("trial %d: %v\nsources: %s", trial, err, formatSources(srcs))
		}
		if cerr := m.Close(); (cerr != nil) != (err != nil) {
			t.Fatalf("trial %d: Close = %v after run error %v", trial, cerr, err)
		}
		for i, k := range kids {
			if k.Violation() != nil || k.Closes() != 1 {
				t.Fatalf("trial %d: source %d: violation %v, closed %d times", trial, i, k.Violation(), k.Closes())
			}
		}
	}
}

func formatSources(srcs [][]itertest.KV) string {
	s := ""
	for i, src := range srcs {
		s += fmt.Sprintf("\n  %d: %s", i, itertest.Format(src))
	}
	return s
}
