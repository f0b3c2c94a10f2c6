// Package ikey defines the internal key: a user key followed by an 8-byte
// trailer that packs a sequence number and a kind. Every layer below the
// public API (memtable, tables, MANIFEST bounds, iterators) orders entries by
// internal key.
//
// Encoding (part of the format; LevelDB's, do not change):
//
//	+----------------+-------------------------------------+
//	| user key bytes | fixed64 LE of (seq << 8) | kind     |
//	+----------------+-------------------------------------+
//
// Order: user key ascending (bytewise), then trailer descending, so that for
// one user key the newest version comes first.
//
// All functions are pure and safe for concurrent use.
package ikey

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
)

// Kind says what an entry does to its user key. Part of the format.
type Kind uint8

const (
	// KindDelete marks a deletion (a tombstone). Part of the format.
	KindDelete Kind = 0
	// KindSet marks a put. Part of the format.
	KindSet Kind = 1
	// KindRangeDelete marks a range deletion: in a batch, the deletion of
	// every key in [start, end); in a table's range-deletion block, the
	// key (start, seq, KindRangeDelete) with the value end. It is
	// RocksDB's and Pebble's number for the same thing (kTypeRangeDeletion).
	// It never appears among a table's or a memtable's point entries.
	// Part of the format.
	KindRangeDelete Kind = 15
	// KindSeek is the kind used in seek keys: it is the largest kind, so a
	// seek key at sequence s sorts before every entry of that user key whose
	// sequence number is <= s.
	KindSeek = KindSet
)

// MaxSeq is the largest sequence number: sequence numbers have 56 bits.
const MaxSeq uint64 = 1<<56 - 1

// TrailerLen is the length of the trailer that follows the user key.
const TrailerLen = 8

// String returns "DEL", "PUT", or "KIND(n)" for an unknown kind.
func (k Kind) String() string {
	switch k {
	case KindDelete:
		return "DEL"
	case KindSet:
		return "PUT"
	case KindRangeDelete:
		return "RANGEDEL"
	}
	return "KIND(" + strconv.Itoa(int(k)) + ")"
}

// IsRangeEnd reports whether k is the largest key of a table whose range
// deletions end at k's user key: (end, MaxSeq, KindRangeDelete), which
// sorts before every entry of that user key, so that the table holds
// nothing of it (the end is exclusive).
func IsRangeEnd(k []byte) bool {
	return len(k) >= TrailerLen && Trailer(k) == MakeTrailer(MaxSeq, KindRangeDelete)
}

// MakeTrailer packs seq and kind. seq must be <= MaxSeq.
func MakeTrailer(seq uint64, kind Kind) uint64 { return seq<<8 | uint64(kind) }

// Append appends the internal key (ukey, seq, kind) to dst.
func Append(dst, ukey []byte, seq uint64, kind Kind) []byte {
	dst = append(dst, ukey...)
	return binary.LittleEndian.AppendUint64(dst, MakeTrailer(seq, kind))
}

// Make returns a new internal key (ukey, seq, kind).
func Make(ukey []byte, seq uint64, kind Kind) []byte {
	return Append(make([]byte, 0, len(ukey)+TrailerLen), ukey, seq, kind)
}

// SeekKey returns the internal key that SeekGE uses to find the newest
// version of ukey visible at sequence number seq.
func SeekKey(ukey []byte, seq uint64) []byte { return Make(ukey, seq, KindSeek) }

// Valid reports whether k is long enough to be an internal key.
func Valid(k []byte) bool { return len(k) >= TrailerLen }

// UserKey returns the user key of k. k must be Valid.
func UserKey(k []byte) []byte { return k[:len(k)-TrailerLen] }

// Trailer returns the trailer of k. k must be Valid.
func Trailer(k []byte) uint64 { return binary.LittleEndian.Uint64(k[len(k)-TrailerLen:]) }

// Seq returns the sequence number of k. k must be Valid.
func Seq(k []byte) uint64 { return Trailer(k) >> 8 }

// KindOf returns the kind of k. k must be Valid.
func KindOf(k []byte) Kind { return Kind(Trailer(k) & 0xff) }

// Parse splits k into its parts. ok is false if k is too short or its kind
// is unknown; a reader of bytes from disk reports that as corruption.
func Parse(k []byte) (ukey []byte, seq uint64, kind Kind, ok bool) {
	if len(k) < TrailerLen {
		return nil, 0, 0, false
	}
	t := Trailer(k)
	kind = Kind(t & 0xff)
	if kind > KindSet {
		return nil, 0, 0, false
	}
	return UserKey(k), t >> 8, kind, true
}

// Compare orders two internal keys: user key ascending, then trailer
// descending. Both must be Valid.
func Compare(a, b []byte) int {
	if c := bytes.Compare(UserKey(a), UserKey(b)); c != 0 {
		return c
	}
	ta, tb := Trailer(a), Trailer(b)
	switch {
	case ta > tb:
		return -1
	case ta < tb:
		return 1
	}
	return 0
}

// Prefixes returns the first 16 bytes of ukey as two big-endian numbers,
// padded with zeros. (p0, p1) of a less than (p0, p1) of b implies a < b
// bytewise; equal prefixes say nothing. Comparing them first makes most
// comparisons of keys that differ in their first 16 bytes two integer
// comparisons.
func Prefixes(ukey []byte) (p0, p1 uint64) {
	if len(ukey) >= 16 {
		return binary.BigEndian.Uint64(ukey), binary.BigEndian.Uint64(ukey[8:])
	}
	var b [16]byte
	copy(b[:], ukey)
	return binary.BigEndian.Uint64(b[:]), binary.BigEndian.Uint64(b[8:])
}

// String formats k for tests and dumps as "ukey#seq,KIND", for example
// "a#5,PUT". A key that is not Valid prints as "<invalid:hex>".
func String(k []byte) string {
	if !Valid(k) {
		return fmt.Sprintf("<invalid:%x>", k)
	}
	return fmt.Sprintf("%s#%d,%s", UserKey(k), Seq(k), KindOf(k))
}

// ParseString is the inverse of String for keys written by hand in tests:
// "a#5,PUT" or "a#5,DEL". It panics on malformed input, which is a bug in
// the test that wrote it.
func ParseString(s string) []byte {
	i := strings.LastIndexByte(s, '#')
	j := strings.LastIndexByte(s, ',')
	if i < 0 || j < i {
		panic("ikey: malformed key " + strconv.Quote(s))
	}
	seq, err := strconv.ParseUint(s[i+1:j], 10, 64)
	if err != nil {
		panic("ikey: malformed sequence in " + strconv.Quote(s))
	}
	var kind Kind
	switch s[j+1:] {
	case "PUT":
		kind = KindSet
	case "DEL":
		kind = KindDelete
	default:
		panic("ikey: malformed kind in " + strconv.Quote(s))
	}
	return Make([]byte(s[:i]), seq, kind)
}
