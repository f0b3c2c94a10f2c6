// Package batchrepr encodes and decodes LevelDB's WriteBatch representation:
// the bytes of one atomic batch of puts and deletes, which is also the
// payload of each write-ahead log record. The root package's Batch, WAL
// replay and kvcli share it.
//
// Build a batch with AppendPut and AppendDelete (a nil or empty repr gets a
// header first), stamp its first sequence number with SetSeq, and merge
// several batches into one record with Append (group commit). Decode with
// NewReader, which yields entries one at a time, or check a whole batch up
// front with Validate. Decoding is strict: a repr shorter than the header, an
// unknown tag, a truncated or non-minimal varint, a length beyond the end, or
// a count in the header that differs from the entries present is an error
// matching ErrCorrupt (with the standard library's errors.Is) that names the
// offset within the batch. Decoding never panics and allocates nothing
// beyond the error: returned keys and values alias the input.
//
// Functions are pure; a Reader is not safe for concurrent use, but any
// number of Readers may read one repr that nobody modifies.
//
// Format (part of the format; LevelDB's, do not change):
//
//	+-------------------+----------------+---------+---------+-----+
//	| seq: fixed64 LE   | count: fixed32 | entry 0 | entry 1 | ... |
//	+-------------------+----------------+---------+---------+-----+
//	 <------------- HeaderLen = 12 ----->
//
//	put:    +----------+-----------------+-----+-------------------+-------+
//	        | tag = 1  | varint32 keylen | key | varint32 valuelen | value |
//	        +----------+-----------------+-----+-------------------+-------+
//	delete: +----------+-----------------+-----+
//	        | tag = 0  | varint32 keylen | key |
//	        +----------+-----------------+-----+
//	range deletion (shale's; RocksDB's kTypeRangeDeletion):
//	        +----------+-------------------+-------+-----------------+-----+
//	        | tag = 15 | varint32 startlen | start | varint32 endlen | end |
//	        +----------+-------------------+-------+-----------------+-----+
//
// A range deletion deletes every key k with start <= k < end whose
// sequence number is below its own. In a user's Batch, an empty end means
// "no end"; the commit replaces it with a key past every key the database
// holds, so that what reaches the WAL, a memtable or a table always has an
// end (and a range deletion with an empty end read from a log is damage).
// LevelDB and goleveldb do not know tag 15: a directory whose logs or
// tables may hold one carries a mark that makes them refuse it (see the
// shale package's doc).
//
// Entry i has sequence number seq+i. Varints are unsigned LEB128 (as
// encoding/binary's Uvarint) of at most 5 bytes; writers always emit the
// minimal encoding, and the decoder rejects any other.
package batchrepr

import (
	"encoding/binary"

	"github.com/cockroachdb/errors"
	"github.com/shale-db/shale/internal/ikey"
)

// HeaderLen is the length of the header: sequence number then count.
// Part of the format; do not change.
const HeaderLen = 12

// Entry tags. They equal the ikey kinds of the entries they introduce.
// Part of the format; do not change.
const (
	// TagDelete introduces a deletion: a length-prefixed key.
	TagDelete byte = byte(ikey.KindDelete)
	// TagPut introduces a put: a length-prefixed key, then a
	// length-prefixed value.
	TagPut byte = byte(ikey.KindSet)
	// TagRangeDelete introduces a range deletion: a length-prefixed start
	// key, then a length-prefixed end key (exclusive).
	TagRangeDelete byte = byte(ikey.KindRangeDelete)
)

// maxVarint32Len is the longest varint32: 5 bytes of 7 bits cover 32 bits.
const maxVarint32Len = 5

// ErrCorrupt is matched (errors.Is) by every decoding error of this package.
var ErrCorrupt = errors.New("batchrepr: corrupt batch")

// corrupt returns an error matching ErrCorrupt that says what is wrong and
// where: off is the offset within the batch.
func corrupt(what string, off int) error {
	return errors.Newf("%w: %s at offset %d", ErrCorrupt, errors.Safe(what), off)
}

// Seq returns the sequence number in the header of repr, or 0 if repr is
// shorter than the header.
func Seq(repr []byte) uint64 {
	if len(repr) < HeaderLen {
		return 0
	}
	return binary.LittleEndian.Uint64(repr)
}

