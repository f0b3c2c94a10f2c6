package wal_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/shale-db/shale/wal"
)

const bs = wal.BlockSize

// writeLog returns the log that a Writer writes for recs.
func writeLog(t testing.TB, recs ...[]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := wal.NewWriter(&buf)
	for _, r := range recs {
		if err := w.WriteRecord(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// result is what reading a log gave.
type result struct {
	recs  [][]byte
	offs  []int64 // LastRecordOffset after each record
	drops []wal.Drop
	err   error // what ended reading: io.EOF or another error
}

// readLog reads every record of log with Next.
func readLog(log []byte, opts ...wal.ReaderOption) result {
	var res result
	opts = append(opts, wal.OnDrop(func(d wal.Drop) { res.drops = append(res.drops, d) }))
	r := wal.NewReader(bytes.NewReader(log), opts...)
	collect(r, &res, len(log))
	return res
}

// collect reads r to its end into res. limit bounds the number of records:
// every record takes at least one byte of a log of limit bytes (a packed
// one; others a header's HeaderSize).
func collect(r *wal.Reader, res *result, limit int) {
	for n := 0; ; n++ {
		if n > limit+1 {
			res.err = errors.New("too many records: reader loops")
			return
		}
		rec, err := r.Next()
		if err != nil {
			res.err = err
			return
		}
		res.recs = append(res.recs, bytes.Clone(rec))
		res.offs = append(res.offs, r.LastRecordOffset())
	}
}

// damage returns the drops that are not torn tails.
func (res result) damage() []wal.Drop {
	var out []wal.Drop
	for _, d := range res.drops {
		if !d.TornTail {
			out = append(out, d)
		}
	}
	return out
}

// torn returns the torn-tail drops.
func (res result) torn() []wal.Drop {
	var out []wal.Drop
	for _, d := range res.drops {
		if d.TornTail {
			out = append(out, d)
		}
	}
	return out
}

func (res result) droppedBytes() int64 {
	var n int64
	for _, d := range res.drops {
		n += d.Bytes
	}
	return n
}

// frag is a fragment as the format places it.
type frag struct {
	off int64
	typ wal.RecordType
	n   int
}

func (f frag) end() int64 { return f.off + wal.HeaderSize + int64(f.n) }

// layout places records of the given sizes as the format says, starting at
// offset base, independently of Writer: it returns each record's fragments
// and the log's length.
func layout(sizes []int, base int64) ([][]frag, int64) {
	var out [][]frag
	pos := base
	for _, size := range sizes {
		var fs []frag
		for left := size; ; {
			room := bs - int(pos%bs)
			if room < wal.HeaderSize {
				pos += int64(room) // the trailer
				room = bs
			}
			n := min(left, room-wal.HeaderSize)
			first, last := len(fs) == 0, n == left
			typ := map[[2]bool]wal.RecordType{
				{true, true}: wal.FullType, {true, false}: wal.FirstType,
				{false, false}: wal.MiddleType, {false, true}: wal.LastType,
			}[[2]bool{first, last}]
			fs = append(fs, frag{pos, typ, n})
			pos += int64(wal.HeaderSize + n)
			left -= n
			if last {
				break
			}
		}
		out = append(out, fs)
	}
	return out, pos
}

// encodeLog returns the log of recs as the format lays it out, built from
// layout and encodeFragment, independently of Writer.
func encodeLog(recs [][]byte) []byte {
	sizes := make([]int, len(recs))
	for i, r := range recs {
		sizes[i] = len(r)
	}
	frags, size := layout(sizes, 0)
	log := make([]byte, size)
	for i, fs := range frags {
		p := recs[i]
		for _, f := range fs {
			copy(log[f.off:], encodeFragment(f.typ, p[:f.n]))
			p = p[f.n:]
		}
	}
	return log
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// encodeFragment returns a fragment with a correct masked checksum, built
// independently of Writer.
func encodeFragment(typ wal.RecordType, payload []byte) []byte {
	b := make([]byte, wal.HeaderSize, wal.HeaderSize+len(payload))
	binary.LittleEndian.PutUint16(b[4:6], uint16(len(payload)))
	b[6] = byte(typ)
	b = append(b, payload...)
	binary.LittleEndian.PutUint32(b[0:4], maskedCRC(b[6:]))
	return b
}

func maskedCRC(b []byte) uint32 {
	c := crc32.Checksum(b, castagnoli)
	return (c>>15 | c<<17) + 0xa282ead8
}

// fixChecksum recomputes the checksum of the fragment whose header is at
// log[off:], after a test changed its type or payload.
func fixChecksum(log []byte, off int) {
	n := int(binary.LittleEndian.Uint16(log[off+4:]))
	binary.LittleEndian.PutUint32(log[off:], maskedCRC(log[off+6:off+wal.HeaderSize+n]))
}

// bigString repeats s to length n, as LevelDB's tests do.
func bigString(s string, n int) []byte {
	return bytes.Repeat([]byte(s), n/len(s)+1)[:n]
}

func numberString(i int) []byte { return []byte(strconv.Itoa(i) + ".") }

// randomSizes returns n record sizes skewed towards small ones, with some
// spanning several blocks and some landing near block boundaries.
func randomSizes(rng *rand.Rand, n int) []int {
	sizes := make([]int, n)
	for i := range sizes {
		switch rng.IntN(10) {
		case 0:
			sizes[i] = rng.IntN(3 * bs)
		case 1:
			sizes[i] = bs - 2*wal.HeaderSize + rng.IntN(10) - 5
		case 2:
			sizes[i] = 0
		default:
			sizes[i] = rng.IntN(1 << rng.IntN(13))
		}
	}
	return sizes
}

// randomRecords returns records of the given sizes with random content.
func randomRecords(rng *rand.Rand, sizes []int) [][]byte {
	recs := make([][]byte, len(sizes))
	for i, n := range sizes {
		recs[i] = make([]byte, n)
		for j := range recs[i] {
			recs[i][j] = byte(rng.Uint32())
		}
	}
	return recs
}

func equalRecords(t testing.TB, got, want [][]byte) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d records, want %d", len(got), len(want))
	}
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("record %d: got %d bytes %.20q, want %d bytes %.20q", i, len(got[i]), got[i], len(want[i]), want[i])
		}
	}
}

func expectEOF(t testing.TB, res result) {
	t.Helper()
	if res.err != io.EOF {
		t.Fatalf("reading ended with %v, want io.EOF", res.err)
	}
}
