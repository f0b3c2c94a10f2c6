package batchrepr

import (
	"fmt"

	"github.com/shale-db/shale/internal/ikey"
)

// Reader decodes the entries of one repr in order. Its error is sticky:
// once Next has returned false, it keeps returning false.
type Reader struct {
	repr  []byte
	off   int    // repr[off:] is the undecoded rest; off is where the next entry starts
	count uint32 // entries the header promises
	n     uint32 // entries returned so far
	err   error
}

// NewReader returns a Reader over repr. It does not copy repr; the key and
// value slices that Next returns alias it (with their capacity cut to their
// length, so appending to them cannot overwrite repr).
func NewReader(repr []byte) *Reader {
	r := &Reader{repr: repr}
	r.init()
	return r
}

func (r *Reader) init() {
	if len(r.repr) < HeaderLen {
		r.err = corrupt(fmt.Sprintf("batch of %d bytes is shorter than its %d-byte header", len(r.repr), HeaderLen), 0)
		return
	}
	r.off = HeaderLen
	r.count = Count(r.repr)
	if seq := Seq(r.repr); r.count > 0 && seq > ikey.MaxSeq-uint64(r.count-1) {
		r.err = corrupt(fmt.Sprintf("sequence number %d + count %d exceeds the maximum", seq, r.count), 0)
	}
}

// Seq returns the sequence number in the header (0 if there is none).
func (r *Reader) Seq() uint64 { return Seq(r.repr) }

// Count returns the entry count in the header (0 if there is none).
func (r *Reader) Count() uint32 { return Count(r.repr) }

// Err returns the error that stopped the Reader, or nil if it stopped at
// the end of a well-formed batch (or has not stopped).
func (r *Reader) Err() error { return r.err }

// Next decodes the next entry. ok is false at the end of the batch or on
// corruption; Err tells which. For a deletion value is nil; for a range
// deletion key is the start and value the end. A batch is only
// known to be well formed once Next has returned false with a nil Err:
// callers that must not act on part of a damaged batch call Validate first.
func (r *Reader) Next() (kind ikey.Kind, key, value []byte, ok bool) {
	if r.err != nil {
		return 0, nil, nil, false
	}
	if r.n == r.count {
		if r.off != len(r.repr) {
			r.err = corrupt(fmt.Sprintf("%d bytes follow the %d entries the header counts", len(r.repr)-r.off, r.count), r.off)
		}
		return 0, nil, nil, false
	}
	if r.off == len(r.repr) {
		r.err = corrupt(fmt.Sprintf("header counts %d entries, batch ends after %d", r.count, r.n), r.off)
		return 0, nil, nil, false
	}
	start := r.off
	tag := r.repr[start]
	off := start + 1
	switch tag {
	case TagPut, TagDelete, TagRangeDelete:
	default:
		r.err = corrupt(fmt.Sprintf("unknown tag %d in entry %d", tag, r.n), start)
		return 0, nil, nil, false
	}
	key, off, r.err = r.lengthPrefixed(off, "key")
	switch {
	case r.err != nil:
	case tag == TagPut:
		value, off, r.err = r.lengthPrefixed(off, "value")
	case tag == TagRangeDelete:
		value, off, r.err = r.lengthPrefixed(off, "range end")
	}
	if r.err != nil {
		return 0, nil, nil, false
	}
	r.off = off
	r.n++
	return ikey.Kind(tag), key, value, true
}

// lengthPrefixed decodes a varint32 length at off and the bytes it counts.
// It returns the bytes and the offset after them.
func (r *Reader) lengthPrefixed(off int, what string) ([]byte, int, error) {
	l, n := uvarint32(r.repr[off:])
	switch {
	case n == 0:
		return nil, 0, corrupt(fmt.Sprintf("truncated %s length in entry %d", what, r.n), off)
	case n < 0:
		return nil, 0, corrupt(fmt.Sprintf("malformed %s length in entry %d", what, r.n), off)
	}
	off += n
	if uint64(l) > uint64(len(r.repr)-off) {
		return nil, 0, corrupt(fmt.Sprintf("%s length %d in entry %d runs past the end (%d bytes left)", what, l, r.n, len(r.repr)-off), off-n)
	}
	end := off + int(l)
	return r.repr[off:end:end], end, nil
}

// uvarint32 decodes a minimal varint of at most 32 bits from the start of
// b. It returns the value and the bytes read; n == 0 if b ends inside the
// varint, n < 0 if the varint is too long, overflows 32 bits or is not
// minimal (ends in a zero byte after the first).
func uvarint32(b []byte) (v uint32, n int) {
	var x uint64
	for i := 0; i < maxVarint32Len; i++ {
		if i == len(b) {
			return 0, 0
		}
		c := b[i]
		x |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			if (c == 0 && i > 0) || x > 1<<32-1 {
				return 0, -1
			}
			return uint32(x), i + 1
		}
	}
	return 0, -1
}

// Validate decodes all of repr and returns its entry count, or the first
// corruption (matching ErrCorrupt). It allocates nothing unless it fails.
func Validate(repr []byte) (count uint32, err error) { return validate(repr, false) }

// ValidateCommitted is Validate for a batch that went through a commit (a
// WAL record): a range deletion there always has an end (the commit gives
// one to a Batch's open-ended deletion), so one without is damage too.
func ValidateCommitted(repr []byte) (count uint32, err error) { return validate(repr, true) }

// validate is Validate, and with committed ValidateCommitted, in one pass.
func validate(repr []byte, committed bool) (count uint32, err error) {
	r := Reader{repr: repr}
	r.init()
	var openEnd error // the first range deletion with no end, if committed
	for {
		kind, _, v, ok := r.Next()
		if !ok {
			break
		}
		if committed && kind == ikey.KindRangeDelete && len(v) == 0 && openEnd == nil {
			openEnd = corrupt(fmt.Sprintf("range deletion in entry %d has no end", r.n-1), r.off)
		}
	}
	switch {
	case r.err != nil: // damage to the encoding comes first
		return 0, r.err
	case openEnd != nil:
		return 0, openEnd
	}
	return r.count, nil
}
