package dbiter

import (
	"bytes"

	"github.com/shale-db/shale/internal/ikey"
)

// First moves to the first visible user key >= LowerBound.
func (i *Iter) First() bool {
	if !i.usable() {
		return false
	}
	i.skipped = false
	return i.findNext(i.innerFirst(), false)
}

func (i *Iter) innerFirst() bool {
	if i.lower != nil {
		return i.seekForward(i.lower, i.seekKey(i.lower, i.seq))
	}
	return i.seekForward(nil, nil)
}

// Last moves to the last visible user key < UpperBound.
func (i *Iter) Last() bool {
	if !i.usable() {
		return false
	}
	if i.upper != nil {
		return i.findPrev(i.inner.SeekLT(i.seekKey(i.upper, ikey.MaxSeq)))
	}
	return i.findPrev(i.inner.Last())
}

// SeekGE moves to the first visible user key >= ukey, clamped to the bounds.
func (i *Iter) SeekGE(ukey []byte) bool {
	if !i.usable() {
		return false
	}
	if i.lower != nil && bytes.Compare(ukey, i.lower) < 0 {
		ukey = i.lower
	}
	if i.upper != nil && bytes.Compare(ukey, i.upper) >= 0 {
		return i.stopped(atEnd)
	}
	i.skipped = false
	return i.findNext(i.seekForward(ukey, i.seekKey(ukey, i.seq)), false)
}

// SeekLT moves to the last visible user key < ukey, clamped to the bounds.
func (i *Iter) SeekLT(ukey []byte) bool {
	if !i.usable() {
		return false
	}
	if i.upper != nil && bytes.Compare(ukey, i.upper) > 0 {
		ukey = i.upper
	}
	if i.lower != nil && bytes.Compare(ukey, i.lower) <= 0 {
		return i.stopped(atStart)
	}
	// Every version of ukey sorts at or after (ukey, MaxSeq, KindSeek).
	return i.findPrev(i.inner.SeekLT(i.seekKey(ukey, ikey.MaxSeq)))
}

// Next moves to the next visible user key.
func (i *Iter) Next() bool {
	switch i.state {
	case forward:
		i.skip = append(i.skip[:0], i.key...)
		return i.findNext(i.inner.Next(), true)
	case reverse:
		// inner stands before every version of the current key (or ran
		// off the start); step onto them and skip them all.
		i.skip = append(i.skip[:0], i.key...)
		if i.innerOK {
			return i.findNext(i.inner.Next(), true)
		}
		return i.findNext(i.innerFirst(), true)
	case atStart:
		return i.First()
	}
	return false
}

// Prev moves to the previous visible user key.
func (i *Iter) Prev() bool {
	switch i.state {
	case forward:
		if i.skipped {
			// Sources were skipped ahead of the current key (see
			// skipCovered): one Prev of each would not land before it.
			i.skipped = false
			return i.findPrev(i.inner.SeekLT(i.seekKey(i.key, ikey.MaxSeq)))
		}
		// inner stands at the current key's newest visible version; the
		// entries just before it are its newer versions, which findPrev
		// skips as invisible.
		return i.findPrev(i.inner.Prev())
	case reverse:
		return i.findPrev(i.innerOK)
	case atEnd:
		return i.Last()
	}
	return false
}

// findNext moves forward from inner's entry (if ok) to the newest visible
// version of the next user key that is live. If skipping, versions of user
// keys <= i.skip are hidden.
func (i *Iter) findNext(ok, skipping bool) bool {
	for ok {
		ukey, seq, kind, valid := ikey.Parse(i.inner.Key())
		if !valid {
			return i.corrupt(i.inner.Key())
		}
		if i.upper != nil && bytes.Compare(ukey, i.upper) >= 0 {
			i.state, i.key, i.value = atEnd, nil, nil
			return false
		}
		if seq > i.seq || (skipping && bytes.Compare(ukey, i.skip) <= 0) {
			ok = i.inner.Next()
			continue
		}
		if kind == ikey.KindDelete || i.coveredAt(ukey, seq) {
			i.skip = append(i.skip[:0], ukey...)
			skipping = true
			if kind != ikey.KindDelete {
				if moved, stillOK := i.skipCovered(); moved {
					ok = stillOK
					continue
				}
			}
			ok = i.inner.Next()
			continue
		}
		i.state, i.key, i.value = forward, ukey, i.inner.Value()
		return true
	}
	return i.stopped(atEnd)
}

// findPrev moves backward from inner's entry (if ok). Versions of a user key
// come oldest first this way, so it keeps a copy of the latest visible one
// and stops at the first entry of a smaller user key once the kept version
// is a put: that entry is left unread, for the next call.
func (i *Iter) findPrev(ok bool) bool {
	i.skipped = false // every source was positioned anew, or moves backward
	live := false     // keyBuf, valBuf hold a put that no newer visible version hides
	for ; ok; ok = i.inner.Prev() {
		ukey, seq, kind, valid := ikey.Parse(i.inner.Key())
		if !valid {
			return i.corrupt(i.inner.Key())
		}
		if i.lower != nil && bytes.Compare(ukey, i.lower) < 0 {
			break
		}
		if seq > i.seq {
			continue
		}
		if live && bytes.Compare(ukey, i.keyBuf) < 0 {
			break
		}
		live = kind != ikey.KindDelete && !i.coveredAt(ukey, seq)
		if live {
			i.keyBuf = append(i.keyBuf[:0], ukey...)
			i.valBuf = append(i.valBuf[:0], i.inner.Value()...)
		}
	}
	i.innerOK = ok
	if !ok {
		if err := i.inner.Err(); err != nil {
			return i.fail(err)
		}
	}
	if !live {
		i.state, i.key, i.value = atStart, nil, nil
		return false
	}
	i.state, i.key, i.value = reverse, i.keyBuf, i.valBuf
	return true
}
