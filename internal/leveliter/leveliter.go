// Package leveliter provides an iterator over one level of tables whose
// key ranges are sorted and do not overlap (any level but L0), opening one
// table at a time.
//
// Use: leveliter.New(files, bounds, open), where bounds returns a file's
// smallest and largest internal keys (from the MANIFEST) and open returns
// an iterator over the table. Seeks find the table by binary search over
// the largest keys; a table is opened only when the iterator reaches it,
// and the previous table's iterator is closed when the iterator moves to
// another table. The package knows nothing of the manifest: F is whatever
// the caller uses to describe a file.
//
// An Iter is not safe for concurrent use; distinct Iters are independent
// as long as open is.
package leveliter

import (
	"github.com/shale-db/shale/internal/ikey"
	"github.com/shale-db/shale/internal/iterator"
)

type state int8

const (
	unpositioned state = iota
	valid              // cur stands at an entry of files[i]
	atEnd              // moved forward past the last entry
	atStart            // moved backward past the first entry
	failed
	closed
)

// Iter iterates over a level. It implements iterator.Iterator with these
// additions to the contract: Next after an exhausted backward move is
// First, and Prev after an exhausted forward move is Last; Next and Prev
// before any positioning call return false. Errors (from open, or from a
// table's iterator) are sticky.
//
// Key and Value return the current table iterator's slices: valid until
// the next positioning call or Close.
type Iter[F any] struct {
	files  []F
	bounds func(F) (smallest, largest []byte)
	open   func(F) (iterator.Iterator, error)

	i     int               // index in files of cur
	cur   iterator.Iterator // the one open table iterator, or nil
	state state
	err   error
}

var _ iterator.Iterator = (*Iter[int])(nil)

// New returns an iterator over files, which must be sorted by key range
// with no overlap. bounds(f) returns f's smallest and largest internal keys;
// open(f) returns an iterator over f, which the Iter closes when done with
// it. An error from open stops the iteration and is returned by Err; open
// should name the file in it.
func New[F any](files []F, bounds func(F) (smallest, largest []byte),
	open func(F) (iterator.Iterator, error)) *Iter[F] {
	it := new(Iter[F])
	it.Init(files, bounds, open)
	return it
}

// Init makes it the iterator New would return.
func (it *Iter[F]) Init(files []F, bounds func(F) (smallest, largest []byte),
	open func(F) (iterator.Iterator, error)) {
	*it = Iter[F]{files: files, bounds: bounds, open: open, i: -1}
}

// find returns the index of the first file whose largest key is >= key:
// every file before it holds only keys < key.
func (it *Iter[F]) find(key []byte) int {
	lo, hi := 0, len(it.files)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if _, largest := it.bounds(it.files[m]); ikey.Compare(largest, key) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// load makes files[i] the open table, closing the previous one.
func (it *Iter[F]) load(i int) bool {
	if it.cur != nil && it.i == i {
		return true
	}
	if it.cur != nil {
		err := it.cur.Close()
		it.cur = nil
		if err != nil {
			return it.fail(err)
		}
	}
	cur, err := it.open(it.files[i])
	if err != nil {
		return it.fail(err)
	}
	it.cur, it.i = cur, i
	return true
}

func (it *Iter[F]) fail(err error) bool {
	it.err, it.state = err, failed
	return false
}

// forward positions at the first entry of files[i:], using SeekGE(key) in
// files[i] if seek is set, and First elsewhere. The tables opened here
// continue a run of scan blocks read in order (iterator.Scanner): Next
// read that many from files[i-1].
func (it *Iter[F]) forward(i int, key []byte, seek bool, scan int) bool {
	for ; i < len(it.files); i, seek = i+1, false {
		if !it.load(i) {
			return false
		}
		if s, ok := it.cur.(iterator.Scanner); ok && scan > 0 {
			s.ContinueScan(scan)
		}
		var ok bool
		if seek {
			ok = it.cur.SeekGE(key)
		} else {
			ok = it.cur.First()
		}
		if ok {
			it.state = valid
			return true
		}
		if err := it.cur.Err(); err != nil {
			return it.fail(err)
		}
	}
	it.state = atEnd
	return false
}

// backward positions at the last entry of files[:i+1], using SeekLT(key)
// in files[i] if seek is set, and Last elsewhere.
func (it *Iter[F]) backward(i int, key []byte, seek bool) bool {
	for ; i >= 0; i, seek = i-1, false {
		if !it.load(i) {
			return false
		}
		var ok bool
		if seek {
			ok = it.cur.SeekLT(key)
		} else {
			ok = it.cur.Last()
		}
		if ok {
			it.state = valid
			return true
		}
		if err := it.cur.Err(); err != nil {
			return it.fail(err)
		}
	}
	it.state = atStart
	return false
}

func (it *Iter[F]) usable() bool { return it.state < failed }

// First implements iterator.Iterator.
func (it *Iter[F]) First() bool { return it.usable() && it.forward(0, nil, false, 0) }

// Last implements iterator.Iterator.
func (it *Iter[F]) Last() bool { return it.usable() && it.backward(len(it.files)-1, nil, false) }

// SeekGE implements iterator.Iterator.
func (it *Iter[F]) SeekGE(key []byte) bool {
	return it.usable() && it.forward(it.find(key), key, true, 0)
}

// SeekLT implements iterator.Iterator. Files before find(key) hold only
// smaller keys; that file itself is opened only if its smallest key is
// below key, otherwise the answer is the last entry of the one before.
func (it *Iter[F]) SeekLT(key []byte) bool {
	if !it.usable() {
		return false
	}
	i := it.find(key)
	if i < len(it.files) {
		if smallest, _ := it.bounds(it.files[i]); ikey.Compare(smallest, key) < 0 {
			return it.backward(i, key, true)
		}
	}
	return it.backward(i-1, nil, false)
}

// Next implements iterator.Iterator.
func (it *Iter[F]) Next() bool {
	switch it.state {
	case valid:
		if it.cur.Next() {
			return true
		}
		if err := it.cur.Err(); err != nil {
			return it.fail(err)
		}
		run := 0
		if s, ok := it.cur.(iterator.Scanner); ok {
			run = s.ScanRun()
		}
		return it.forward(it.i+1, nil, false, run)
	case atStart:
		return it.First()
	}
	return false
}

// Prev implements iterator.Iterator.
func (it *Iter[F]) Prev() bool {
	switch it.state {
	case valid:
		if it.cur.Prev() {
			return true
		}
		if err := it.cur.Err(); err != nil {
			return it.fail(err)
		}
		return it.backward(it.i-1, nil, false)
	case atEnd:
		return it.Last()
	}
	return false
}

// Key implements iterator.Iterator.
func (it *Iter[F]) Key() []byte {
	if it.state != valid {
		return nil
	}
	return it.cur.Key()
}

// Value implements iterator.Iterator.
func (it *Iter[F]) Value() []byte {
	if it.state != valid {
		return nil
	}
	return it.cur.Value()
}

// Err implements iterator.Iterator.
func (it *Iter[F]) Err() error { return it.err }

// Close implements iterator.Iterator: it closes the open table iterator, if
// any, and returns Err or else that iterator's Close error. Later calls
// return the same error.
func (it *Iter[F]) Close() error {
	if it.state == closed {
		return it.err
	}
	if it.cur != nil {
		if err := it.cur.Close(); err != nil && it.err == nil {
			it.err = err
		}
		it.cur = nil
	}
	it.state = closed
	return it.err
}
