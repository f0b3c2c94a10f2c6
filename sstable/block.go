package sstable

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/shale-db/shale/internal/ikey"
)

// blockIter iterates over the entries of one decoded block (data, index or
// metaindex). Every offset it reads from the block is checked before use:
// damaged bytes end the iteration with an ErrCorrupt error, never a panic.
//
// Key aliases an internal buffer and Value aliases the block; both are
// valid until the next positioning call.
type blockIter struct {
	data        []byte
	restartsOff int // offset of the restart array: entries are data[:restartsOff]
	numRestarts int
	internal    bool // keys are internal keys: compare with ikey.Compare

	offset     int // offset of the current entry
	next       int // offset of the entry after it
	restartIdx int // restart interval that holds the current entry
	key        []byte
	spare      []byte // scratch key buffer for SeekLT
	val        []byte
	valid      bool
	err        error
	touched    byte // see touchAhead

	// behind lists the entries of the current restart interval before the
	// current one, oldest first, as the last scan from a restart point
	// found them, with their keys end to end in behindKeys: Prev takes the
	// predecessor from it instead of rescanning the interval, so that a
	// backward pass over a block decodes each entry about twice rather than
	// about half an interval's worth of entries each step.
	behind     []behindEntry
	behindKeys []byte

	file     string // for error messages
	blockOff int64
}

// maxKeptBehind is the most bytes of behind or behindKeys that init keeps
// for the next block: a restart interval of long keys, read once, should
// not stay with a pooled iterator for good.
const maxKeptBehind = 64 << 10

// behindEntry is a position of blockIter.behind.
type behindEntry struct {
	offset, next, restartIdx int
	valOff                   int // the value is data[valOff:next]
	keyEnd                   int // the key ends at behindKeys[keyEnd]
}

// init points the iterator at block data, validating its restart array.
// internal says whether keys are internal keys (data and index blocks) or
// raw bytes ordered bytewise (the metaindex).
func (b *blockIter) init(data []byte, internal bool, file string, blockOff int64) error {
	*b = blockIter{key: b.key[:0], spare: b.spare[:0],
		behind: emptied(b.behind, maxKeptBehind), behindKeys: emptied(b.behindKeys, maxKeptBehind),
		internal: internal, file: file, blockOff: blockOff}
	if len(data) < 4 {
		return b.corrupt("block of %d bytes is too short", len(data))
	}
	n := binary.LittleEndian.Uint32(data[len(data)-4:])
	if uint64(n) > uint64(len(data)-4)/4 {
		return b.corrupt("block claims %d restart points in %d bytes", n, len(data))
	}
	b.data = data
	b.numRestarts = int(n)
	b.restartsOff = len(data) - 4 - 4*int(n)
	if n == 0 && b.restartsOff != 0 {
		return b.corrupt("block without restart points has entries")
	}
	if r := binary.LittleEndian.Uint32(data[b.restartsOff:]); n > 0 && r != 0 {
		// The first entry is always a restart point: one elsewhere would
		// hide the entries before it.
		return b.corrupt("restart point 0 is at %d, not 0", r)
	}
	b.offset, b.next = b.restartsOff, b.restartsOff
	return nil
}

// corrupt records and returns an ErrCorrupt error about this block.
func (b *blockIter) corrupt(format string, args ...any) error {
	b.err = &TableError{File: b.file, Offset: b.blockOff, Reason: fmt.Sprintf(format, args...), Err: ErrCorrupt}
	b.valid = false
	return b.err
}

func (b *blockIter) compare(x, y []byte) int {
	if b.internal {
		return ikey.Compare(x, y)
	}
	return bytes.Compare(x, y)
}

// restart returns restart point i, which the caller has bounded by
// numRestarts; a point beyond the entries is reported as corruption.
func (b *blockIter) restart(i int) (int, bool) {
	off := int(binary.LittleEndian.Uint32(b.data[b.restartsOff+4*i:]))
	if off > b.restartsOff {
		b.corrupt("restart point %d at %d is past the entries (%d)", i, off, b.restartsOff)
		return 0, false
	}
	return off, true
}

// decodeHeader decodes the three lengths of the entry at off and returns
// the offset of its key delta. ok is false (and the error recorded) if the
// entry does not fit before the restart array.
func (b *blockIter) decodeHeader(off int) (shared, unshared, vlen, p int, ok bool) {
	end := b.restartsOff
	if end-off >= 3 && b.data[off]|b.data[off+1]|b.data[off+2] < 0x80 {
		// Fast path: three one-byte varints.
		shared, unshared, vlen, p = int(b.data[off]), int(b.data[off+1]), int(b.data[off+2]), off+3
	} else {
		var v [3]uint64
		p = off
		for i := range v {
			x, n := binary.Uvarint(b.data[p:end])
			if n <= 0 || x > uint64(end) {
				b.corrupt("bad entry header at block offset %d", off)
				return 0, 0, 0, 0, false
			}
			v[i], p = x, p+n
		}
		shared, unshared, vlen = int(v[0]), int(v[1]), int(v[2])
	}
	if unshared > end-p || vlen > end-p-unshared {
		b.corrupt("entry at block offset %d overruns the block", off)
		return 0, 0, 0, 0, false
	}
	return shared, unshared, vlen, p, true
}

