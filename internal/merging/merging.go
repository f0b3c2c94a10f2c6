// Package merging provides an iterator that merges several internal
// iterators into one sorted stream, in both directions.
//
// Use it to read memtables and tables together: pass the sources newest
// first, for example merging.New(mem, imm, l0a, l0b, level1, level2).
// Entries come out in ikey.Compare order. Equal internal keys in different
// sources should not occur (a sequence number is given once); if they do,
// each is returned, ordered by source index (lower index first going
// forward, the exact reverse going backward), so results are deterministic.
//
// The iterator keeps a binary heap of the sources that stand at an entry:
// a min-heap while moving forward, a max-heap while moving backward.
// Changing direction moves every source once, to its last entry before the
// current one (Prev, or Last for a source that ran off its end) or its
// first entry after it (Next or First); see reposition. A source is only
// ever stepped with Next or Prev while it stands at an entry, so sources
// need not support stepping off an exhausted position.
//
// An Iter is not safe for concurrent use; distinct Iters are independent.
package merging

import (
	"github.com/shale-db/shale/internal/ikey"
	"github.com/shale-db/shale/internal/iterator"
)

// state says where the iterator stands; see Iter.
type state int8

const (
	unpositioned state = iota
	forward            // heap is a min-heap; empty means after the last entry
	reverse            // heap is a max-heap; empty means before the first entry
	failed             // err is set; every positioning call returns false
	closed
)

// source is one child iterator. key caches its current key while ok, and
// p0 and p1 the first 16 bytes of its user key (ikey.Prefixes), which
// order most pairs of sources with two integer comparisons. A source that
// steps alone in the heap is compared with nothing, so step leaves its
// prefixes stale: only reposition and SeekGELifted add sources to a heap,
// each through do, which sets them (SkipForward only drops or re-seeks
// the sources already in it).
type source struct {
	it     iterator.Iterator
	key    []byte
	p0, p1 uint64
	idx    int
	ok     bool // it stands at an entry, so the source is in the heap
}

// setKey caches k, the source's current key.
func (s *source) setKey(k []byte) {
	s.key = k
	s.p0, s.p1 = ikey.Prefixes(ikey.UserKey(k))
}

// Iter merges child iterators. It implements iterator.Iterator with these
// additions to the contract: Next after an exhausted backward move (Prev
// or SeekLT returned false) is First, and Prev after an exhausted forward
// move is Last. Next and Prev before any positioning call return false.
// An error from a child is sticky: every later positioning call returns
// false and Err returns it.
//
// Key and Value return the current child's slices: valid until the next
// positioning call or Close.
type Iter struct {
	srcs []source
	heap []*source // srcs that are ok, in heap order for state
	// second is the heap index (1 or 2) of the root's smaller child, the
	// runner-up, while it is known; 0 when not. A step whose source stays
	// ahead of the runner-up leaves the rest of the heap as it was, so
	// the next step needs one comparison, not two: long runs from one
	// source (the large bottom level, between a few newer entries) are
	// the common case.
	second   int
	state    state
	err      error
	closeErr error
}

var _ iterator.Iterator = (*Iter)(nil)

// New returns an iterator over the union of iters, which it owns: Close
// closes them. Pass newer sources first (see the package doc).
func New(iters ...iterator.Iterator) *Iter {
	m := new(Iter)
	m.Init(iters...)
	return m
}

// Init makes m the iterator New would return, reusing the memory of its
// last use (an Iter that is closed, or zero).
func (m *Iter) Init(iters ...iterator.Iterator) {
	srcs := m.srcs[:0]
	for i, it := range iters {
		srcs = append(srcs, source{it: it, idx: i})
	}
	heap := m.heap[:0]
	if cap(heap) < len(iters) {
		heap = make([]*source, 0, len(iters))
	}
	*m = Iter{srcs: srcs, heap: heap}
}

// Clear drops m's references to its children and their keys, as a closed
// Iter kept for reuse should.
func (m *Iter) Clear() {
	clear(m.srcs)
	clear(m.heap[:cap(m.heap)])
	m.srcs, m.heap = m.srcs[:0], m.heap[:0]
}

// op is one way to position a source.
type op int8

const (
	opFirst op = iota
	opLast
	opSeekGE
	opSeekLT
	opNext
	opPrev
)

func (s *source) do(o op, key []byte) bool {
	var ok bool
	switch o {
	case opFirst:
		ok = s.it.First()
	case opLast:
		ok = s.it.Last()
	case opSeekGE:
		ok = s.it.SeekGE(key)
	case opSeekLT:
		ok = s.it.SeekLT(key)
	case opNext:
		ok = s.it.Next()
	default:
		ok = s.it.Prev()
	}
	s.ok = ok
	if ok {
		s.setKey(s.it.Key())
	}
	return ok
}

// reposition applies o to every source and rebuilds the heap for st.
//
// With opNext or opPrev it turns around at the current entry P. Invariant
// while moving forward: every source's entries before its position are < P
// in merged order (returned already, or skipped by a seek to a target <= P),
// and its current entry, if any, is > P unless it is P itself. So one Prev
// puts each source at its last entry < P, and a source past its end gets
// Last instead. Moving backward the mirror image holds, with Next and First.
// Each source moves once, which is cheaper than seeking all of them.
func (m *Iter) reposition(st state, o op, key []byte) bool {
	if m.state >= failed {
		return false
	}
	m.state = st
	m.heap = m.heap[:0]
	for i := range m.srcs {
		s := &m.srcs[i]
		so := o
		if !s.ok && o == opNext {
			so = opFirst
		} else if !s.ok && o == opPrev {
			so = opLast
		}
		if s.do(so, key) {
			m.heap = append(m.heap, s)
		} else if err := s.it.Err(); err != nil {
			return m.fail(err)
		}
	}
	return m.heapify()
}

