package sstable

import (
	"bytes"
	"fmt"
	"math/rand"
	"sort"
	"testing"

	"github.com/shale-db/shale/internal/ikey"
	"github.com/shale-db/shale/internal/iterator"
)

// kv is one entry of a model: an internal key and its value.
type kv struct{ key, val []byte }

// randomEntries returns n entries with distinct internal keys in order:
// random user keys (some empty, some sharing long prefixes), one to three
// versions each, values of random length (some empty, some over maxVal/2).
func randomEntries(rng *rand.Rand, n, maxVal int) []kv {
	users := map[string]bool{}
	for len(users) < n {
		var u []byte
		switch rng.Intn(4) {
		case 0:
			u = []byte(fmt.Sprintf("key%06d", rng.Intn(1000000)))
		case 1:
			u = []byte(fmt.Sprintf("shared/prefix/long/%d", rng.Intn(1000000)))
		default:
			u = make([]byte, rng.Intn(24))
			rng.Read(u)
		}
		users[string(u)] = true
	}
	var out []kv
	for u := range users {
		seq := uint64(rng.Intn(1000) + 10)
		for v := rng.Intn(3); v >= 0 && len(out) < n; v-- {
			kind := ikey.KindSet
			if rng.Intn(8) == 0 {
				kind = ikey.KindDelete
			}
			val := make([]byte, rng.Intn(maxVal/2+1))
			if rng.Intn(50) == 0 {
				val = make([]byte, maxVal)
			}
			rng.Read(val)
			out = append(out, kv{ikey.Make([]byte(u), seq, kind), val})
			seq -= uint64(rng.Intn(5) + 1)
		}
	}
	sort.Slice(out, func(i, j int) bool { return ikey.Compare(out[i].key, out[j].key) < 0 })
	return out
}