// parseNext decodes the entry at b.next into the current position.
func (b *blockIter) parseNext() bool {
	b.offset = b.next
	if b.offset >= b.restartsOff {
		if b.restartIdx+1 < b.numRestarts {
			// Every restart point starts an entry, so all have been passed.
			b.corrupt("restart point %d is not at an entry", b.restartIdx+1)
			return false
		}
		b.valid = false
		return false
	}
	for b.restartIdx+1 < b.numRestarts {
		r, ok := b.restart(b.restartIdx + 1)
		if !ok {
			return false
		}
		if r > b.offset {
			break
		}
		if r < b.offset {
			// Scanning from a restart point, every later one must start
			// an entry we reach: one we stepped over is mid-entry or out
			// of order, and reading back from it would give other keys.
			b.corrupt("restart point %d at %d is not at an entry boundary", b.restartIdx+1, r)
			return false
		}
		b.restartIdx++
	}
	shared, unshared, vlen, p, ok := b.decodeHeader(b.offset)
	if !ok {
		return false
	}
	if shared > len(b.key) {
		b.corrupt("entry at block offset %d shares %d bytes of a %d-byte key", b.offset, shared, len(b.key))
		return false
	}
	if r, _ := b.restart(b.restartIdx); r == b.offset && shared != 0 {
		b.corrupt("restart entry at block offset %d shares a prefix", b.offset)
		return false
	}
	b.key = append(b.key[:shared], b.data[p:p+unshared]...)
	if b.internal && !ikey.Valid(b.key) {
		b.corrupt("entry at block offset %d has a %d-byte internal key", b.offset, len(b.key))
		return false
	}
	b.val = b.data[p+unshared : p+unshared+vlen]
	b.next = p + unshared + vlen
	b.valid = true
	return true
}

// seekToRestart positions the iterator just before restart point i.
func (b *blockIter) seekToRestart(i int) bool {
	off, ok := b.restart(i)
	if !ok {
		return false
	}
	b.key = b.key[:0]
	b.restartIdx = i
	b.next = off
	return true
}

// restartKey returns the full key stored at restart point i, aliasing the
// block.
func (b *blockIter) restartKey(i int) ([]byte, bool) {
	off, ok := b.restart(i)
	if !ok {
		return nil, false
	}
	if off == b.restartsOff {
		b.corrupt("restart point %d has no entry", i)
		return nil, false
	}
	shared, unshared, _, p, ok := b.decodeHeader(off)
	if !ok {
		return nil, false
	}
	if shared != 0 {
		b.corrupt("restart entry at block offset %d shares a prefix", off)
		return nil, false
	}
	k := b.data[p : p+unshared]
	if b.internal && !ikey.Valid(k) {
		b.corrupt("entry at block offset %d has a %d-byte internal key", off, len(k))
		return nil, false
	}
	return k, true
}

// maxTouched bounds the bytes of entries a seek touches ahead (touchAhead).
const maxTouched = 8 << 10

// touchAhead loads one byte of every cache line of data[from:to], at most
// maxTouched bytes of it, before a seek reads the entries there one after
// another. A block found in the block cache is usually not in the
// processor's caches, and each entry's offset depends on the one before it,
// so a scan waits for memory once or twice an entry; these loads depend on
// nothing, so the processor has them all in flight at once.
// BenchmarkGetCached: 2.78 µs a Get before, 1.90 after. The bytes loaded
// are kept only so that the loads stay.
func (b *blockIter) touchAhead(from, to int) {
	to = min(to, from+maxTouched)
	d := b.data[from:to]
	var s byte
	off := 0
	for ; off+256 <= len(d); off += 256 {
		s |= d[off] | d[off+64] | d[off+128] | d[off+192]
	}
	for ; off < len(d); off += 64 {
		s |= d[off]
	}
	b.touched = s
}

// seekStart positions the iterator just before the restart interval that
// holds the first entry >= target, if there is one, after touching the
// entries a seek will read: the whole block if it is small, else that
// interval.
func (b *blockIter) seekStart(target []byte) bool {
	small := b.restartsOff <= maxTouched
	if small {
		b.touchAhead(0, b.restartsOff)
	}
	i, ok := b.searchRestarts(target)
	if !ok || !b.seekToRestart(i) {
		return false
	}
	if !small {
		end := b.restartsOff
		if i+1 < b.numRestarts {
			if r, ok := b.restart(i + 1); ok {
				end = min(end, r)
			}
		}
		b.touchAhead(b.next, max(end, b.next))
	}
	return true
}

