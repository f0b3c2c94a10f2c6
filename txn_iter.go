package shale

import (
	"bytes"
	"slices"

	"github.com/cockroachdb/errors"
	"github.com/shale-db/shale/internal/dbiter"
)

// txnIter merges a transaction's buffered writes (as of the iterator's
// creation) over the iterator of its snapshot, and records the spans of
// keys it passes over as reads of the transaction.
//
// The two sources are kept as a merging iterator keeps its children: in
// forward mode each stands at its first entry not before the current key,
// in backward mode at its last entry not after it. On a key both hold,
// the transaction's write wins (a deletion hides the key).
type txnIter struct {
	t            *Transaction
	db           *dbiter.Iter
	own          []txnWrite // the transaction's writes within the bounds, in key order
	lower, upper []byte     // the bounds; nil: open

	state   txnIterState
	forward bool
	dbOK    bool // db stands at an entry
	oi      int  // own's candidate: forward, the next index; backward, the previous
	// curDB and curOwn say which sources the current entry comes from
	// (both when they hold the same key: own's value is the one shown).
	curDB, curOwn bool
	key, value    []byte
	keyBuf        []byte // a copy of key, for a change of direction

	// The span of the scan under way: [spanLo, spanHi), or to the end of
	// the key space when spanHiInf. Extended by Next and Prev, handed to
	// the transaction when a seek starts another or at Close.
	spanOn      bool
	spanLoUnset bool // a backward scan that has not moved yet: the span is empty
	spanLo      []byte
	spanHi      []byte
	spanHiInf   bool

	// discarded is set when the transaction is discarded with the
	// iterator open: every move fails from then on.
	discarded bool
}

type txnIterState int8

const (
	txnUnpositioned txnIterState = iota
	txnAtEntry
	txnDoneForward  // ran off the end
	txnDoneBackward // ran off the start
	txnFailed
)

func newTxnIter(t *Transaction, db *dbiter.Iter, lower, upper []byte) *txnIter {
	i := &txnIter{t: t, db: db, lower: lower, upper: upper}
	visit := func(w txnWrite) bool {
		if upper != nil && bytes.Compare(w.key, upper) >= 0 {
			return false
		}
		i.own = append(i.own, w)
		return true
	}
	t.writes.AscendGreaterOrEqual(txnWrite{key: lower}, visit)
	return i
}

// First moves to the first key within the bounds.
func (i *txnIter) First() bool {
	i.startForward(i.lower)
	i.dbOK = i.db.First()
	i.oi = 0
	return i.settleForward()
}

// Last moves to the last key within the bounds.
func (i *txnIter) Last() bool {
	i.startBackward(i.upper, i.upper == nil)
	i.dbOK = i.db.Last()
	i.oi = len(i.own) - 1
	return i.settleBackward()
}

// SeekGE moves to the first key >= key.
func (i *txnIter) SeekGE(key []byte) bool {
	lo := key
	if i.lower != nil && bytes.Compare(lo, i.lower) < 0 {
		lo = i.lower
	}
	i.startForward(lo)
	i.dbOK = i.db.SeekGE(key)
	i.oi = i.ownAfter(lo, false)
	return i.settleForward()
}

// SeekLT moves to the last key < key.
func (i *txnIter) SeekLT(key []byte) bool {
	hi := key
	if i.upper != nil && bytes.Compare(hi, i.upper) > 0 {
		hi = i.upper
	}
	i.startBackward(hi, false)
	i.dbOK = i.db.SeekLT(key)
	i.oi = i.ownAfter(hi, false) - 1
	return i.settleBackward()
}

// Next moves to the following key.
func (i *txnIter) Next() bool {
	switch i.state {
	case txnDoneBackward:
		return i.First()
	case txnAtEntry:
	default:
		return false
	}
	if !i.forward {
		// Turn around: both sources to the first entry after the
		// current key.
		k := i.keyBuf
		i.dbOK = i.db.SeekGE(k)
		if i.dbOK && bytes.Equal(i.db.Key(), k) {
			i.dbOK = i.db.Next()
		}
		i.oi = i.ownAfter(k, true)
	} else {
		if i.curDB {
			i.dbOK = i.db.Next()
		}
		if i.curOwn {
			i.oi++
		}
	}
	return i.settleForward()
}

// Prev moves to the preceding key.
func (i *txnIter) Prev() bool {
	switch i.state {
	case txnDoneForward:
		return i.Last()
	case txnAtEntry:
	default:
		return false
	}
	if i.forward {
		k := i.keyBuf
		i.dbOK = i.db.SeekLT(k)
		i.oi = i.ownAfter(k, false) - 1
	} else {
		if i.curDB {
			i.dbOK = i.db.Prev()
		}
		if i.curOwn {
			i.oi--
		}
	}
	return i.settleBackward()
}

// ownAfter returns the index of own's first key >= k (> k if strict).
func (i *txnIter) ownAfter(k []byte, strict bool) int {
	n, found := slices.BinarySearchFunc(i.own, k, func(w txnWrite, k []byte) int { return bytes.Compare(w.key, k) })
	if found && strict {
		n++
	}
	return n
}

