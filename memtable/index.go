package memtable

import (
	"math"
	"slices"

	"github.com/google/btree"
)

// leafCap is the most entries a leaf holds: 6 KiB of entries. A random
// insert moves half a leaf on average; an insert in order appends.
const leafCap = 128

// A leaf's array grows as it fills rather than being allocated whole:
// random inserts leave leaves between half and fully full, so arrays of
// leafCap would be about 30% empty (a third of the memtable's index,
// which is as large as half its arena for 100-byte values). Halves of a
// split get arrays of splitCap, which grow once, to leafCap, when full;
// the first leaf starts at firstCap and doubles. The arrays a split or a
// growth gives up are kept for the next ones (index.spares), so that the
// copies make no garbage.
const (
	splitCap = leafCap/2 + leafCap/4
	firstCap = 8
)

// spares holds emptied leaf arrays of capacity splitCap and leafCap, and
// makes new arrays with alloc (nil: on the Go heap).
type spares struct {
	split, full [][]entry
	alloc       func(c int) []entry
}

// make returns a new empty array of capacity c.
func (s *spares) make(c int) []entry {
	if s.alloc != nil {
		return s.alloc(c)
	}
	return make([]entry, 0, c)
}

// take returns an empty array of capacity c (splitCap or leafCap).
func (s *spares) take(c int) []entry {
	list := &s.full
	if c == splitCap {
		list = &s.split
	}
	if n := len(*list); n > 0 {
		a := (*list)[n-1]
		*list = (*list)[:n-1]
		return a
	}
	return s.make(c)
}

// maxSpares bounds each list of spares: random inserts take arrays as
// fast as they give them up, but some orders only split, and would pile
// up arrays of leafCap that nothing takes.
const maxSpares = 4

// give keeps a, whose entries have been copied elsewhere, for reuse, or
// leaves it to the collector if enough are kept.
func (s *spares) give(a []entry) {
	list := &s.full
	switch cap(a) {
	case splitCap:
		list = &s.split
	case leafCap:
	default:
		return
	}
	if len(*list) < maxSpares {
		clear(a) // no stale references into the arena
		*list = append(*list, a[:0])
	}
}

// firstCap returns the capacity of the first leaf's array. An index whose
// arrays come from spares.alloc (a memtable's chunks outside the Go heap)
// gives every leaf an array of leafCap, and a split leaves the lower half
// in the array it had. Arrays from alloc are not freed one by one (they go
// with the memtable), and growing arrays would leave in their chunks the
// arrays that splits and growths gave up: 20,000 random inserts left 128
// idle arrays of leafCap beside the 256 in use.
func (x *index) firstCap() int {
	if x.spares.alloc != nil {
		return leafCap
	}
	return firstCap
}

// grow gives l's array room for one more entry.
func (x *index) grow(l *leaf) {
	c := leafCap
	if cap(l.ents) < splitCap {
		c = min(2*cap(l.ents), leafCap)
	}
	old := l.ents
	l.ents = append(x.spares.take(c), old...)
	x.spares.give(old)
}

// btreeDegree is the degree of the B-tree of leaves: its nodes hold up to
// 2*degree-1 leaves. With leaves of up to 128 entries, a memtable of a few
// hundred thousand entries is a root over a level of nodes. (Not tuned:
// the tree sees one insert per leaf split.)
const btreeDegree = 32

// leaf is a sorted run of entries, one leaf of an index. Its entries are
// the index's entries in [lo, hi): lo is at most its first entry (the first
// leaf's is minEntry), and hi is the next leaf's lo (the last leaf has
// none). Leaves are never empty once an insert returns, and never shrink
// but by a split.
type leaf struct {
	ents  []entry // ascending; at most leafCap
	lo    entry
	hi    entry // valid if hasHi
	hasHi bool
}

// leafItem is a leaf as the B-tree orders it, by its lower bound, a copy
// of leaf.lo (leaves' ranges do not overlap, so no two bounds are equal).
type leafItem struct {
	lo entry
	l  *leaf
}

// lessItem orders leaves. Its first test is less's, inlined: the B-tree
// calls it through a function value at every step of a descent.
func lessItem(a, b leafItem) bool {
	if a.lo.p0 != b.lo.p0 {
		return a.lo.p0 < b.lo.p0
	}
	return less(a.lo, b.lo)
}

