package wal

import (
	"bytes"
	"encoding/binary"
	"io"

	"github.com/cockroachdb/errors"
)

// physKind classifies what blockReader.next found.
type physKind uint8

const (
	// physFragment is a fragment whose checksum verified.
	physFragment physKind = iota
	// physZero is zeroed space (type 0, length 0, all zero to the end of
	// the block): preallocated space, skipped silently.
	physZero
	// physDamage is a bad checksum or an impossible length; the rest of the
	// block is skipped.
	physDamage
	// physTorn is a header or payload cut off by the end of the log.
	physTorn
	// physEOF is the clean end of the log; off is the log's length.
	physEOF
	// physErr is a failure of the underlying reader.
	physErr
)

// phys is one step of the physical scan. [off, off+span) is the stretch of
// the log it covers; typ, length and data are set when the header is whole.
type phys struct {
	kind   physKind
	typ    RecordType
	length int
	data   []byte // the payload (physFragment only); valid until the next read
	off    int64
	span   int64
	reason string
	err    error
}

// blockReader splits a log into fragments, one block at a time. Each block
// is parsed from its start, independently of the blocks before it, so the
// fragments found from any block boundary are those a scan from the start of
// the log finds there.
type blockReader struct {
	r   io.Reader
	buf *[BlockSize]byte
	// buf[i:j] is the unparsed rest of the current block, whose first byte
	// is at log offset off. j < BlockSize only in the log's last block.
	i, j int
	off  int64
	eof  bool // r is exhausted; buf[:j] is the last block
	err  error
}

func (b *blockReader) init(r io.Reader, off int64) {
	b.r = r
	if b.buf == nil {
		b.buf = new([BlockSize]byte)
	}
	b.i, b.j, b.off = 0, 0, off
	b.eof, b.err = false, nil
}

// fill reads the next block. At most one short read occurs: the last block.
func (b *blockReader) fill() {
	b.off += int64(b.j)
	b.i, b.j = 0, 0
	n, err := io.ReadFull(b.r, b.buf[:])
	b.j = n
	switch err {
	case nil:
	case io.EOF, io.ErrUnexpectedEOF:
		b.eof = true
	default:
		b.err = errors.Wrapf(err, "wal: read block at offset %d", b.off)
	}
}

// next stores in p the next fragment, or the next stretch that yields none.
func (b *blockReader) next(p *phys) {
	for {
		if b.err != nil {
			*p = phys{kind: physErr, err: b.err, off: b.off + int64(b.i)}
			return
		}
		if b.j-b.i >= HeaderSize {
			b.parse(p)
			return
		}
		if !b.eof {
			// buf[i:j] is a full block's trailer, or empty: read on.
			b.fill()
			continue
		}
		if b.i < b.j && BlockSize-b.i >= HeaderSize {
			// The last block ends where a header must be.
			*p = phys{kind: physTorn, off: b.off + int64(b.i), span: int64(b.j - b.i), reason: "incomplete header"}
			b.i = b.j
			return
		}
		*p = phys{kind: physEOF, off: b.off + int64(b.j)}
		return
	}
}

// parse examines the header at buf[i:], of which at least HeaderSize bytes
// are present, and consumes the fragment or the stretch it spoils.
func (b *blockReader) parse(p *phys) {
	h := b.buf[b.i:b.j]
	length := int(binary.LittleEndian.Uint16(h[4:6]))
	typ := RecordType(h[6])
	*p = phys{typ: typ, length: length, off: b.off + int64(b.i)}
	end := b.i + HeaderSize + length
	switch {
	case end > BlockSize:
		b.spoil(p, physDamage, "bad record length")
	case end > b.j:
		// Only the last block is short: the log ends inside the payload.
		b.spoil(p, physTorn, "incomplete record")
	case typ == ZeroType && length == 0 && allZero(h):
		b.spoil(p, physZero, "zeroed space")
	case binary.LittleEndian.Uint32(h[0:4]) != checksum(h[6:HeaderSize+length]):
		// The zeros at the end of the block start at zeroFrom, and at the
		// first sector boundary from there, sector (log offsets).
		zeroFrom := p.off + int64(len(bytes.TrimRight(h, "\x00")))
		sector := (zeroFrom + sectorSize - 1) / sectorSize * sectorSize
		fragEnd := p.off + int64(HeaderSize+length)
		zeroAfter := allZero(h[HeaderSize+length:])
		b.spoil(p, physDamage, "checksum mismatch")
		if (zeroAfter || zeroFrom < fragEnd) && b.restIsZero() {
			logEnd := b.off + int64(b.j)
			if (zeroFrom < fragEnd && sector < fragEnd) || (zeroAfter && logEnd > fragEnd) {
				// The fragment was never completely written: the log
				// is zero from a sector inside it to its end, what a
				// crash leaves when the file's size reached the disk
				// before its data; or the log runs on past it in
				// nothing but zeros, what a crash or a kill leaves in
				// a log preallocated ahead of its appends (shale's on
				// Linux, LevelDB's old mmap-based writer's), whose
				// fragment may then hold zeros anywhere.
				p.kind, p.reason = physTorn, "incomplete record"
				p.span = logEnd - p.off
			}
		}
	default:
		p.kind = physFragment
		p.data = h[HeaderSize : HeaderSize+length : HeaderSize+length]
		p.span = int64(HeaderSize + length)
		b.i = end
	}
}

// spoil consumes the rest of the block as one stretch of the given kind: a
// damaged header's length cannot be trusted to find the next fragment.
func (b *blockReader) spoil(p *phys, kind physKind, reason string) {
	p.kind = kind
	p.reason = reason
	p.span = int64(b.j - b.i)
	b.i = b.j
}

// sectorSize is the unit in which file systems write data: a crash that
// leaves a file's size on disk before its data leaves zeros from a
// multiple of it.
const sectorSize = 512

// restIsZero reads on past the current block, which must be consumed, as
// long as the blocks it reads are all zero. It reports whether it reached
// the end of the log that way. If not, the block that holds data is the
// current one, to be parsed from its start, or b.err is set. The zero
// blocks it passed are skipped, as next would skip them silently.
func (b *blockReader) restIsZero() bool {
	for !b.eof {
		b.fill()
		if b.err != nil || !allZero(b.buf[:b.j]) {
			return false
		}
		b.i = b.j
	}
	return true
}

// allZero reports whether every byte of b is zero.
func allZero(b []byte) bool {
	for len(b) >= 8 {
		if binary.LittleEndian.Uint64(b) != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
