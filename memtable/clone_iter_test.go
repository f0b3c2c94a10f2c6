package memtable

import (
	"iter"
	"testing"

	"github.com/google/btree"
)

// cloneIter is the design the package rejected, kept here so the
// benchmarks can compare it: NewIter clones the tree under the write lock
// (Clone changes the original's copy-on-write state), then reads the
// private clone without locks through an iter.Pull adapter. Only what the
// benchmarks use is implemented: First, SeekGE, Next, and Key.
type cloneIter struct {
	t     *btree.BTreeG[entry]
	next  func() (entry, bool)
	stop  func()
	cur   entry
	valid bool
}

func newCloneIter(m *Memtable) *cloneIter {
	m.mu.Lock()
	t := m.mu.tree.Clone()
	m.mu.Unlock()
	return &cloneIter{t: t}
}

func (it *cloneIter) restart(seq iter.Seq[entry]) bool {
	if it.stop != nil {
		it.stop()
	}
	it.next, it.stop = iter.Pull(seq)
	return it.Next()
}

func (it *cloneIter) First() bool {
	return it.restart(func(yield func(entry) bool) { it.t.Ascend(yield) })
}

func (it *cloneIter) SeekGE(key []byte) bool {
	p := pivot(key)
	return it.restart(func(yield func(entry) bool) { it.t.AscendGreaterOrEqual(p, yield) })
}

func (it *cloneIter) Next() bool {
	it.cur, it.valid = it.next()
	return it.valid
}

func (it *cloneIter) Key() []byte { return it.cur.key() }

func (it *cloneIter) Close() {
	if it.stop != nil {
		it.stop()
	}
}

// TestCloneIterAgrees keeps the benchmark's comparison honest: the
// rejected design yields the same entries.
func TestCloneIterAgrees(t *testing.T) {
	m := benchMemtable(t, 1000, true)
	a, b := m.NewIter(), newCloneIter(m)
	defer a.Close()
	defer b.Close()
	n := 0
	for okA, okB := a.First(), b.First(); okA || okB; okA, okB = a.Next(), b.Next() {
		if okA != okB || string(a.Key()) != string(b.Key()) {
			t.Fatalf("entry %d: chunked %v %q, clone %v %q", n, okA, a.Key(), okB, b.Key())
		}
		n++
	}
	if n != 1000 {
		t.Fatalf("%d entries", n)
	}
}
