package sstable

import (
	"encoding/binary"
	"math/bits"
)

// This file writes the snappy block format (what github.com/golang/snappy
// decodes, and LevelDB's C++ snappy): a varint of the decoded length, then
// literals and back-references. The matcher is snappy's (a table of the last
// position of each 4-byte hash, looked up at a stride that grows across
// bytes that find no match) with one addition: a match found is extended
// backwards over the bytes before it that also repeat. snappy's encoder
// does not, and the stride lands past the start of many repeats: in
// db_bench's values, whose second half repeats the first, every value paid
// one literal byte for it, 1.6% of a table.

const (
	// snappyChunk is the most input one pass of the matcher covers: a
	// back-reference's offset must fit in 16 bits.
	snappyChunk = 1 << 16
	// snappyMargin is how many bytes before the end of a chunk the matcher
	// stops looking for matches (it loads 8 bytes at a time).
	snappyMargin = 15
	// snappyMinMatchInput is the shortest chunk worth matching; shorter ones
	// are one literal.
	snappyMinMatchInput = snappyMargin + 2
	// snappyMaxTableBits bounds the hash table: 16384 uint16 positions.
	snappyMaxTableBits = 14

	tagLiteral = 0x00
	tagCopy1   = 0x01
	tagCopy2   = 0x02
)

// snappyMaxLen is the most bytes snappyEncode writes for n input bytes.
func snappyMaxLen(n int) int { return 32 + n + n/6 }

// snappyEncoder holds the hash table across calls, so that an encoding
// clears only the part of it the input uses.
type snappyEncoder struct {
	table [1 << snappyMaxTableBits]uint16
}

// encode returns the snappy encoding of src, in dst if it has room.
func (e *snappyEncoder) encode(dst, src []byte) []byte {
	if n := snappyMaxLen(len(src)); cap(dst) < n {
		dst = make([]byte, n)
	} else {
		dst = dst[:n]
	}
	d := binary.PutUvarint(dst, uint64(len(src)))
	for len(src) > 0 {
		p := src
		if len(p) > snappyChunk {
			p = p[:snappyChunk]
		}
		src = src[len(p):]
		if len(p) < snappyMinMatchInput {
			d += emitLiteral(dst[d:], p)
		} else {
			d += e.encodeChunk(dst[d:], p)
		}
	}
	return dst[:d]
}

// snappyHash hashes 4 bytes to a table index: shift is at least
// 32-snappyMaxTableBits, and the mask lets the compiler drop the bounds check.
func snappyHash(u uint32, shift uint) uint32 {
	return (u * 0x1e35a7bd) >> (shift & 31) & (1<<snappyMaxTableBits - 1)
}

func load32(b []byte, i int) uint32 { return binary.LittleEndian.Uint32(b[i : i+4]) }

func load64(b []byte, i int) uint64 { return binary.LittleEndian.Uint64(b[i : i+8]) }

// encodeChunk encodes src, snappyMinMatchInput to snappyChunk bytes long,
// into dst and returns the bytes written.
func (e *snappyEncoder) encodeChunk(dst, src []byte) (d int) {
	tableBits := uint(8)
	for tableBits < snappyMaxTableBits && 1<<tableBits < len(src) {
		tableBits++
	}
	shift := 32 - tableBits
	table := &e.table
	clear(table[:1<<tableBits])

	sLimit := len(src) - snappyMargin
	nextEmit := 0
	s := 1
	for {
		candidate := 0
		var found bool
		if s, candidate, found = findMatch(src, table, shift, s, sLimit); !found {
			goto remainder
		}
		// The stride may have stepped past where the repeat begins.
		for s > nextEmit && candidate > 0 && src[s-1] == src[candidate-1] {
			s--
			candidate--
		}
		if s > nextEmit {
			d += emitLiteral(dst[d:], src[nextEmit:s])
		}

		// Emit the match, then look for another starting right after it
		// before going back to stepping through literals.
		for {
			base := s
			s = extendMatch(src, candidate+4, s+4)
			d += emitCopy(dst[d:], base-candidate, s-base)
			nextEmit = s
			if s >= sLimit {
				goto remainder
			}
			x := load64(src, s-1)
			table[snappyHash(uint32(x), shift)] = uint16(s - 1)
			h := snappyHash(uint32(x>>8), shift)
			candidate = int(table[h])
			table[h] = uint16(s)
			if uint32(x>>8) != load32(src, candidate) {
				s++
				break
			}
		}
	}
remainder:
	if nextEmit < len(src) {
		d += emitLiteral(dst[d:], src[nextEmit:])
	}
	return d
}