// Count returns the entry count in the header of repr, or 0 if repr is
// shorter than the header.
func Count(repr []byte) uint32 {
	if len(repr) < HeaderLen {
		return 0
	}
	return binary.LittleEndian.Uint32(repr[8:])
}

// SetSeq stores seq as the sequence number of repr's first entry.
// repr must be at least HeaderLen long.
func SetSeq(repr []byte, seq uint64) { binary.LittleEndian.PutUint64(repr[:8], seq) }

// SetCount stores n as repr's entry count. repr must be at least HeaderLen
// long.
func SetCount(repr []byte, n uint32) { binary.LittleEndian.PutUint32(repr[8:HeaderLen], n) }

// withHeader returns repr, extended with zero bytes to at least HeaderLen.
// An empty repr thus becomes an empty batch with sequence number 0.
func withHeader(repr []byte) []byte {
	for len(repr) < HeaderLen {
		repr = append(repr, 0)
	}
	return repr
}

// AppendPut appends a put of (key, value) to repr and increments its
// count, giving repr a header first if it is shorter than one. It returns
// the extended repr, as append does.
func AppendPut(repr, key, value []byte) []byte {
	repr = withHeader(repr)
	repr = append(repr, TagPut)
	repr = binary.AppendUvarint(repr, uint64(len(key)))
	repr = append(repr, key...)
	repr = binary.AppendUvarint(repr, uint64(len(value)))
	repr = append(repr, value...)
	SetCount(repr, Count(repr)+1)
	return repr
}

// AppendDelete appends a deletion of key to repr and increments its count,
// giving repr a header first if it is shorter than one.
func AppendDelete(repr, key []byte) []byte {
	repr = withHeader(repr)
	repr = append(repr, TagDelete)
	repr = binary.AppendUvarint(repr, uint64(len(key)))
	repr = append(repr, key...)
	SetCount(repr, Count(repr)+1)
	return repr
}

// AppendRangeDelete appends a range deletion of [start, end) to repr (a
// header first if repr is nil or empty). An empty end means no end, which
// only a commit may resolve (see the package doc).
func AppendRangeDelete(repr, start, end []byte) []byte {
	repr = withHeader(repr)
	repr = append(repr, TagRangeDelete)
	repr = binary.AppendUvarint(repr, uint64(len(start)))
	repr = append(repr, start...)
	repr = binary.AppendUvarint(repr, uint64(len(end)))
	repr = append(repr, end...)
	SetCount(repr, Count(repr)+1)
	return repr
}

// RangeDeleteLen is the encoded size of a range deletion entry.
func RangeDeleteLen(startLen, endLen int) int {
	return 1 + uvarintLen(startLen) + startLen + uvarintLen(endLen) + endLen
}

// PutLen returns how many bytes AppendPut adds for (key, value), so callers
// can size buffers.
func PutLen(keyLen, valueLen int) int {
	return 1 + uvarintLen(keyLen) + keyLen + uvarintLen(valueLen) + valueLen
}

// DeleteLen returns how many bytes AppendDelete adds for a key.
func DeleteLen(keyLen int) int { return 1 + uvarintLen(keyLen) + keyLen }

func uvarintLen(n int) int {
	l := 1
	for ; n >= 0x80; n >>= 7 {
		l++
	}
	return l
}

// Append appends the entries of src to dst and adds src's count to dst's,
// as LevelDB's WriteBatchInternal::Append does: the result's entries are
// dst's then src's, and its sequence number stays dst's. If dst is empty,
// the result is a copy of src (header included). A src shorter than the
// header (such as a nil repr) counts as an empty batch. The group-commit
// leader uses Append to write several batches as one WAL record, then
// stamps the result with SetSeq. src is not validated: it is expected to
// come from this package's writers.
func Append(dst, src []byte) []byte {
	if len(src) < HeaderLen {
		return dst
	}
	if len(dst) == 0 {
		return append(dst, src...)
	}
	dst = withHeader(dst)
	n := Count(dst) + Count(src)
	dst = append(dst, src[HeaderLen:]...)
	SetCount(dst, n)
	return dst
}
