package shale

import (
	"bytes"
	"iter"

	"github.com/shale-db/shale/internal/dbiter"
)

// IterOptions bound an iterator to a key range. A nil *IterOptions, and a
// nil bound, mean no bound; an empty, non-nil UpperBound admits no key.
// NewIterator copies the bounds: the caller may reuse o and its slices as
// soon as it returns.
type IterOptions struct {
	// LowerBound is the smallest key the iterator returns (inclusive).
	LowerBound []byte
	// UpperBound is the key the iterator stops before (exclusive).
	UpperBound []byte
}

// PrefixOptions returns the bounds of the keys that start with prefix.
func PrefixOptions(prefix []byte) *IterOptions {
	return &IterOptions{LowerBound: bytes.Clone(prefix), UpperBound: prefixSuccessor(prefix)}
}

// prefixSuccessor returns the smallest key greater than every key with the
// given prefix, or nil if there is none (the prefix is all 0xff bytes).
func prefixSuccessor(prefix []byte) []byte {
	for i := len(prefix) - 1; i >= 0; i-- {
		if prefix[i] != 0xff {
			s := bytes.Clone(prefix[:i+1])
			s[i]++
			return s
		}
	}
	return nil
}

// Iterator walks the keys of a DB or Snapshot in order, in either
// direction. It sees the database as of its creation: writes that happen
// later are invisible to it. The files it reads stay on disk until Close.
//
// Positioning methods (First, Last, SeekGE, SeekLT, Next, Prev) report
// whether the iterator stands at an entry; when one returns false, the
// iteration is over or failed, and Err says which. The slices returned by
// Key and Value are valid until the next positioning call or Close; copy
// them to keep them.
//
// An Iterator is not safe for concurrent use. Close it when done: it pins
// files and memory.
type Iterator struct {
	it *dbiter.Iter
	tx *txnIter // set for a transaction's iterator: it moves, over it

	alloc  *iterAlloc // the stack's memory, released at Close; nil after
	err    error      // set when the iterator could not be created
	closed bool
}

// NewIterator returns an iterator over the database as of now, within the
// bounds of o (nil for everything).
func (db *DB) NewIterator(o *IterOptions) *Iterator {
	return db.newIterator(o, nil)
}

// First moves to the first key within the bounds.
func (it *Iterator) First() bool {
	if it.tx != nil {
		return it.ok() && it.start() && it.tx.First()
	}
	return it.ok() && it.start() && it.it.First()
}

// Last moves to the last key within the bounds.
func (it *Iterator) Last() bool {
	if it.tx != nil {
		return it.ok() && it.start() && it.tx.Last()
	}
	return it.ok() && it.start() && it.it.Last()
}

// SeekGE moves to the first key >= key (and within the bounds).
func (it *Iterator) SeekGE(key []byte) bool {
	if it.tx != nil {
		return it.ok() && it.start() && it.tx.SeekGE(key)
	}
	return it.ok() && it.start() && it.it.SeekGE(key)
}

// SeekLT moves to the last key < key (and within the bounds).
func (it *Iterator) SeekLT(key []byte) bool {
	if it.tx != nil {
		return it.ok() && it.start() && it.tx.SeekLT(key)
	}
	return it.ok() && it.start() && it.it.SeekLT(key)
}

// Next moves to the following key.
func (it *Iterator) Next() bool {
	if it.tx != nil {
		return it.ok() && it.tx.Next()
	}
	return it.ok() && it.it.Next()
}

// Prev moves to the preceding key.
func (it *Iterator) Prev() bool {
	if it.tx != nil {
		return it.ok() && it.tx.Prev()
	}
	return it.ok() && it.it.Prev()
}

// Key returns the current key. See the type's doc for how long it is valid.
func (it *Iterator) Key() []byte {
	if !it.ok() {
		return nil
	}
	if it.tx != nil {
		return it.tx.current().key
	}
	return it.it.Key()
}