// writeTable writes entries with opts and returns the file's bytes.
func writeTable(t testing.TB, entries []kv, opts WriterOptions) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := NewWriter(&buf, opts)
	for _, e := range entries {
		if err := w.Add(e.key, e.val); err != nil {
			t.Fatalf("Add(%s): %v", ikey.String(e.key), err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := w.Meta().Size; got != uint64(buf.Len()) {
		t.Fatalf("Meta.Size %d, wrote %d", got, buf.Len())
	}
	return buf.Bytes()
}

// openTable opens a table held in memory.
func openTable(t testing.TB, b []byte, opts ReaderOptions) *Reader {
	t.Helper()
	r, err := Open(bytes.NewReader(b), int64(len(b)), opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// probeKeys returns seek targets around every model key: the keys
// themselves, the same user keys at other sequence numbers, a key before
// everything and keys after everything.
func probeKeys(model []kv) [][]byte {
	probes := [][]byte{ikey.Make(nil, ikey.MaxSeq, ikey.KindSet), ikey.Make([]byte("\xff\xff\xff\xff\xff"), 0, ikey.KindDelete)}
	for _, e := range model {
		u, seq := ikey.UserKey(e.key), ikey.Seq(e.key)
		probes = append(probes, e.key, ikey.Make(u, seq+1, ikey.KindSet), ikey.Make(u, max(seq, 1)-1, ikey.KindSet),
			ikey.Make(append(append([]byte(nil), u...), 0), ikey.MaxSeq, ikey.KindSet))
	}
	return probes
}

// checkIter compares it with model: full scans both ways, every probe with
// SeekGE and SeekLT followed by steps both ways, and a random walk.
func checkIter(t *testing.T, it iterator.Iterator, model []kv, probes [][]byte, rng *rand.Rand) {
	t.Helper()
	c := iterChecker{t: t, it: it, model: model}
	ok := it.First()
	for i := 0; c.at("First/Next", ok, i); i++ {
		ok = it.Next()
	}
	ok = it.Last()
	for i := len(model) - 1; c.at("Last/Prev", ok, i); i-- {
		ok = it.Prev()
	}
	if len(probes) > 600 {
		// Keep large tests fast: a random sample still crosses every kind
		// of boundary many times.
		sample := make([][]byte, 600)
		for i := range sample {
			sample[i] = probes[rng.Intn(len(probes))]
		}
		probes = sample
	}
	for _, p := range probes {
		ge := c.search(p)
		if c.at("SeekGE "+ikey.String(p), it.SeekGE(p), ge) {
			if c.at("SeekGE+Next", it.Next(), ge+1) {
				c.at("SeekGE+Next+Prev", it.Prev(), ge)
			}
		}
		if c.at("SeekLT "+ikey.String(p), it.SeekLT(p), ge-1) {
			if c.at("SeekLT+Prev", it.Prev(), ge-2) {
				c.at("SeekLT+Prev+Next", it.Next(), ge-1)
			}
		}
	}
	c.walk(probes, rng)
	if err := it.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

// iterChecker compares an iterator's positions with a sorted model.
type iterChecker struct {
	t     *testing.T
	it    iterator.Iterator
	model []kv
}

// search returns the index of the first model key >= p.
func (c *iterChecker) search(p []byte) int {
	return sort.Search(len(c.model), func(i int) bool { return ikey.Compare(c.model[i].key, p) >= 0 })
}

// at asserts that the iterator stands at model[i] (or at nothing if i is
// out of range) after an operation that returned ok, and reports whether
// it stands at an entry.
func (c *iterChecker) at(op string, ok bool, i int) bool {
	c.t.Helper()
	if i < 0 || i >= len(c.model) {
		if ok {
			c.t.Errorf("%s: at %s, want exhausted", op, ikey.String(c.it.Key()))
		} else if err := c.it.Err(); err != nil {
			c.t.Errorf("%s: %v", op, err)
		}
		return false
	}
	if !ok {
		c.t.Errorf("%s: exhausted (err %v), want %s", op, c.it.Err(), ikey.String(c.model[i].key))
		return false
	}
	if !bytes.Equal(c.it.Key(), c.model[i].key) || !bytes.Equal(c.it.Value(), c.model[i].val) {
		c.t.Errorf("%s: at %s (%d-byte value), want %s", op, ikey.String(c.it.Key()), len(c.it.Value()), ikey.String(c.model[i].key))
		return false
	}
	return true
}

// walk moves the iterator at random (steps both ways, seeks), so that
// direction changes happen across block boundaries.
func (c *iterChecker) walk(probes [][]byte, rng *rand.Rand) {
	i := -1
	for step := 0; step < 4*len(c.model)+10 && !c.t.Failed(); step++ {
		switch op := rng.Intn(10); {
		case op < 4 && i >= 0 && i < len(c.model):
			i++
			c.at("walk Next", c.it.Next(), i)
		case op < 8 && i >= 0 && i < len(c.model):
			i--
			c.at("walk Prev", c.it.Prev(), i)
		case len(probes) > 0:
			p := probes[rng.Intn(len(probes))]
			i = c.search(p)
			if rng.Intn(2) == 0 {
				c.at("walk SeekGE", c.it.SeekGE(p), i)
			} else {
				i--
				c.at("walk SeekLT", c.it.SeekLT(p), i)
			}
		}
	}
}

// loadedIndex returns r's index block with its entry table, if it can
// have one: as Gets give it (see indexBlock). It stays valid while r keeps
// it (a Reader without a cache) or the cache does.
func (r *Reader) loadedIndex(tb testing.TB) *indexBlock {
	tb.Helper()
	for range tabAfter + 1 {
		v, ib, err := r.acquireIndexForGet()
		if err != nil {
			tb.Fatal(err)
		}
		v.Release()
		if ib.tab != nil {
			return ib
		}
	}
	v, ib, _ := r.acquireIndex()
	v.Release()
	return ib
}

// loadedFilter returns r's filter (nil: none usable), reading it if it was
// not yet. It stays valid as loadedIndex's block does.
func (r *Reader) loadedFilter() (*filterReader, error) {
	v, f, err := r.acquireFilter()
	v.Release()
	return f, err
}

// filterRead reports whether r holds a filter it has read and not lost.
func (r *Reader) filterRead() bool {
	v := r.filter.Load()
	if v == nil || !v.TryRef() {
		return false
	}
	v.Release()
	return true
}
