package wal

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"

	"github.com/golang/snappy"
)

// Reader reads the records of a log. It handles damage as LevelDB's log
// reader does, record for record:
//
//   - a bad checksum or an impossible length drops the rest of its block
//     (the length itself may be what is damaged);
//   - a MIDDLE or LAST fragment without a FIRST is dropped, and so is a
//     record cut short by damage, by zeroed space, or by a FULL or FIRST
//     fragment; fragments of two records are never joined;
//   - a fragment of unknown type is dropped;
//   - zeroed space (type 0, length 0, zero to the end of the block) is
//     skipped silently; a zero header followed by anything else is damage;
//   - reading resumes at the next FULL or FIRST fragment.
//
// The log ending inside a record is a torn tail: Next returns io.EOF and the
// OnDrop callback receives a Drop with TornTail set. So is a record whose
// checksum fails where the log is zero from inside that record to its end,
// zero blocks included, when the zeros start at a 512-byte boundary (a
// sector) or run on past the record: what a crash leaves when the file's
// new size reached the disk and the last sectors of its data did not (XFS,
// ext4 with data=writeback), and what a crash or a kill leaves in a log
// preallocated ahead of its appends (shale's own on Linux; LevelDB's old
// mmap-based writer's), whose last fragment may hold zeros anywhere. Here
// the reader departs
// from LevelDB's, which calls that damage and so fails a strict read of a
// log that a crash merely cut short. (Damage to the last record of a log
// that looks the same is taken for a torn tail too.) Errors of the
// underlying io.Reader are returned, wrapped, and are sticky.
//
// Memory use is one block plus the largest record read (a record read with
// NextReader needs no more than the block). A Reader is not safe for
// concurrent use.
type Reader struct {
	blk  blockReader
	opts readerOptions

	// Records are yielded when their first fragment starts in [start, end).
	start, end int64
	// foreign is set when the scan may be inside a record begun before
	// start (or before the first block read): its MIDDLE and LAST
	// fragments, and a torn tail within it, are not this reader's to report.
	foreign bool

	// cur is the last step of the physical scan; when unread is set, the
	// next read returns it again.
	cur    phys
	unread bool

	// The fragmented record under way: its first fragment is at fragOff,
	// its last good fragment ends at fragEnd, and fragBytes payload bytes
	// have been seen. cutErr says why the last one was cut short.
	fragOff, fragEnd int64
	fragBytes        int
	cutErr           error

	rec []byte // the fragmented record being assembled by Next
	dec []byte // a decompressed record or pack
	// packed holds the records of the pack being handed out, in order,
	// as slices of dec or of the pack's fragment.
	packed  [][]byte
	lastOff int64
	err     error // sticky: io.EOF, a *CorruptionError (strict) or a read error
	stream  stream
}

// NewReader returns a Reader of the log that r holds, from r's current
// position, which must be the start of the log: it counts as offset 0. To
// start elsewhere, use NewRangeReader.
func NewReader(r io.Reader, opts ...ReaderOption) *Reader {
	return newReader(r, 0, 0, math.MaxInt64, opts)
}

// NewRangeReader returns a Reader that yields exactly the records of the log
// in r whose first fragment starts at an offset in [start, end). It reads
// from the start of start's block (to find where fragments begin) and past
// end as far as the last such record reaches. Readers over adjacent ranges
// ([a, b), [b, c), ...) together yield every record that NewReader yields,
// exactly once and in order, whatever the split points.
//
// Drops are reported only when they begin in [start, end), so adjacent
// ranges do not report one stretch twice. Fragments at the start of the
// range that belong to a record begun before start are skipped silently.
func NewRangeReader(r io.ReaderAt, start, end int64, opts ...ReaderOption) *Reader {
	start = max(start, 0)
	base := start - start%BlockSize
	rd := newReader(io.NewSectionReader(r, base, math.MaxInt64-base), base, start, end, opts)
	rd.foreign = base > 0
	if end <= start {
		rd.err = io.EOF
	}
	return rd
}

func newReader(r io.Reader, base, start, end int64, opts []ReaderOption) *Reader {
	rd := &Reader{start: start, end: end, lastOff: -1}
	for _, o := range opts {
		o(&rd.opts)
	}
	rd.blk.init(r, base)
	return rd
}