// heapify restores the heap property over the whole heap and reports
// whether the iterator stands at an entry.
func (m *Iter) heapify() bool {
	for i := len(m.heap)/2 - 1; i >= 0; i-- {
		m.down(i)
	}
	m.second = 0
	return len(m.heap) > 0
}

func (m *Iter) fail(err error) bool {
	m.err, m.state, m.heap = err, failed, m.heap[:0]
	for i := range m.srcs {
		m.srcs[i].ok = false
	}
	return false
}

// First implements iterator.Iterator.
func (m *Iter) First() bool { return m.reposition(forward, opFirst, nil) }

// Last implements iterator.Iterator.
func (m *Iter) Last() bool { return m.reposition(reverse, opLast, nil) }

// SeekGE implements iterator.Iterator.
func (m *Iter) SeekGE(key []byte) bool { return m.reposition(forward, opSeekGE, key) }

// SeekLT implements iterator.Iterator.
func (m *Iter) SeekLT(key []byte) bool { return m.reposition(reverse, opSeekLT, key) }

// Next implements iterator.Iterator.
func (m *Iter) Next() bool {
	switch {
	case m.state == forward && len(m.heap) > 0:
		return m.step(opNext)
	case m.state == reverse && len(m.heap) == 0:
		return m.First()
	case m.state == reverse:
		return m.reposition(forward, opNext, nil)
	}
	return false
}

// Prev implements iterator.Iterator.
func (m *Iter) Prev() bool {
	switch {
	case m.state == reverse && len(m.heap) > 0:
		return m.step(opPrev)
	case m.state == forward && len(m.heap) == 0:
		return m.Last()
	case m.state == forward:
		return m.reposition(reverse, opPrev, nil)
	}
	return false
}

// step moves the current source one entry in the heap's direction.
func (m *Iter) step(o op) bool {
	s := m.heap[0]
	if o == opNext {
		s.ok = s.it.Next()
	} else {
		s.ok = s.it.Prev()
	}
	if s.ok {
		h := m.heap
		if len(h) < 2 {
			s.key = s.it.Key()
			return true
		}
		s.setKey(s.it.Key())
		j := m.second
		if j == 0 {
			j = 1
			if len(h) > 2 && m.less(h[2], h[1]) {
				j = 2
			}
			m.second = j
		}
		if !m.less(h[j], s) {
			return true // s stays first; the runner-up too
		}
		h[0], h[j] = h[j], h[0]
		m.down(j)
		m.second = 0
		return true
	}
	if err := s.it.Err(); err != nil {
		return m.fail(err)
	}
	n := len(m.heap) - 1
	m.heap[0] = m.heap[n]
	m.heap = m.heap[:n]
	m.down(0)
	m.second = 0
	return n > 0
}

// Lift raises the seek key of the sources from index From on to Key (see
// SeekGELifted).
type Lift struct {
	From int
	Key  []byte
}

// SeekGELifted is SeekGE (First if key is nil) where the sources from a
// lift's From on seek the lift's Key instead, when it is larger: the caller
// knows their entries between the two are deleted (see dbiter's range
// deletions). As with SkipForward, the caller must not then turn around
// with Prev, but seek.
func (m *Iter) SeekGELifted(key []byte, lifts []Lift) bool {
	if m.state >= failed {
		return false
	}
	m.state = forward
	m.heap = m.heap[:0]
	for i := range m.srcs {
		s := &m.srcs[i]
		target := key
		for _, l := range lifts {
			if l.From <= i && (target == nil || ikey.Compare(l.Key, target) > 0) {
				target = l.Key
			}
		}
		o := opSeekGE
		if target == nil {
			o = opFirst
		}
		if s.do(o, target) {
			m.heap = append(m.heap, s)
		} else if err := s.it.Err(); err != nil {
			return m.fail(err)
		}
	}
	return m.heapify()
}

// SkipForward moves each source from index from on that stands at an
// entry below key to its first entry >= key, while moving forward (it does
// nothing otherwise), and reports whether the iterator stands at an entry.
// The caller knows the entries skipped are deleted (see dbiter's range
// deletions). It breaks the invariant that reposition relies on for those
// sources: the caller must not then turn around with Prev, but seek.
func (m *Iter) SkipForward(from int, key []byte) bool {
	if m.state != forward {
		return len(m.heap) > 0
	}
	h := m.heap[:0]
	for _, s := range m.heap {
		if s.idx >= from && ikey.Compare(s.key, key) < 0 && !s.do(opSeekGE, key) {
			if err := s.it.Err(); err != nil {
				return m.fail(err)
			}
			continue
		}
		h = append(h, s)
	}
	m.heap = h
	return m.heapify()
}

// Key implements iterator.Iterator.
func (m *Iter) Key() []byte {
	if len(m.heap) == 0 {
		return nil
	}
	return m.heap[0].key
}

// Value implements iterator.Iterator.
func (m *Iter) Value() []byte {
	if len(m.heap) == 0 {
		return nil
	}
	return m.heap[0].it.Value()
}

// Err implements iterator.Iterator: the first error from a child.
func (m *Iter) Err() error { return m.err }

// Close implements iterator.Iterator: it closes every child once and
// returns the first error (Err, or else the first error from a child's
// Close). Later calls return the same error.
func (m *Iter) Close() error {
	if m.state == closed {
		return m.closeErr
	}
	m.closeErr = m.err
	for i := range m.srcs {
		if err := m.srcs[i].it.Close(); err != nil && m.closeErr == nil {
			m.closeErr = err
		}
		m.srcs[i].ok = false
	}
	m.state, m.heap = closed, m.heap[:0]
	return m.closeErr
}
