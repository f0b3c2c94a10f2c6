// Package dbiter turns an internal iterator (a merge of memtables and
// tables, keyed by internal keys) into the user's view of the database at
// one sequence number: each user key once, with the value of its newest
// version at or below that sequence number, and no deleted keys.
//
// Use: dbiter.New(merged, seq, lower, upper), then First, Last, SeekGE,
// SeekLT, Next and Prev, each returning whether the iterator stands at an
// entry; Key and Value; Err; Close. The public shale.Iterator wraps it.
//
// How it moves (LevelDB's DBIter): going forward the internal iterator
// stands at the newest visible version of the current user key, so Key and
// Value point into it. Going backward the newest version of a user key is
// the last one met, so the internal iterator ends up before all versions of
// the current user key and Key and Value are copies. Changing direction
// steps the internal iterator back over the versions in between.
//
// An Iter is not safe for concurrent use; distinct Iters are independent.
package dbiter

import (
	"github.com/shale-db/shale/internal/merging"
	"github.com/shale-db/shale/internal/rangedel"

	"github.com/cockroachdb/errors"
	"github.com/shale-db/shale/internal/ikey"
	"github.com/shale-db/shale/internal/iterator"
)

// ErrCorrupt is matched (with the standard errors.Is) by the error an Iter
// reports when the internal iterator yields a key that is not a valid
// internal key.
var ErrCorrupt = errors.New("dbiter: corruption")

type state int8

const (
	unpositioned state = iota
	forward            // at an entry; inner stands at it; key, value point into inner
	reverse            // at an entry; inner stands before its versions; key, value are copies
	atEnd              // moved forward past the last entry (or to UpperBound)
	atStart            // moved backward past the first entry (or to LowerBound)
	failed
	closed
)

// Iter is the user-level iterator. Key and Value return slices that stay
// valid until the next positioning call (First, Last, SeekGE, SeekLT, Next,
// Prev) or Close, and must not be modified.
//
// Next after an exhausted backward move (Prev or SeekLT returned false) is
// First, and Prev after an exhausted forward move is Last; Next and Prev
// before any positioning call return false. An error is sticky: every
// later positioning call returns false and Err keeps returning it.
type Iter struct {
	inner        iterator.Iterator
	seq          uint64
	lower, upper []byte // LowerBound (inclusive) and UpperBound (exclusive); nil: open
	state        state
	innerOK      bool // in reverse: inner stands at an entry (else it ran off the start)

	key, value []byte // the current entry, valid in forward and reverse
	keyBuf     []byte // in reverse: the current user key
	valBuf     []byte // in reverse: the current value
	skip       []byte // a user key whose remaining versions are hidden
	seekBuf    []byte // internal seek keys are built here
	err        error

	// rdels are the range deletions the iterator reads past (nil: none);
	// rdClasses the same by source class, for skipping (see
	// SetRangeDels). skipped is set once a forward pass skipped sources
	// ahead: a turn backward must then seek.
	rdels     rangedel.Spans
	rdClasses []RangeDelClass
	skipped   bool
	lifts     []merging.Lift
	floor     []byte
}

// RangeDelClass is the range deletions of one class of sources (the
// memtables, level 0, one deeper level) and the index of the first source
// of the inner merging iterator whose entries, for keys those deletions
// cover, are all older than them: the LSM's order (memtables over level 0
// over level 1 and so on, with a table's bounds covering its range
// deletions) guarantees it. A forward scan that meets a covered key moves
// those sources past the deletion's end at once, instead of reading every
// key it deletes.
type RangeDelClass struct {
	Spans    rangedel.Spans
	SkipFrom int
}

// skipper is what the merging iterator offers for that (see
// merging.Iter.SkipForward and SeekGELifted).
type skipper interface {
	SkipForward(from int, key []byte) bool
	SeekGELifted(key []byte, lifts []merging.Lift) bool
}

// seekForward positions inner at the first entry >= the internal key
// seek (nil: the first entry), lifting the sources that a range deletion
// covering ukey lets seek past its end (see RangeDelClass): a seek into a
// deleted range reads none of the blocks of the keys it deletes.
func (i *Iter) seekForward(ukey, seek []byte) bool {
	sk, can := i.inner.(skipper)
	if !can || i.rdClasses == nil {
		if seek == nil {
			return i.inner.First()
		}
		return i.inner.SeekGE(seek)
	}
	if ukey == nil {
		// First: the sources a class may skip hold no key below floor,
		// so a deletion covering floor covers their first keys.
		if ukey = i.floor; ukey == nil {
			return i.inner.First()
		}
	}
	i.lifts = i.lifts[:0]
	for _, c := range i.rdClasses {
		j := c.Spans.Find(ukey)
		if j < 0 || c.Spans[j].Visible(i.seq) == 0 {
			continue
		}
		i.lifts = append(i.lifts, merging.Lift{From: c.SkipFrom, Key: ikey.Make(c.Spans[j].End, ikey.MaxSeq, ikey.KindSeek)})
	}
	if len(i.lifts) == 0 {
		if seek == nil {
			return i.inner.First()
		}
		return i.inner.SeekGE(seek)
	}
	i.skipped = true
	return sk.SeekGELifted(seek, i.lifts)
}

