package dbiter_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/shale-db/shale/internal/dbiter"
	"github.com/shale-db/shale/internal/ikey"
	"github.com/shale-db/shale/internal/iterator"
	"github.com/shale-db/shale/internal/itertest"
	"github.com/shale-db/shale/internal/leveliter"
	"github.com/shale-db/shale/internal/merging"
)

// write is one put or delete of a random history; the i-th write has
// sequence number i+1.
type write struct {
	ukey  []byte
	value []byte // nil for a delete
}

func randomHistory(rng *rand.Rand) []write {
	h := make([]write, rng.IntN(80))
	for i := range h {
		h[i].ukey = itertest.UserKey(rng)
		if rng.IntN(4) != 0 {
			h[i].value = fmt.Appendf(nil, "v%d", i+1)
		}
	}
	return h
}

// visible is the model: replay the writes up to seq into a map, keep the
// live keys inside the bounds, sort.
func visible(h []write, seq uint64, lower, upper []byte) []itertest.KV {
	m := map[string][]byte{}
	for i, w := range h {
		if uint64(i+1) > seq {
			break
		}
		if w.value == nil {
			delete(m, string(w.ukey))
		} else {
			m[string(w.ukey)] = w.value
		}
	}
	var kvs []itertest.KV
	for k, v := range m {
		if (lower == nil || k >= string(lower)) && (upper == nil || k < string(upper)) {
			kvs = append(kvs, itertest.KV{Key: []byte(k), Value: v})
		}
	}
	slices.SortFunc(kvs, func(a, b itertest.KV) int { return bytes.Compare(a.Key, b.Key) })
	return kvs
}

// sources spreads the history's internal entries over 1 to 4 sources, one
// of which may be a level of several tables. With one source and no level,
// the source is the strict test iterator itself, so that dbiter's own use
// of the contract is checked.
func sources(rng *rand.Rand, h []write) (iterator.Iterator, []*itertest.Iter) {
	n := 1 + rng.IntN(4)
	parts := make([][]itertest.KV, n)
	for i, w := range h {
		kind := ikey.KindSet
		if w.value == nil {
			kind = ikey.KindDelete
		}
		p := rng.IntN(n)
		parts[p] = append(parts[p], itertest.KV{Key: ikey.Make(w.ukey, uint64(i+1), kind), Value: w.value})
	}
	var strict []*itertest.Iter
	iters := make([]iterator.Iterator, n)
	for i, p := range parts {
		slices.SortFunc(p, func(a, b itertest.KV) int { return ikey.Compare(a.Key, b.Key) })
		if i == 0 && n > 1 && rng.IntN(2) == 0 {
			iters[i] = level(rng, p)
			continue
		}
		s := itertest.New(p).Strict()
		strict = append(strict, s)
		iters[i] = s
	}
	if n == 1 {
		return iters[0], strict
	}
	return merging.New(iters...), strict
}

// level cuts kvs into tables of up to 5 entries.
func level(rng *rand.Rand, kvs []itertest.KV) iterator.Iterator {
	var files [][]itertest.KV
	for len(kvs) > 0 {
		n := 1 + rng.IntN(min(5, len(kvs)))
		files = append(files, kvs[:n])
		kvs = kvs[n:]
	}
	bounds := func(f []itertest.KV) ([]byte, []byte) { return f[0].Key, f[len(f)-1].Key }
	open := func(f []itertest.KV) (iterator.Iterator, error) { return itertest.New(f), nil }
	return leveliter.New(files, bounds, open)
}

func maybeKey(rng *rand.Rand) []byte {
	if rng.IntN(3) == 0 {
		return nil
	}
	return itertest.UserKey(rng)
}

func TestRandom(t *testing.T) {
	rng := itertest.Rand(t)
	boom := errors.New("boom")
	cfg := itertest.Config{
		Cmp:     bytes.Compare,
		SeekKey: itertest.UserKey,
		Ops:     200,
	}
	for trial := range itertest.Scale(500, 50000) {
		h := randomHistory(rng)
		seq := rng.Uint64N(uint64(len(h)) + 2)
		lower, upper := maybeKey(rng), maybeKey(rng)
		inner, strict := sources(rng, h)
		inject := len(strict) > 0 && rng.IntN(5) == 0
		if inject {
			strict[rng.IntN(len(strict))].FailAfter(rng.IntN(60), boom)
		}
		it := dbiter.New(inner, seq, lower, upper)
		err := itertest.Run(rng, it, visible(h, seq, lower, upper), cfg)
		if err != nil && !(inject && errors.Is(err, boom)) {
			t.Fatalf("trial %d: seq %d, bounds [%q, %q): %v\nhistory: %s", trial, seq, lower, upper, err, formatHistory(h))
		}
		if cerr := it.Close(); (cerr != nil) != (err != nil) {
			t.Fatalf("trial %d: Close = %v after run error %v", trial, cerr, err)
		}
		for _, s := range strict {
			if s.Violation() != nil || s.Closes() != 1 {
				t.Fatalf("trial %d: violation %v, closed %d times", trial, s.Violation(), s.Closes())
			}
		}
	}
}

func formatHistory(h []write) string {
	s := ""
	for i, w := range h {
		if w.value == nil {
			s += fmt.Sprintf(" %s#%d,DEL", w.ukey, i+1)
		} else {
			s += fmt.Sprintf(" %s#%d,PUT:%s", w.ukey, i+1, w.value)
		}
	}
	return s
}