// Next returns the next record. The slice is valid until the next call to
// Next or NextReader. At the end of the log, torn tail included, it returns
// io.EOF; in strict mode, damage ends reading with a *CorruptionError.
// Errors are sticky.
func (r *Reader) Next() ([]byte, error) {
	r.endStream()
	if len(r.packed) > 0 {
		return r.nextPacked(), nil
	}
	for r.startRecord() {
		off, span := r.cur.off, r.cur.span
		switch r.cur.typ {
		case FullType:
			r.lastOff = off
			return r.cur.data, nil
		case SnappyFullType:
			if rec, ok := r.decompress(r.cur.data, off, span); ok {
				r.lastOff = off
				return rec, nil
			}
			continue
		case PackedType, PackedSnappyType:
			if r.unpack(r.cur.typ, r.cur.data, off, span) {
				r.lastOff = off
				return r.nextPacked(), nil
			}
			continue
		}
		compressed := r.cur.typ == SnappyFirstType
		r.beginFragmented()
		r.rec = append(r.rec[:0], r.cur.data...)
		if !r.assemble() {
			continue
		}
		if !compressed {
			r.lastOff = off
			return r.rec, nil
		}
		if rec, ok := r.decompress(r.rec, off, r.fragEnd-off); ok {
			r.lastOff = off
			return rec, nil
		}
	}
	return nil, r.err
}

// nextPacked hands out the next record of the pack under way.
func (r *Reader) nextPacked() []byte {
	rec := r.packed[0]
	r.packed[0] = nil
	r.packed = r.packed[1:]
	return rec
}

// maxExpansion bounds what a snappy payload may decode to, relative to
// its size, before anything is allocated: snappy's densest encoding (a
// 3-byte copy of 64 bytes) expands about 21 times.
const maxExpansion = 24

// decompress returns the snappy payload data of the record at [off,
// off+span) decoded, or drops the record as damage (reporting it) and
// returns false. The checksums have held, so this is damage the writer
// made, or a foreign writer's.
func (r *Reader) decompress(data []byte, off, span int64) ([]byte, bool) {
	n, err := snappy.DecodedLen(data)
	switch {
	case err != nil:
		r.report(off, span, "compressed record: "+err.Error(), false)
		return nil, false
	case n > maxExpansion*len(data)+64:
		r.report(off, span, fmt.Sprintf("compressed record: %d bytes claim to decode to %d", len(data), n), false)
		return nil, false
	}
	dec, err := snappy.Decode(r.dec[:cap(r.dec)], data)
	if err != nil {
		r.report(off, span, "compressed record: "+err.Error(), false)
		return nil, false
	}
	r.dec = dec
	return dec, true
}

// unpack splits the pack at [off, off+span) into r.packed, or drops it as
// damage (reporting it) and returns false. An empty pack holds no record.
func (r *Reader) unpack(t RecordType, data []byte, off, span int64) bool {
	if t == PackedSnappyType {
		dec, ok := r.decompress(data, off, span)
		if !ok {
			return false
		}
		data = dec
	}
	r.packed = r.packed[:0]
	for len(data) > 0 {
		n, w := binary.Uvarint(data)
		if w <= 0 || n > uint64(len(data)-w) {
			clear(r.packed)
			r.packed = r.packed[:0]
			r.report(off, span, fmt.Sprintf("pack: malformed record %d", len(r.packed)), false)
			return false
		}
		end := w + int(n)
		r.packed = append(r.packed, data[w:end:end])
		data = data[end:]
	}
	if len(r.packed) == 0 {
		r.report(off, span, "pack: no record", false)
		return false
	}
	return true
}

// LastRecordOffset returns the offset in the log of the first fragment of
// the record last returned by Next or begun by NextReader, or -1 if there is
// none. It equals Writer.LastRecordOffset after that record was written.
func (r *Reader) LastRecordOffset() int64 {
	return r.lastOff
}

// assemble appends the fragments after the first to r.rec. It reports
// whether the record completed; if not, it was dropped or reading failed.
func (r *Reader) assemble() bool {
	for {
		data, st := r.continueRecord()
		switch st {
		case contMore:
			r.rec = append(r.rec, data...)
		case contLast:
			r.rec = append(r.rec, data...)
			return true
		default:
			return false
		}
	}
}