// index is an ordered set of entries: a github.com/google/btree B-tree of
// leaves, each a sorted array of up to leafCap entries, ordered by their
// ranges. It is the B-tree keyed by runs of entries rather than by single
// entries: an insert finds its leaf (at once, when it falls in the leaf
// of the insert before it, as inserts in order do) and adds to that
// leaf's array, and the tree changes only when a leaf splits, once per 64
// to 128 inserts.
//
// Measured against a B-tree of single entries (degree 64, the design
// before it), in the package benchmarks: inserts in key order take 119 ns
// against 276, random ones 318 against 341, Gets 215 against 200.
//
// An index is not safe for concurrent use: the Memtable's RWMutex lets
// readers share it and gives the writer (insert) sole use.
type index struct {
	tree   *btree.BTreeG[leafItem]
	hint   *leaf // the leaf of the last insert
	spares spares
}

func newIndex() index {
	return index{tree: btree.NewG(btreeDegree, lessItem)}
}

// minEntry is below every entry (the empty user key, with a trailer above
// any real one's): the first leaf's lower bound, so that no insert ever
// has to lower a leaf's bound.
var minEntry = entry{trailer: math.MaxUint64}

// leafFor returns the leaf whose range holds e, or nil if the index is
// empty.
func (x *index) leafFor(e entry) *leaf {
	var found *leaf
	x.tree.DescendLessOrEqual(leafItem{lo: e}, func(it leafItem) bool {
		found = it.l
		return false
	})
	return found
}

// insert adds e, or replaces the entry equal to it (same user key and
// trailer), returning that one.
func (x *index) insert(e entry) (old entry, replaced bool) {
	l := x.hint
	if l == nil || less(e, l.lo) || (l.hasHi && !less(e, l.hi)) {
		if l = x.leafFor(e); l == nil {
			l = &leaf{ents: x.spares.make(x.firstCap()), lo: minEntry}
			x.tree.ReplaceOrInsert(leafItem{lo: l.lo, l: l})
		}
	}
	n := len(l.ents)
	i := n
	if n > 0 && !less(l.ents[n-1], e) {
		i = searchGE(l.ents, e)
		if !less(e, l.ents[i]) {
			old, l.ents[i] = l.ents[i], e
			x.hint = l
			return old, true
		}
	}
	switch {
	case n == leafCap:
		l, i = x.split(l, i, e)
	case n == cap(l.ents):
		x.grow(l)
	}
	l.ents = slices.Insert(l.ents, i, e)
	x.hint = l
	return entry{}, false
}

// above reports whether ents, which must not be empty, ascend and all sort
// after every entry in the index: appendAbove may take them.
func (x *index) above(ents []entry) bool {
	for i := 1; i < len(ents); i++ {
		if !less(ents[i-1], ents[i]) {
			return false
		}
	}
	return x.precedes(ents[0])
}

// precedes reports whether every entry in the index sorts before e.
func (x *index) precedes(e entry) bool {
	last, ok := x.tree.Max()
	return !ok || less(last.l.ents[len(last.l.ents)-1], e)
}

// appendAbove adds ents, for which above holds, as inserts in order would:
// it fills the last leaf and then new leaves of leafCap (split's in-order
// case), but a leaf at a time, with no search and no insert's checks. A
// batch of keys in order (a bulk load, a sequential fill's batches) goes
// in several times as fast.
func (x *index) appendAbove(ents []entry) {
	l := x.lastLeaf()
	for len(ents) > 0 {
		l = x.roomAtEnd(l, ents[0])
		n := min(len(ents), cap(l.ents)-len(l.ents))
		l.ents = append(l.ents, ents[:n]...)
		ents = ents[n:]
	}
	x.hint = l
}

// lastLeaf returns the index's last leaf, made if there is none: empty,
// then, and the caller must add to it before it lets go of the index's
// lock (a leaf is never empty once an insert returns, and precedes relies
// on it).
func (x *index) lastLeaf() *leaf {
	if last, ok := x.tree.Max(); ok {
		return last.l
	}
	l := &leaf{ents: x.spares.make(x.firstCap()), lo: minEntry}
	x.tree.ReplaceOrInsert(leafItem{lo: l.lo, l: l})
	return l
}

// roomAtEnd returns the leaf that e, about to be appended after l's
// entries (l the last leaf), goes to, with room for it: l, its array grown
// if full below leafCap, or a new last leaf starting at e if l is full.
func (x *index) roomAtEnd(l *leaf, e entry) *leaf {
	switch {
	case len(l.ents) == leafCap:
		r := &leaf{lo: e, ents: x.spares.take(leafCap)}
		l.hi, l.hasHi = r.lo, true
		x.tree.ReplaceOrInsert(leafItem{lo: r.lo, l: r})
		return r
	case len(l.ents) == cap(l.ents):
		x.grow(l)
	}
	return l
}