// settleForward makes the smaller of the two sources' keys current,
// stepping over the transaction's deletions and the keys they hide.
func (i *txnIter) settleForward() bool {
	i.forward = true
	for {
		haveOwn := i.oi < len(i.own)
		if !i.dbOK && i.db.Err() != nil {
			return i.fail()
		}
		var c int
		switch {
		case !haveOwn && !i.dbOK:
			i.state = txnDoneForward
			i.extendForward(nil)
			return false
		case !haveOwn:
			c = 1
		case !i.dbOK:
			c = -1
		default:
			c = bytes.Compare(i.own[i.oi].key, i.db.Key())
		}
		if c > 0 {
			return i.at(true, false, i.db.Key(), i.db.Value(), true)
		}
		w := i.own[i.oi]
		if w.del {
			i.oi++
			if c == 0 {
				i.dbOK = i.db.Next()
			}
			continue
		}
		return i.at(c == 0, true, w.key, w.value, true)
	}
}

// settleBackward is settleForward in reverse: the larger key is current.
func (i *txnIter) settleBackward() bool {
	i.forward = false
	for {
		haveOwn := i.oi >= 0 && i.oi < len(i.own)
		if !i.dbOK && i.db.Err() != nil {
			return i.fail()
		}
		var c int
		switch {
		case !haveOwn && !i.dbOK:
			i.state = txnDoneBackward
			i.extendBackward(nil)
			return false
		case !haveOwn:
			c = -1
		case !i.dbOK:
			c = 1
		default:
			c = bytes.Compare(i.own[i.oi].key, i.db.Key())
		}
		if c < 0 {
			return i.at(true, false, i.db.Key(), i.db.Value(), false)
		}
		w := i.own[i.oi]
		if w.del {
			i.oi--
			if c == 0 {
				i.dbOK = i.db.Prev()
			}
			continue
		}
		return i.at(c == 0, true, w.key, w.value, false)
	}
}

// at makes the entry current and extends the span to it.
func (i *txnIter) at(curDB, curOwn bool, key, value []byte, forward bool) bool {
	i.state = txnAtEntry
	i.curDB, i.curOwn = curDB, curOwn
	i.key, i.value = key, value
	i.keyBuf = append(i.keyBuf[:0], key...)
	if forward {
		i.extendForward(key)
	} else {
		i.extendBackward(key)
	}
	return true
}

func (i *txnIter) fail() bool {
	i.state = txnFailed
	i.key, i.value = nil, nil
	return false
}

// startForward hands the scan under way to the transaction and starts
// another at lo, empty until the first move extends it.
func (i *txnIter) startForward(lo []byte) {
	i.flushSpan()
	i.spanOn, i.spanLoUnset = true, false
	i.spanLo = append(i.spanLo[:0], lo...)
	i.spanHi = append(i.spanHi[:0], lo...)
	i.spanHiInf = false
}

// startBackward is startForward for a scan that starts at hi (the end of
// the key space when hiInf) and moves down.
func (i *txnIter) startBackward(hi []byte, hiInf bool) {
	i.flushSpan()
	i.spanOn, i.spanLoUnset = true, true
	i.spanHi = append(i.spanHi[:0], hi...)
	i.spanHiInf = hiInf
}

// extendForward extends the span to take in key (nil: to the upper
// bound, the scan having run off the end).
func (i *txnIter) extendForward(key []byte) {
	if key == nil {
		if i.upper == nil {
			i.spanHiInf = true
			return
		}
		key = i.upper
		if !i.spanHiInf && bytes.Compare(key, i.spanHi) > 0 {
			i.spanHi = append(i.spanHi[:0], key...)
		}
		return
	}
	// [.., key] is [.., key+"\x00"): the next key after key.
	if !i.spanHiInf && bytes.Compare(key, i.spanHi) >= 0 {
		i.spanHi = append(append(i.spanHi[:0], key...), 0)
	}
}

// extendBackward extends the span down to key (nil: to the lower bound).
func (i *txnIter) extendBackward(key []byte) {
	entry := key != nil
	if !entry {
		key = i.lower // nil: the smallest key
	}
	if i.spanLoUnset || bytes.Compare(key, i.spanLo) < 0 {
		i.spanLo = append(i.spanLo[:0], key...)
		i.spanLoUnset = false
	}
	if entry && !i.spanHiInf && bytes.Compare(key, i.spanHi) >= 0 {
		// A backward move after a forward one in the same span can
		// stand past its end only at the key it turned at.
		i.spanHi = append(append(i.spanHi[:0], key...), 0)
	}
}

// flushSpan hands the scan under way, if any, to the transaction.
func (i *txnIter) flushSpan() {
	if !i.spanOn {
		return
	}
	i.spanOn = false
	if i.spanLoUnset {
		return
	}
	if i.t.done {
		return
	}
	i.t.addSpan(keySpan{lo: bytes.Clone(i.spanLo), hi: bytes.Clone(i.spanHi), hiInf: i.spanHiInf})
}

// close hands the last span to the transaction and unregisters.
func (i *txnIter) close() {
	i.flushSpan()
	i.t.iterClosed(i)
}

// errTxnIterDiscarded is the error of an iterator whose transaction was
// discarded while it was open.
var errTxnIterDiscarded = errors.Wrap(ErrTxnDone, "shale: the iterator's transaction was discarded")

// current returns the entry the iterator stands at (zero if none).
func (i *txnIter) current() txnWrite {
	if i.state != txnAtEntry {
		return txnWrite{}
	}
	return txnWrite{key: i.key, value: i.value}
}
