package sstable

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/cockroachdb/errors"
)

// Format constants. Part of the format; do not change.
const (
	// Magic ends every table: the last 8 bytes, fixed64 little-endian.
	Magic uint64 = 0xdb4775248b80fb57
	// FooterLen is the length of the footer: two block handles padded to
	// 40 bytes, then Magic.
	FooterLen = 48
	// footerHandlesLen is the room for the two handles before the magic.
	footerHandlesLen = 40
	// TrailerLen is the length of the trailer after every block: one
	// compression byte, then the masked crc32c of the block and that byte.
	TrailerLen = 5
	// maxHandleLen is the longest encoding of a block handle: two varint64s.
	maxHandleLen = 2 * binary.MaxVarintLen64
	// crcMaskDelta is added to the rotated crc32c, as LevelDB masks it.
	crcMaskDelta = 0xa282ead8
	// FilterMetaKey is the metaindex key of a filter block this package
	// writes and reads (LevelDB's "filter." prefix and the policy name).
	FilterMetaKey = "filter.leveldb.BuiltinBloomFilter2"
	// oldFilterMetaKey names filters built with a hash whose bits differ
	// between implementations (old LevelDB hashed signed chars); tables
	// carrying it are read without their filter.
	oldFilterMetaKey = "filter.leveldb.BuiltinBloomFilter"
)

// Compression bytes in a block trailer. Part of the format; do not change.
const (
	blockTypeNone   byte = 0
	blockTypeSnappy byte = 1
	blockTypeZstd   byte = 2 // written by new LevelDB; refused
)

// ErrCorrupt is matched (with the standard errors.Is) by every error that
// reports damaged or malformed table bytes.
var ErrCorrupt = errors.New("sstable: corrupt table")

// ErrUnsupported is matched by errors that report a well-formed table
// feature this package does not implement (zstd-compressed blocks).
var ErrUnsupported = errors.New("sstable: unsupported table feature")

// TableError describes a table that cannot be read: which file, where in
// it, and why. Err is ErrCorrupt or ErrUnsupported, so errors.Is(err,
// ErrCorrupt) holds for damage with the standard library's errors.Is.
type TableError struct {
	File   string // file name as given in ReaderOptions; may be empty
	Offset int64  // offset of the damaged block, footer or entry
	Reason string
	Err    error
}

// Error formats the error as "sstable: <file>: offset <n>: <reason>".
func (e *TableError) Error() string {
	f := e.File
	if f == "" {
		f = "table"
	}
	return fmt.Sprintf("sstable: %s: offset %d: %s", f, e.Offset, e.Reason)
}

// Unwrap returns the sentinel the error matches.
func (e *TableError) Unwrap() error { return e.Err }

// BlockHandle locates a block: its offset in the file and its length
// without the trailer. Encoded as varint64 offset, varint64 length.
type BlockHandle struct {
	Offset, Length uint64
}

// String formats h as "offset+length".
func (h BlockHandle) String() string { return fmt.Sprintf("%d+%d", h.Offset, h.Length) }

// appendHandle appends the encoding of h to dst.
func appendHandle(dst []byte, h BlockHandle) []byte {
	dst = binary.AppendUvarint(dst, h.Offset)
	return binary.AppendUvarint(dst, h.Length)
}

// decodeHandle decodes a handle from the start of src and returns the
// bytes it used; n is 0 if src does not start with a valid handle.
func decodeHandle(src []byte) (h BlockHandle, n int) {
	off, n1 := binary.Uvarint(src)
	if n1 <= 0 {
		return BlockHandle{}, 0
	}
	length, n2 := binary.Uvarint(src[n1:])
	if n2 <= 0 {
		return BlockHandle{}, 0
	}
	return BlockHandle{Offset: off, Length: length}, n1 + n2
}

// Footer is the decoded last 48 bytes of a table.
type Footer struct {
	MetaIndex BlockHandle
	Index     BlockHandle
}

// appendFooter appends the 48-byte footer to dst.
func appendFooter(dst []byte, f Footer) []byte {
	start := len(dst)
	dst = appendHandle(dst, f.MetaIndex)
	dst = appendHandle(dst, f.Index)
	for len(dst)-start < footerHandlesLen {
		dst = append(dst, 0)
	}
	return binary.LittleEndian.AppendUint64(dst, Magic)
}

// decodeFooter decodes a footer; the reason is empty on success. Padding
// bytes are not checked (LevelDB does not check them either).
func decodeFooter(b []byte) (f Footer, reason string) {
	if len(b) != FooterLen {
		return Footer{}, fmt.Sprintf("footer is %d bytes, want %d", len(b), FooterLen)
	}
	if m := binary.LittleEndian.Uint64(b[footerHandlesLen:]); m != Magic {
		return Footer{}, fmt.Sprintf("bad magic number %#x", m)
	}
	var n int
	if f.MetaIndex, n = decodeHandle(b[:footerHandlesLen]); n == 0 {
		return Footer{}, "bad metaindex block handle"
	}
	if f.Index, n = decodeHandle(b[n:footerHandlesLen]); n == 0 {
		return Footer{}, "bad index block handle"
	}
	return f, ""
}

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// blockChecksum returns the masked crc32c of block followed by typ, as it
// is stored in a block trailer.
func blockChecksum(block []byte, typ byte) uint32 {
	c := crc32.Update(0, crcTable, block)
	c = crc32.Update(c, crcTable, []byte{typ})
	return (c>>15 | c<<17) + crcMaskDelta
}