// Value returns the current value. See the type's doc for how long it is
// valid.
func (it *Iterator) Value() []byte {
	if !it.ok() {
		return nil
	}
	if it.tx != nil {
		return it.tx.current().value
	}
	return it.it.Value()
}

// Err returns the error that stopped the iteration, if any. Damage on disk
// matches ErrCorruption; use after Close matches ErrClosed.
func (it *Iterator) Err() error {
	if it.err != nil {
		return it.err
	}
	if it.closed {
		return ErrClosed
	}
	if it.tx != nil && it.tx.discarded {
		return errTxnIterDiscarded
	}
	return it.readError(it.it.Err())
}

// readError is err as the user sees it: marked as corruption if it is
// damage, and ErrClosed if the iterator, left open across Close, found a
// table it reads (one the table cache had closed, see tablecache.tableFile)
// gone from disk (see DB.goneAfterClose).
func (it *Iterator) readError(err error) error {
	if it.alloc != nil {
		if gone := it.alloc.db.goneAfterClose(err); gone != nil {
			return gone
		}
	}
	return markCorruption(err)
}

// Close releases the iterator and returns the error that stopped the
// iteration, if any (for an iterator made on a closed DB, ErrClosed).
// Closing twice is safe and returns the same.
func (it *Iterator) Close() error {
	if it.closed {
		return it.err
	}
	it.closed = true
	if it.tx != nil {
		it.tx.close()
	}
	err := it.readError(it.it.Close())
	if a := it.alloc; a != nil {
		it.it, it.alloc = nil, nil
		a.free()
	}
	if it.err == nil {
		it.err = err
	}
	return it.err
}

func (it *Iterator) ok() bool {
	return !it.closed && it.err == nil && (it.tx == nil || !it.tx.discarded)
}

// start begins a new scan for the table iterators' count of blocks read in
// order (see sstable.ScanGroup); it returns true.
func (it *Iterator) start() bool {
	it.alloc.group.Reset()
	return true
}

// Entry is one key and its value, as All and Backward yield them. The
// slices are valid only until the loop body returns; copy them to keep
// them.
type Entry struct {
	Key, Value []byte
}

// All returns the entries within the bounds of o in ascending key order,
// for use with range:
//
//	for e, err := range db.All(nil) {
//		if err != nil {
//			return err
//		}
//		use(e.Key, e.Value)
//	}
//
// The error is the second value of every step, so it cannot be lost
// without the caller writing _ for it: the compiler rejects an unused
// range variable. After an error the sequence ends. Stopping the loop
// early (break) closes the underlying iterator.
func (db *DB) All(o *IterOptions) iter.Seq2[Entry, error] {
	return seqOf(func() *Iterator { return db.NewIterator(o) }, false)
}

// Backward is All in descending key order.
func (db *DB) Backward(o *IterOptions) iter.Seq2[Entry, error] {
	return seqOf(func() *Iterator { return db.NewIterator(o) }, true)
}

// All is DB.All over the snapshot's view.
func (s *Snapshot) All(o *IterOptions) iter.Seq2[Entry, error] {
	return seqOf(func() *Iterator { return s.NewIterator(o) }, false)
}

// Backward is DB.Backward over the snapshot's view.
func (s *Snapshot) Backward(o *IterOptions) iter.Seq2[Entry, error] {
	return seqOf(func() *Iterator { return s.NewIterator(o) }, true)
}

func seqOf(open func() *Iterator, reverse bool) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		it := open()
		defer it.Close() // also when the loop body panics
		start, step := it.First, it.Next
		if reverse {
			start, step = it.Last, it.Prev
		}
		for ok := start(); ok; ok = step() {
			if !yield(Entry{Key: it.Key(), Value: it.Value()}, nil) {
				return
			}
		}
		if err := it.Close(); err != nil {
			yield(Entry{}, err)
		}
	}
}
