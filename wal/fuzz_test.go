package wal_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/golang/snappy"
	"github.com/shale-db/shale/wal"
)

// FuzzReader feeds arbitrary logs to the Reader, seeded from the Writer. On
// any input, reading must end (no panic, no endless loop) with io.EOF, and
// every record returned must be the payload of a chain of consecutive,
// checksum-verified fragments (FULL, or FIRST MIDDLE* LAST) starting at the
// offset the reader reports. Strict mode must return a prefix of those
// records; streams, ranges and the Scanner must agree with Next.
func FuzzReader(f *testing.F) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, sizes := range [][]int{
		{0}, {3, 0, 5}, {10, 20, 30, 40, 50, 60}, {200, 1000, 300},
		// Block boundaries: 7 bytes left (an empty FIRST), 6 (a trailer),
		// a record over three blocks.
		{bs - 14, 1}, {bs - 13, 0, 2}, {bs - 7, 5}, {2*bs + 10, 3},
	} {
		log := writeLog(f, randomRecords(rng, sizes)...)
		f.Add(log)
		bad := bytes.Clone(log)
		bad[rng.IntN(len(bad))] ^= 0x5a
		f.Add(bad)
		f.Add(log[:len(log)-1])
	}
	f.Add(make([]byte, 40))
	f.Add(append(encodeFragment(wal.FirstType, []byte("ab")), encodeFragment(wal.LastType, []byte("cd"))...))
	// Logs with shale's packed and compressed types, from the Writer.
	for name, opts := range optionSets {
		_, _, log := optLog(f, rand.New(rand.NewPCG(11, uint64(len(name)))), 12, opts)
		f.Add(log)
		bad := bytes.Clone(log)
		bad[rng.IntN(len(bad))] ^= 0x5a
		f.Add(bad)
		f.Add(log[:len(log)-3])
	}
	f.Add(encodeFragment(wal.PackedType, []byte{2, 'a', 'b', 9, 'x'})) // a malformed pack
	f.Add(encodeFragment(wal.SnappyFullType, []byte{0xff, 0xff, 0xff, 0xff, 0x0f, 0}))
	f.Fuzz(func(t *testing.T, log []byte) {
		res := readLog(log)
		if res.err != io.EOF {
			t.Fatalf("reading ended with %v", res.err)
		}
		for i, rec := range res.recs {
			if err := verifyChain(log, res.offs[i], rec); err != nil {
				t.Fatalf("record %d at %d: %v", i, res.offs[i], err)
			}
			if i > 0 && res.offs[i] < res.offs[i-1] {
				t.Fatalf("record offsets decreasing: %v", res.offs)
			}
		}
		for _, d := range res.drops {
			if d.Offset < 0 || d.Bytes <= 0 || d.Offset+d.Bytes > int64(len(log)) {
				t.Fatalf("drop out of bounds: %+v in %d bytes", d, len(log))
			}
		}
		strict := readLog(log, wal.Strict())
		if !isPrefix(strict.recs, res.recs) {
			t.Fatalf("strict records are not a prefix of lenient ones")
		}
		if strict.err != io.EOF && !errors.Is(strict.err, wal.ErrCorrupt) {
			t.Fatalf("strict mode ended with %v", strict.err)
		}
		if (strict.err == io.EOF) != (len(res.damage()) == 0) {
			t.Fatalf("strict mode ended with %v; lenient damage %v", strict.err, res.damage())
		}
		checkStreams(t, log, res.recs)
		checkRanges(t, rand.New(rand.NewPCG(uint64(len(log)), 0)), log, res)
		checkScanner(t, log)
	})
}