// read returns the next step of the physical scan.
func (r *Reader) read() *phys {
	if r.unread {
		r.unread = false
	} else {
		r.blk.next(&r.cur)
	}
	return &r.cur
}

// startRecord advances to the first fragment (FULL or FIRST) of the next
// record in range, left in r.cur, dropping what is not one. It returns false
// when r.err is set: io.EOF at the end of the log or of the range.
func (r *Reader) startRecord() bool {
	for r.err == nil {
		p := r.read()
		switch p.kind {
		case physFragment:
			if p.off >= r.end {
				r.err = io.EOF
				return false
			}
			if r.startFragment(p) {
				return true
			}
		case physZero:
			if p.off >= r.end {
				r.err = io.EOF
			}
		case physDamage:
			if p.off >= r.end {
				r.err = io.EOF
				return false
			}
			r.foreign = false // a sequential reader drops any record under way
			r.report(p.off, p.span, p.reason, false)
		case physTorn:
			if !r.foreign { // else it tears a record begun before start
				r.report(p.off, p.span, p.reason, true)
			}
			r.err = io.EOF
		case physEOF:
			r.err = io.EOF
		case physErr:
			r.err = p.err
		}
	}
	return false
}

// startFragment reports whether the checksum-verified fragment p begins a
// record to yield; if it does not, it is skipped or dropped. Fragments
// before start are only followed, to know whether what comes next continues
// a record begun before start.
func (r *Reader) startFragment(p *phys) bool {
	before := p.off < r.start
	switch p.typ {
	case FullType, SnappyFullType, PackedType, PackedSnappyType:
		r.foreign = false
		return !before
	case FirstType, SnappyFirstType:
		r.foreign = before
		return !before
	case MiddleType, LastType:
		if !r.foreign {
			r.report(p.off, p.span, "missing start of fragmented record", false)
		}
		r.foreign = r.foreign && p.typ == MiddleType
	default:
		r.foreign = false
		r.report(p.off, p.span, unknownType(p.typ), false)
	}
	return false
}

func unknownType(t RecordType) string {
	return fmt.Sprintf("unknown record type %d", t)
}

// beginFragmented notes that the FIRST fragment in r.cur starts a record.
func (r *Reader) beginFragmented() {
	r.fragOff = r.cur.off
	r.fragEnd = r.cur.off + r.cur.span
	r.fragBytes = len(r.cur.data)
}

// contStatus says what continueRecord found.
type contStatus uint8

const (
	contMore contStatus = iota // a MIDDLE fragment
	contLast                   // the LAST fragment: the record is complete
	contCut                    // the record was cut short and dropped; see cutErr
	contFail                   // reading ended: r.err is set
)

// continueRecord returns the next fragment of the fragmented record under
// way, or says why there is none.
func (r *Reader) continueRecord() ([]byte, contStatus) {
	p := r.read()
	switch p.kind {
	case physFragment:
		switch p.typ {
		case MiddleType, LastType:
			r.fragEnd = p.off + p.span
			r.fragBytes += len(p.data)
			if p.typ == LastType {
				return p.data, contLast
			}
			return p.data, contMore
		case FullType, FirstType, SnappyFullType, SnappyFirstType, PackedType, PackedSnappyType:
			r.unread = true // it starts the next record
			if r.fragBytes == 0 {
				// Old LevelDB writers could leave an empty FIRST at a
				// block's end and restart the record in the next block;
				// LevelDB drops it silently, and so do we.
				return nil, r.cut("", false, r.fragEnd)
			}
			return nil, r.cut("partial record without end", false, r.fragEnd)
		default:
			r.report(p.off, p.span, unknownType(p.typ), false)
			return nil, r.cut("partial record cut by "+unknownType(p.typ), false, r.fragEnd)
		}
	case physZero:
		return r.continueAfterZero()
	case physDamage:
		r.report(p.off, p.span, p.reason, false)
		return nil, r.cut("partial record cut by "+p.reason, false, r.fragEnd)
	case physTorn, physEOF:
		return nil, r.cut("incomplete record", true, p.off+p.span)
	}
	r.err = p.err
	return nil, contFail
}