// findMatch looks for a 4-byte match from s on, at every byte at first
// and then at a growing stride: past 32 bytes without a match the input
// is probably not compressible here. It returns where the match starts
// and the earlier position it repeats, or found false once the stride
// passes sLimit. It is a function of its own so that its loop keeps its
// variables in registers (within encodeChunk they lived on the stack).
func findMatch(src []byte, table *[1 << snappyMaxTableBits]uint16, shift uint, s, sLimit int) (at, candidate int, found bool) {
	skip := 32
	next := load32(src, s)
	for {
		cur := next
		step := skip >> 5
		nextS := s + step
		skip += step
		if nextS > sLimit {
			return s, 0, false
		}
		h := snappyHash(cur, shift)
		candidate = int(table[h])
		table[h] = uint16(s)
		next = load32(src, nextS)
		if cur == load32(src, candidate) {
			return s, candidate, true
		}
		s = nextS
	}
}

// extendMatch returns the end of the match of src[j:] with src[i:] (i < j):
// the first j at or after the given one where the bytes differ, or
// len(src). It compares 8 bytes at a time.
func extendMatch(src []byte, i, j int) int {
	for j+8 <= len(src) {
		if x := load64(src, i) ^ load64(src, j); x != 0 {
			return j + bits.TrailingZeros64(x)/8
		}
		i, j = i+8, j+8
	}
	for j < len(src) && src[i] == src[j] {
		i, j = i+1, j+1
	}
	return j
}

// emitLiteral writes lit, 1 to 65536 bytes, as one literal element.
func emitLiteral(dst, lit []byte) int {
	n := len(lit) - 1
	var h int
	switch {
	case n < 60:
		dst[0] = byte(n)<<2 | tagLiteral
		h = 1
	case n < 1<<8:
		dst[0] = 60<<2 | tagLiteral
		dst[1] = byte(n)
		h = 2
	default:
		dst[0] = 61<<2 | tagLiteral
		dst[1] = byte(n)
		dst[2] = byte(n >> 8)
		h = 3
	}
	return h + copy(dst[h:], lit)
}

// emitCopy writes a back-reference of length bytes (at least 4) at offset
// (1 to 65535) as copy elements: 1-byte-offset ones where they fit, else
// 2-byte-offset ones of at most 64 bytes.
func emitCopy(dst []byte, offset, length int) int {
	d := 0
	for length >= 68 {
		dst[d] = 63<<2 | tagCopy2
		dst[d+1] = byte(offset)
		dst[d+2] = byte(offset >> 8)
		d += 3
		length -= 64
	}
	if length > 64 {
		// Leave at least 4 for the last element.
		dst[d] = 59<<2 | tagCopy2
		dst[d+1] = byte(offset)
		dst[d+2] = byte(offset >> 8)
		d += 3
		length -= 60
	}
	if length < 12 && offset < 2048 {
		dst[d] = byte(offset>>8)<<5 | byte(length-4)<<2 | tagCopy1
		dst[d+1] = byte(offset)
		return d + 2
	}
	dst[d] = byte(length-1)<<2 | tagCopy2
	dst[d+1] = byte(offset)
	dst[d+2] = byte(offset >> 8)
	return d + 3
}
