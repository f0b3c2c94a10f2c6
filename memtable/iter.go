package memtable

import (
	"slices"

	"github.com/shale-db/shale/internal/iterator"
)

// Chunk sizes of an Iterator's runs: the first run after a seek is small,
// since a merging iterator often takes one or two entries from it; each
// further run in the same direction doubles, up to maxChunk, which bounds
// how long one refill holds the read lock.
const (
	minChunk = 8
	maxChunk = 256
)

// iterState says where an Iterator stands.
type iterState uint8

const (
	unpositioned iterState = iota
	positioned             // at buf[pos]
	pastEnd                // a forward move found nothing
	beforeStart            // a backward move found nothing
	closed
)

// Iterator walks a Memtable in ikey.Compare order. It implements
// iterator.Iterator. Beyond that contract: Next or Prev on an unpositioned
// iterator return false; Prev after Next ran off the end moves to the last
// entry, and Next after Prev ran off the start to the first; Key and Value
// slices stay valid after the iterator moves or closes (see the package doc).
// Err is always nil. An Iterator is not safe for concurrent use.
type Iterator struct {
	m     *Memtable
	state iterState
	// buf is a run of consecutive tree entries in ascending order, copied
	// under the read lock; buf[pos] is the current entry when positioned.
	buf   []entry
	pos   int
	chunk int // size of the next run

	// Fill parameters read by collect.
	want  int   // stop after this many entries
	skip  entry // pivot to leave out (exclusive seeks)
	skipy bool  // whether skip applies
	add   func(entry) bool

	inline [minChunk]entry // buf's first backing array, saving an allocation
}

var _ iterator.Iterator = (*Iterator)(nil)

// NewIter returns an unpositioned iterator over m.
func (m *Memtable) NewIter() *Iterator {
	it := &Iterator{m: m}
	it.buf = it.inline[:0]
	it.add = it.collect
	return it
}

// collect is the B-tree callback of a refill.
func (it *Iterator) collect(e entry) bool {
	if it.skipy {
		it.skipy = false
		if sameKey(&e, &it.skip) {
			return true // e is the exclusive pivot itself
		}
	}
	it.buf = append(it.buf, e)
	return len(it.buf) < it.want
}

// fill replaces buf with the next run in direction forward, starting at
// from (all of the tree if from is nil; leaving out *from itself if
// exclusive), and positions the iterator at its first entry in that
// direction.
func (it *Iterator) fill(forward bool, from *entry, exclusive bool) bool {
	if it.state == closed {
		return false
	}
	clear(it.buf)
	it.buf = it.buf[:0]
	if cap(it.buf) < it.chunk {
		// Grow fourfold: a short scan allocates little, a long one three
		// times in all.
		it.buf = make([]entry, 0, min(max(it.chunk, 4*cap(it.buf)), maxChunk))
	}
	it.want = it.chunk
	it.skipy = exclusive
	if exclusive {
		it.skip = *from
	}
	x := &it.m.mu.idx
	it.m.mu.RLock()
	switch {
	case forward && from == nil:
		x.ascend(it.add)
	case forward:
		x.ascendGE(*from, it.add)
	case from == nil:
		x.descend(it.add)
	default:
		x.descendLE(*from, it.add)
	}
	it.m.mu.RUnlock()
	it.skip = entry{}
	it.chunk = min(2*it.chunk, maxChunk)
	if len(it.buf) == 0 {
		it.state = beforeStart
		if forward {
			it.state = pastEnd
		}
		return false
	}
	it.state, it.pos = positioned, 0
	if !forward {
		slices.Reverse(it.buf)
		it.pos = len(it.buf) - 1
	}
	return true
}

// seek starts a fresh pass with a small first run.
func (it *Iterator) seek(forward bool, from *entry, exclusive bool) bool {
	it.chunk = minChunk
	return it.fill(forward, from, exclusive)
}

// First moves to the smallest entry.
func (it *Iterator) First() bool { return it.seek(true, nil, false) }

// Last moves to the largest entry.
func (it *Iterator) Last() bool { return it.seek(false, nil, false) }

// SeekGE moves to the smallest entry whose internal key is >= key. A key
// shorter than an internal key is taken as a user key: SeekGE moves to its
// newest version, or the next user key.
func (it *Iterator) SeekGE(key []byte) bool {
	p := pivot(key)
	return it.seek(true, &p, false)
}

// SeekLT moves to the largest entry whose internal key is < key. A key
// shorter than an internal key is taken as a user key: SeekLT moves to the
// last entry of the largest smaller user key.
func (it *Iterator) SeekLT(key []byte) bool {
	p := pivot(key)
	return it.seek(false, &p, true)
}

// Next moves to the following entry.
func (it *Iterator) Next() bool {
	switch it.state {
	case positioned:
		if it.pos+1 < len(it.buf) {
			it.pos++
			return true
		}
		cur := it.buf[it.pos]
		return it.fill(true, &cur, true)
	case beforeStart:
		return it.First()
	}
	return false
}

// Prev moves to the preceding entry.
func (it *Iterator) Prev() bool {
	switch it.state {
	case positioned:
		if it.pos > 0 {
			it.pos--
			return true
		}
		cur := it.buf[it.pos]
		return it.fill(false, &cur, true)
	case pastEnd:
		return it.Last()
	}
	return false
}

// Key returns the current entry's encoded internal key, or nil when the
// iterator is not positioned.
func (it *Iterator) Key() []byte {
	if it.state != positioned {
		return nil
	}
	return it.buf[it.pos].key()
}

// Value returns the current entry's value (empty for a deletion), or nil
// when the iterator is not positioned.
func (it *Iterator) Value() []byte {
	if it.state != positioned {
		return nil
	}
	return it.buf[it.pos].value()
}

// Err returns nil: a memtable iterator cannot fail.
func (it *Iterator) Err() error { return nil }

// Close releases the iterator's buffer. Calling it twice is safe; after it,
// positioning methods return false.
func (it *Iterator) Close() error {
	it.state, it.buf = closed, nil
	clear(it.inline[:])
	return nil
}