// verifyChain checks, independently of the Reader, that rec is the payload
// of consecutive checksum-verified fragments of log starting at off (FULL,
// or FIRST MIDDLE* LAST), decompressed if the first is a SNAPPY type, or
// one of the records of the pack there.
func verifyChain(log []byte, off int64, rec []byte) error {
	var got []byte
	var firstType wal.RecordType
	pos := off
	for first := true; ; first = false {
		if room := bs - pos%bs; room < wal.HeaderSize {
			if first {
				return fmt.Errorf("starts in a trailer")
			}
			pos += room
		}
		if pos+wal.HeaderSize > int64(len(log)) {
			return fmt.Errorf("fragment at %d: header past the end", pos)
		}
		h := log[pos:]
		n := int64(binary.LittleEndian.Uint16(h[4:]))
		typ := wal.RecordType(h[6])
		if pos%bs+wal.HeaderSize+n > bs || pos+wal.HeaderSize+n > int64(len(log)) {
			return fmt.Errorf("fragment at %d: bad length %d", pos, n)
		}
		if binary.LittleEndian.Uint32(h) != maskedCRC(h[6:wal.HeaderSize+n]) {
			return fmt.Errorf("fragment at %d: checksum mismatch", pos)
		}
		starts := typ == wal.FullType || typ == wal.FirstType || typ == wal.PackedType ||
			typ == wal.PackedSnappyType || typ == wal.SnappyFullType || typ == wal.SnappyFirstType
		if first != starts || !first && typ != wal.MiddleType && typ != wal.LastType {
			return fmt.Errorf("fragment at %d: type %v out of place", pos, typ)
		}
		if first {
			firstType = typ
		}
		got = append(got, h[wal.HeaderSize:wal.HeaderSize+n]...)
		pos += wal.HeaderSize + n
		if typ != wal.FirstType && typ != wal.SnappyFirstType && typ != wal.MiddleType {
			break
		}
	}
	switch firstType {
	case wal.SnappyFullType, wal.SnappyFirstType, wal.PackedSnappyType:
		dec, err := snappy.Decode(nil, got)
		if err != nil {
			return fmt.Errorf("compressed payload: %v", err)
		}
		got = dec
	}
	if firstType == wal.PackedType || firstType == wal.PackedSnappyType {
		for len(got) > 0 {
			l, w := binary.Uvarint(got)
			if w <= 0 || l > uint64(len(got)-w) {
				return fmt.Errorf("malformed pack")
			}
			if bytes.Equal(got[w:w+int(l)], rec) {
				return nil
			}
			got = got[w+int(l):]
		}
		return fmt.Errorf("record not in the pack")
	}
	if !bytes.Equal(got, rec) {
		return fmt.Errorf("payload differs: %d bytes, record has %d", len(got), len(rec))
	}
	return nil
}

// checkScanner checks that the Scanner's stretches are in order, do not
// overlap and stay within the log.
func checkScanner(t *testing.T, log []byte) {
	s := wal.NewScanner(bytes.NewReader(log))
	var end int64
	for {
		f, err := s.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if f.Offset < end || f.Span <= 0 || f.Offset+f.Span > int64(len(log)) ||
			(f.Problem == "" && f.Span != int64(wal.HeaderSize+len(f.Payload))) {
			t.Fatalf("scanner: bad fragment %+v after %d in %d bytes", f, end, len(log))
		}
		end = f.Offset + f.Span
	}
}

// TestFuzzReaderRandom runs the fuzz target's checks over random damage of
// random logs, beyond the seed corpus.
func TestFuzzReaderRandom(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(9, 10))
	for range rounds(150) {
		_, _, log := randomLog(t, rng, 1+rng.IntN(8))
		for range 1 + rng.IntN(4) {
			switch i := rng.IntN(len(log) + 1); rng.IntN(3) {
			case 0:
				log = log[:i]
			case 1:
				clear(log[i:min(len(log), i+rng.IntN(64))])
			default:
				if i < len(log) {
					log[i] ^= byte(1 + rng.IntN(255))
				}
			}
		}
		res := readLog(log)
		if res.err != io.EOF {
			t.Fatal(res.err)
		}
		for i, rec := range res.recs {
			if err := verifyChain(log, res.offs[i], rec); err != nil {
				t.Fatalf("record %d: %v", i, err)
			}
		}
		checkStreams(t, log, res.recs)
		checkRanges(t, rng, log, res)
		if !isPrefix(readLog(log, wal.Strict()).recs, res.recs) {
			t.Fatal("strict records are not a prefix")
		}
	}
}
