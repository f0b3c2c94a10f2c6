package raftstore

import (
	"encoding/binary"
	"math"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/hashicorp/raft"
)

// Keys. Every key of the database starts with one of these bytes, so each
// kind of record is a contiguous key range. Part of the format; do not
// change.
const (
	// prefixLog is followed by the entry's index as 8 bytes big-endian, so
	// that key order is index order.
	prefixLog = 'l'
	// prefixMeta is followed by the name of a record the store keeps for
	// itself (metaLowWater, metaTruncation).
	prefixMeta = 'm'
	// prefixStable is followed by the raft.StableStore key, as given.
	prefixStable = 's'
)

// Meta records. Part of the format; do not change.
var (
	// metaLowWater holds an index, 8 bytes big-endian: no log entry below
	// it is live, so Open finds the first entry with one SeekGE from it and
	// never walks the tombstones of a deleted prefix.
	metaLowWater = []byte{prefixMeta, 'l', 'o', 'w'}
	// metaTruncation holds two indexes, 8 bytes big-endian each: the
	// inclusive range a DeleteRange too large for one batch is deleting.
	// It is written with the first batch and deleted with the last, so an
	// Open that finds it finishes the deletion.
	metaTruncation = []byte{prefixMeta, 't', 'r', 'u', 'n', 'c'}
)

// logKeyLen is the length of a log entry's key.
const logKeyLen = 1 + 8

// logKey returns the key of the log entry at index.
func logKey(index uint64) []byte {
	return appendLogKey(make([]byte, 0, logKeyLen), index)
}

func appendLogKey(dst []byte, index uint64) []byte {
	return binary.BigEndian.AppendUint64(append(dst, prefixLog), index)
}

// logKeyIndex returns the index of a log entry's key.
func logKeyIndex(key []byte) (uint64, error) {
	if len(key) != logKeyLen || key[0] != prefixLog {
		return 0, errors.Newf("raftstore: malformed log key %x", key)
	}
	return binary.BigEndian.Uint64(key[1:]), nil
}

// logUpperBound is the exclusive upper bound of the log keys.
var logUpperBound = []byte{prefixLog + 1}

func stableKey(key []byte) []byte {
	return append([]byte{prefixStable}, key...)
}

// Log entry encoding. The value of a log key is:
//
//	+---------+-------+------+------+-------+------------------+----------+------+---------+------------+
//	| version | index | term | type | flags | [sec, nsec]      | data len | data | ext len | extensions |
//	| 1 byte  | uvar  | uvar | 1 B  | 1 B   | if flags&1: var, | uvar     |      | uvar    |            |
//	|   (1)   |       |      |      |       | uvar             |          |      |         |            |
//	+---------+-------+------+------+-------+------------------+----------+------+---------+------------+
//
// uvar is an unsigned varint (encoding/binary's Uvarint), var a signed one
// (Varint). index repeats the key's index, so that a value read under the
// wrong key is detected. AppendedAt is stored, when it is not the zero
// time, as Unix seconds and nanoseconds (0 <= nsec < 1e9); its location and
// monotonic clock reading are not kept. Part of the format; do not change:
// a new layout takes a new version byte.
const (
	encodingV1 = 1
	// flagAppendedAt says that AppendedAt follows the flags byte.
	flagAppendedAt = 1
)

// appendLog appends the encoding of l to dst.
func appendLog(dst []byte, l *raft.Log) []byte {
	dst = append(dst, encodingV1)
	dst = binary.AppendUvarint(dst, l.Index)
	dst = binary.AppendUvarint(dst, l.Term)
	dst = append(dst, byte(l.Type))
	if l.AppendedAt.IsZero() {
		dst = append(dst, 0)
	} else {
		dst = append(dst, flagAppendedAt)
		dst = binary.AppendVarint(dst, l.AppendedAt.Unix())
		dst = binary.AppendUvarint(dst, uint64(l.AppendedAt.Nanosecond()))
	}
	dst = binary.AppendUvarint(dst, uint64(len(l.Data)))
	dst = append(dst, l.Data...)
	dst = binary.AppendUvarint(dst, uint64(len(l.Extensions)))
	return append(dst, l.Extensions...)
}

// encodedLogLen bounds the length of l's encoding from above.
func encodedLogLen(l *raft.Log) int {
	return 1 + 3*binary.MaxVarintLen64 + 2 + 2*binary.MaxVarintLen64 + len(l.Data) + len(l.Extensions)
}

// ErrCorrupt is matched (errors.Is) by the error of a log entry whose
// stored bytes cannot be decoded.
var ErrCorrupt = errors.New("raftstore: corrupt log entry")

// decodeLog decodes buf into l, overwriting every field. Data and
// Extensions alias buf; they are nil when empty. AppendedAt is in UTC, or
// the zero time.
func decodeLog(buf []byte, l *raft.Log) error {
	d := decoder{buf: buf}
	if v := d.byte(); v != encodingV1 && d.err == nil {
		return errors.Wrapf(ErrCorrupt, "unknown encoding version %d", v)
	}
	l.Index = d.uvarint()
	l.Term = d.uvarint()
	l.Type = raft.LogType(d.byte())
	flags := d.byte()
	l.AppendedAt = time.Time{}
	if flags&^flagAppendedAt != 0 && d.err == nil {
		return errors.Wrapf(ErrCorrupt, "unknown flags %#x", flags)
	}
	if flags&flagAppendedAt != 0 {
		sec, nsec := d.varint(), d.uvarint()
		if nsec >= 1e9 && d.err == nil {
			return errors.Wrapf(ErrCorrupt, "nanoseconds %d out of range", nsec)
		}
		l.AppendedAt = time.Unix(sec, int64(nsec)).UTC()
	}
	l.Data = d.bytes()
	l.Extensions = d.bytes()
	if d.err == nil && len(d.buf) != 0 {
		d.err = errors.Wrapf(ErrCorrupt, "%d bytes after the entry", len(d.buf))
	}
	return d.err
}

// decoder reads from buf; the first failure is kept in err, and every
// read after it returns zero.
type decoder struct {
	buf []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = errors.Wrapf(ErrCorrupt, "truncated or malformed %s", what)
	}
	d.buf = nil
}

func (d *decoder) byte() byte {
	if len(d.buf) < 1 {
		d.fail("byte")
		return 0
	}
	b := d.buf[0]
	d.buf = d.buf[1:]
	return b
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.buf)
	if n <= 0 {
		d.fail("uvarint")
		return 0
	}
	d.buf = d.buf[n:]
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.buf)
	if n <= 0 {
		d.fail("varint")
		return 0
	}
	d.buf = d.buf[n:]
	return v
}

func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.buf)) || n > math.MaxInt {
		d.fail("length")
		return nil
	}
	if n == 0 {
		return nil
	}
	b := d.buf[:n:n]
	d.buf = d.buf[n:]
	return b
}

// appendUint64 and readUint64 are the 8-byte big-endian encoding of the
// meta records and of StableStore's SetUint64.
func appendUint64(dst []byte, v uint64) []byte { return binary.BigEndian.AppendUint64(dst, v) }

func readUint64(b []byte) (uint64, error) {
	if len(b) != 8 {
		return 0, errors.Newf("raftstore: uint64 value of %d bytes, want 8", len(b))
	}
	return binary.BigEndian.Uint64(b), nil
}