// searchRestarts returns the last restart point whose key is < target, or
// 0 if there is none.
func (b *blockIter) searchRestarts(target []byte) (int, bool) {
	lo, hi := 0, b.numRestarts-1
	for lo < hi {
		mid := (lo + hi + 1) / 2
		k, ok := b.restartKey(mid)
		if !ok {
			return 0, false
		}
		if b.compare(k, target) < 0 {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo, true
}

// First moves to the first entry.
func (b *blockIter) First() bool {
	if b.err != nil || b.numRestarts == 0 || !b.seekToRestart(0) {
		b.valid = false
		return false
	}
	return b.parseNext()
}

// Last moves to the last entry.
func (b *blockIter) Last() bool {
	if b.err != nil || b.numRestarts == 0 || !b.seekToRestart(b.numRestarts-1) {
		b.valid = false
		return false
	}
	if b.next == b.restartsOff && b.restartsOff > 0 {
		b.corrupt("last restart point has no entry")
		return false
	}
	b.clearBehind()
	for b.parseNext() {
		if b.next >= b.restartsOff {
			return true
		}
		b.pushBehind()
	}
	return false
}

// clearBehind empties behind.
func (b *blockIter) clearBehind() {
	b.behind, b.behindKeys = b.behind[:0], b.behindKeys[:0]
}

// pushBehind appends the current entry to behind.
func (b *blockIter) pushBehind() {
	b.behindKeys = append(b.behindKeys, b.key...)
	b.behind = append(b.behind, behindEntry{offset: b.offset, next: b.next, restartIdx: b.restartIdx,
		valOff: b.next - len(b.val), keyEnd: len(b.behindKeys)})
}

// popBehind moves to the last entry of behind, if it is the one right
// before the current entry, and reports whether it was.
func (b *blockIter) popBehind() bool {
	n := len(b.behind)
	if n == 0 || b.behind[n-1].next != b.offset {
		return false
	}
	e := b.behind[n-1]
	start := 0
	if n > 1 {
		start = b.behind[n-2].keyEnd
	}
	b.key = append(b.key[:0], b.behindKeys[start:e.keyEnd]...)
	b.behind, b.behindKeys = b.behind[:n-1], b.behindKeys[:start]
	b.offset, b.next, b.restartIdx, b.val = e.offset, e.next, e.restartIdx, b.data[e.valOff:e.next]
	return true
}

// SeekGE moves to the first entry whose key is >= target.
func (b *blockIter) SeekGE(target []byte) bool {
	if b.err != nil || b.numRestarts == 0 {
		return false
	}
	if !b.seekStart(target) {
		return false
	}
	for b.parseNext() {
		if b.compare(b.key, target) >= 0 {
			return true
		}
	}
	return false
}

// SeekLT moves to the last entry whose key is < target.
func (b *blockIter) SeekLT(target []byte) bool {
	if b.err != nil || b.numRestarts == 0 {
		return false
	}
	if !b.seekStart(target) {
		return false
	}
	if !b.parseNext() || b.compare(b.key, target) >= 0 {
		b.valid = false
		return false
	}
	for {
		// Remember the current entry, which is < target, and look at the
		// next one.
		offset, next, ridx, val := b.offset, b.next, b.restartIdx, b.val
		b.spare = append(b.spare[:0], b.key...)
		if !b.parseNext() && b.err != nil {
			return false
		}
		if !b.valid || b.compare(b.key, target) >= 0 {
			b.key, b.spare = b.spare, b.key
			b.offset, b.next, b.restartIdx, b.val = offset, next, ridx, val
			b.valid = true
			return true
		}
	}
}

// Next moves to the following entry.
func (b *blockIter) Next() bool {
	if !b.valid {
		return false
	}
	return b.parseNext()
}

// Prev moves to the preceding entry: it rescans from the restart point
// before the current entry.
func (b *blockIter) Prev() bool {
	if !b.valid {
		return false
	}
	if b.popBehind() {
		return true
	}
	orig := b.offset
	for {
		r, ok := b.restart(b.restartIdx)
		if !ok {
			return false
		}
		if r < orig {
			break
		}
		if b.restartIdx == 0 {
			b.valid = false
			return false
		}
		b.restartIdx--
	}
	if !b.seekToRestart(b.restartIdx) {
		return false
	}
	b.clearBehind()
	for b.parseNext() {
		if b.next == orig {
			return true
		}
		if b.next > orig {
			b.corrupt("restart point %d is not at an entry boundary", b.restartIdx)
			return false
		}
		b.pushBehind()
	}
	return false
}