// split makes room in the full leaf l for e, which belongs at position i,
// and returns the leaf and position where e goes. Past l's last entry, e
// starts a new leaf of its own, leaving l full (inserts in order fill
// their leaves); elsewhere l gives its upper half to a new leaf.
func (x *index) split(l *leaf, i int, e entry) (*leaf, int) {
	r := &leaf{hi: l.hi, hasHi: l.hasHi}
	const mid = leafCap / 2
	at := 0
	if i == len(l.ents) {
		// Inserts in order will fill r as they filled l.
		r.lo = e
		r.ents = x.spares.take(leafCap) // from alloc, if set: spares hold none
	} else if x.spares.alloc != nil {
		// Arrays from alloc are all of leafCap (see firstCap): l keeps
		// its own for its lower half.
		r.lo = l.ents[mid]
		r.ents = append(x.spares.make(leafCap), l.ents[mid:]...)
		l.ents = l.ents[:mid]
		at = i - mid
	} else {
		r.lo = l.ents[mid]
		old := l.ents
		r.ents = append(x.spares.take(splitCap), old[mid:]...)
		l.ents = append(x.spares.take(splitCap), old[:mid]...)
		x.spares.give(old)
		at = i - mid
	}
	l.hi, l.hasHi = r.lo, true
	x.tree.ReplaceOrInsert(leafItem{lo: r.lo, l: r})
	if at < 0 || (at == 0 && len(r.ents) > 0) {
		// e is below r.lo, the entry it goes before: l has room for it.
		return l, i
	}
	return r, at
}

// ascend calls fn on every entry in ascending order until fn returns false.
func (x *index) ascend(fn func(entry) bool) {
	x.tree.Ascend(func(it leafItem) bool { return eachUp(it.l.ents, fn) })
}

// ascendGE calls fn on every entry >= p in ascending order until fn
// returns false.
func (x *index) ascendGE(p entry, fn func(entry) bool) {
	l := x.leafFor(p)
	if l == nil {
		return // empty: nothing is below minEntry
	}
	i := searchGE(l.ents, p)
	if !eachUp(l.ents[i:], fn) || !l.hasHi {
		return
	}
	x.tree.AscendGreaterOrEqual(leafItem{lo: l.hi}, func(it leafItem) bool { return eachUp(it.l.ents, fn) })
}

// descend calls fn on every entry in descending order until fn returns
// false.
func (x *index) descend(fn func(entry) bool) {
	x.tree.Descend(func(it leafItem) bool { return eachDown(it.l.ents, fn) })
}

// descendLE calls fn on every entry <= p in descending order until fn
// returns false.
func (x *index) descendLE(p entry, fn func(entry) bool) {
	l := x.leafFor(p)
	if l == nil {
		return // empty
	}
	i := searchGT(l.ents, p)
	if !eachDown(l.ents[:i], fn) {
		return
	}
	x.tree.DescendLessOrEqual(leafItem{lo: l.lo}, func(it leafItem) bool {
		return it.l == l || eachDown(it.l.ents, fn)
	})
}

// searchGE returns the index of the first of ents (ascending) that is not
// less than p, or len(ents).
func searchGE(ents []entry, p entry) int {
	i, j := 0, len(ents)
	for i < j {
		h := int(uint(i+j) >> 1)
		if less(ents[h], p) {
			i = h + 1
		} else {
			j = h
		}
	}
	return i
}

// searchGT returns the index of the first of ents (ascending) that is
// greater than p, or len(ents).
func searchGT(ents []entry, p entry) int {
	i, j := 0, len(ents)
	for i < j {
		h := int(uint(i+j) >> 1)
		if less(p, ents[h]) {
			j = h
		} else {
			i = h + 1
		}
	}
	return i
}

// eachUp calls fn on ents in order; it reports whether fn always returned
// true.
func eachUp(ents []entry, fn func(entry) bool) bool {
	for _, e := range ents {
		if !fn(e) {
			return false
		}
	}
	return true
}

// eachDown calls fn on ents in reverse order; it reports whether fn always
// returned true.
func eachDown(ents []entry, fn func(entry) bool) bool {
	for i := len(ents) - 1; i >= 0; i-- {
		if !fn(ents[i]) {
			return false
		}
	}
	return true
}
