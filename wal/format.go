package wal

import (
	"encoding/binary"
	"hash/crc32"
	"strconv"
)

// BlockSize is the size of a log block. Part of the format; do not change.
const BlockSize = 32 * 1024

// HeaderSize is the size of a fragment header: checksum (4), length (2) and
// type (1). Part of the format; do not change.
const HeaderSize = 7

// RecordType is the type byte of a fragment header. Part of the format.
type RecordType uint8

// The fragment types. Part of the format; do not change.
const (
	// ZeroType marks zeroed, preallocated space; a writer never writes it.
	ZeroType RecordType = 0
	// FullType is a fragment holding a whole record.
	FullType RecordType = 1
	// FirstType is the first fragment of a record split over blocks.
	FirstType RecordType = 2
	// MiddleType is an interior fragment of a split record.
	MiddleType RecordType = 3
	// LastType is the final fragment of a split record.
	LastType RecordType = 4

	// The types below are shale's, written only by a Writer given
	// PackSmallRecords or CompressRecords. They avoid 5 to 12, which
	// RocksDB and Pebble use for fragment types of their own, so that
	// their readers report them as unknown rather than misread them;
	// LevelDB's reader drops a fragment of a type it does not know. Part
	// of the format; do not change.

	// PackedType is a fragment holding several whole records: each is a
	// uvarint length and that many bytes. A pack is never split: it lies
	// in one block.
	PackedType RecordType = 13
	// PackedSnappyType is PackedType with its payload compressed with
	// snappy (the block format of github.com/golang/snappy).
	PackedSnappyType RecordType = 14
	// SnappyFullType is FullType whose record is snappy-compressed.
	SnappyFullType RecordType = 16
	// SnappyFirstType is FirstType whose record (this fragment's payload
	// and the MIDDLE and LAST fragments that follow, joined) is
	// snappy-compressed.
	SnappyFirstType RecordType = 17
)

// StartsRecord reports whether header, the first HeaderSize bytes of a
// block, is one a Writer writes at the start of a record (or a pack of
// them): a type that starts one and a length that fits in the block. Its
// checksum is not checked: recovery asks this of a log whose first record
// a crash cut short, whose checksum then fails.
func StartsRecord(header []byte) bool {
	if len(header) < HeaderSize {
		return false
	}
	length := int(binary.LittleEndian.Uint16(header[4:6]))
	return startsRecord(RecordType(header[6])) && HeaderSize+length <= BlockSize
}

// startsRecord reports whether a fragment of type t starts a record (or a
// pack of them).
func startsRecord(t RecordType) bool {
	switch t {
	case FullType, FirstType, PackedType, PackedSnappyType, SnappyFullType, SnappyFirstType:
		return true
	}
	return false
}

// String returns "FULL", "FIRST", "MIDDLE", "LAST", "ZERO", "PACKED",
// "PACKED-SNAPPY", "SNAPPY-FULL", "SNAPPY-FIRST", or "TYPE(n)".
func (t RecordType) String() string {
	switch t {
	case ZeroType:
		return "ZERO"
	case FullType:
		return "FULL"
	case FirstType:
		return "FIRST"
	case MiddleType:
		return "MIDDLE"
	case LastType:
		return "LAST"
	case PackedType:
		return "PACKED"
	case PackedSnappyType:
		return "PACKED-SNAPPY"
	case SnappyFullType:
		return "SNAPPY-FULL"
	case SnappyFirstType:
		return "SNAPPY-FIRST"
	}
	return "TYPE(" + strconv.Itoa(int(t)) + ")"
}

// maskDelta is added to the rotated CRC when masking. Part of the format.
const maskDelta = 0xa282ead8

// castagnoli is the CRC-32C table; crc32 uses the SSE4.2 or ARMv8 CRC
// instructions when it is given this table.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// checksum returns the masked CRC-32C of b, which must be the type byte
// followed by the payload.
func checksum(b []byte) uint32 {
	return mask(crc32.Checksum(b, castagnoli))
}

// typeCRC[t] is the CRC-32C of the type byte t alone.
var typeCRC = func() (c [256]uint32) {
	for t := range c {
		c[t] = crc32.Checksum([]byte{byte(t)}, castagnoli)
	}
	return c
}()

// fragmentChecksum returns the masked CRC-32C of the type byte t followed
// by payload, for a writer type t, without needing them contiguous.
func fragmentChecksum(t RecordType, payload []byte) uint32 {
	return mask(crc32.Update(typeCRC[t], castagnoli, payload))
}

// mask rotates c right by 15 bits and adds maskDelta, as LevelDB does, so
// that the CRC of data that embeds CRCs is not itself a trivial function.
func mask(c uint32) uint32 {
	return (c>>15 | c<<17) + maskDelta
}

// unmask inverts mask.
func unmask(m uint32) uint32 {
	r := m - maskDelta
	return r>>17 | r<<15
}