// SetRangeDels gives the iterator the range deletions of its sources: all,
// fragmented together, and by class; and floor, a user key at or below
// every key of the sources any class may skip (nil if unknown). Call it
// after Init, before the first positioning call; the spans must not
// change.
func (i *Iter) SetRangeDels(all rangedel.Spans, classes []RangeDelClass, floor []byte) {
	i.rdels, i.rdClasses, i.floor = all, classes, floor
}

// coveredAt reports whether the version of ukey with sequence number seq
// is deleted by a range deletion the iterator sees.
func (i *Iter) coveredAt(ukey []byte, seq uint64) bool {
	return i.rdels != nil && seq < i.rdels.DeletedAt(ukey, i.seq)
}

// skipCovered moves the sources that a range deletion covering i.skip
// lets go past its end (see RangeDelClass). moved reports whether it
// moved any; ok whether the inner iterator still stands at an entry.
func (i *Iter) skipCovered() (moved, ok bool) {
	sk, can := i.inner.(skipper)
	if !can {
		return false, false
	}
	for _, c := range i.rdClasses {
		j := c.Spans.Find(i.skip)
		if j < 0 || c.Spans[j].Visible(i.seq) == 0 {
			continue
		}
		i.seekBuf = ikey.Append(i.seekBuf[:0], c.Spans[j].End, ikey.MaxSeq, ikey.KindSeek)
		ok, moved = sk.SkipForward(c.SkipFrom, i.seekBuf), true
	}
	if moved {
		i.skipped = true
	}
	return moved, ok
}

// New returns an iterator over the user keys of inner as of sequence number
// seq: versions with a larger sequence number are invisible. lower and upper
// bound the user keys returned (lower inclusive, upper exclusive, nil for no
// bound); New copies them. Seeks are clamped to the bounds, and the
// iterator stops at a bound without reading the internal iterator past it
// (beyond the one entry that shows the bound was crossed). The Iter owns
// inner: Close closes it.
func New(inner iterator.Iterator, seq uint64, lower, upper []byte) *Iter {
	i := new(Iter)
	i.Init(inner, seq, lower, upper)
	return i
}

// Init makes i the iterator New would return, reusing the buffers of its
// last use (an Iter that is closed, or zero).
func (i *Iter) Init(inner iterator.Iterator, seq uint64, lower, upper []byte) {
	*i = Iter{
		inner:   inner,
		seq:     min(seq, ikey.MaxSeq),
		lower:   cloneInto(i.lower, lower),
		upper:   cloneInto(i.upper, upper),
		keyBuf:  reuse(i.keyBuf),
		valBuf:  reuse(i.valBuf),
		skip:    reuse(i.skip),
		seekBuf: reuse(i.seekBuf),
	}
}

// maxReuse is the largest buffer Init keeps from an Iter's last use: one
// large value read in reverse should not stay with a pooled Iter.
const maxReuse = 64 << 10

func reuse(b []byte) []byte {
	if cap(b) > maxReuse {
		return nil
	}
	return b[:0]
}

// cloneInto copies b into buf's memory if it fits; nil stays nil, and an
// empty bound stays a bound (an empty UpperBound admits no key).
func cloneInto(buf, b []byte) []byte {
	if b == nil {
		return nil
	}
	if c := append(buf[:0:cap(buf)], b...); c != nil {
		return c
	}
	return []byte{}
}

// seekKey builds in seekBuf the internal key (ukey, seq, KindSeek); ukey
// may alias Key.
func (i *Iter) seekKey(ukey []byte, seq uint64) []byte {
	i.seekBuf = ikey.Append(i.seekBuf[:0], ukey, seq, ikey.KindSeek)
	return i.seekBuf
}

func (i *Iter) usable() bool { return i.state < failed }

func (i *Iter) fail(err error) bool {
	i.err, i.state, i.key, i.value = err, failed, nil, nil
	return false
}

func (i *Iter) corrupt(k []byte) bool {
	return i.fail(errors.Newf("dbiter: malformed internal key %x (%d bytes): %w",
		k[:min(len(k), 64)], len(k), ErrCorrupt))
}

// stopped ends a move on which inner returned false: an error, or the end.
func (i *Iter) stopped(s state) bool {
	if err := i.inner.Err(); err != nil {
		return i.fail(err)
	}
	i.state, i.key, i.value = s, nil, nil
	return false
}

// Key returns the current user key; see Iter for how long it stays valid.
func (i *Iter) Key() []byte { return i.key }

// Value returns the current value; see Iter for how long it stays valid.
func (i *Iter) Value() []byte { return i.value }

// Err returns the error that stopped the iterator: from the internal
// iterator, or one matching ErrCorrupt.
func (i *Iter) Err() error { return i.err }

// Close closes the internal iterator and returns Err, or else the internal
// iterator's Close error. Later calls return the same; positioning calls
// after Close return false.
func (i *Iter) Close() error {
	if i.state != closed {
		if err := i.inner.Close(); i.err == nil {
			i.err = err
		}
		i.state, i.key, i.value = closed, nil, nil
	}
	return i.err
}

// Bounds returns the iterator's bounds (nil: open). The slices are the
// iterator's own and must not be modified.
func (i *Iter) Bounds() (lower, upper []byte) { return i.lower, i.upper }
