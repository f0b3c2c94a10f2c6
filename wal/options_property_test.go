package wal_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	"github.com/shale-db/shale/wal"
)

// The format's properties again, for logs written with PackSmallRecords,
// CompressRecords and both: round trip, any cut yields a prefix, one
// damaged byte loses only the records with bytes in the damaged block at
// or after it, and random splits read every record exactly once, in
// order. Records' extents come from the log itself: the fragments a
// Scanner lists, from each record's offset (Writer.LastRecordOffset).

var optionSets = map[string][]wal.WriterOption{
	"pack":          {wal.PackSmallRecords()},
	"compress":      {wal.CompressRecords()},
	"pack+compress": {wal.PackSmallRecords(), wal.CompressRecords()},
}

// compressibleRecords returns records of the given sizes, half of each
// random and half a repetition, so that compression sometimes pays.
func compressibleRecords(rng *rand.Rand, sizes []int) [][]byte {
	recs := make([][]byte, len(sizes))
	for i, n := range sizes {
		recs[i] = make([]byte, n)
		for j := range recs[i] {
			if j < n/2 || rng.IntN(4) == 0 && i%3 == 0 {
				recs[i][j] = byte(rng.Uint32())
			} else {
				recs[i][j] = byte('a' + j%7)
			}
		}
	}
	return recs
}

// optLog writes n records with opts, flushing and reopening the Writer at
// random points, and returns the records, their offsets and the log.
func optLog(t testing.TB, rng *rand.Rand, n int, opts []wal.WriterOption) ([][]byte, []int64, []byte) {
	t.Helper()
	sizes := randomSizes(rng, n)
	for i := range sizes {
		if rng.IntN(2) == 0 {
			sizes[i] = rng.IntN(64) // many tiny records, for packing
		}
	}
	recs := compressibleRecords(rng, sizes)
	var buf bytes.Buffer
	w := wal.NewWriter(&buf, opts...)
	offs := make([]int64, len(recs))
	for i, r := range recs {
		if err := w.WriteRecord(r); err != nil {
			t.Fatal(err)
		}
		offs[i] = w.LastRecordOffset()
		switch rng.IntN(16) {
		case 0:
			w.Flush()
		case 1:
			w.Flush()
			w = wal.NewWriterAt(&buf, int64(buf.Len()), opts...)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if int64(buf.Len()) != w.Size() {
		t.Fatalf("log of %d bytes, Size says %d", buf.Len(), w.Size())
	}
	return recs, offs, buf.Bytes()
}

// extents returns the fragments of each record, from the log's fragments
// and the records' offsets (records of one pack share its fragment).
func extents(t testing.TB, log []byte, offs []int64) [][]frag {
	t.Helper()
	s := wal.NewScanner(bytes.NewReader(log))
	var all []wal.Fragment
	for {
		f, err := s.Next()
		if err == io.EOF {
			break
		}
		if err != nil || f.Problem != "" {
			t.Fatalf("scanning an intact log: %v %q", err, f.Problem)
		}
		all = append(all, f)
	}
	out := make([][]frag, len(offs))
	for i, off := range offs {
		j := slices.IndexFunc(all, func(f wal.Fragment) bool { return f.Offset == off })
		if j < 0 {
			t.Fatalf("record %d at %d: no fragment starts there", i, off)
		}
		for ; ; j++ {
			f := all[j]
			out[i] = append(out[i], frag{off: f.Offset, n: f.Length})
			if f.Type != wal.FirstType && f.Type != wal.SnappyFirstType && f.Type != wal.MiddleType {
				break
			}
		}
	}
	return out
}

// readAll reads every record of log (packs may hold more records than
// headers, so collect's bound does not apply).
func readAll(log []byte, opts ...wal.ReaderOption) result {
	var res result
	opts = append(opts, wal.OnDrop(func(d wal.Drop) { res.drops = append(res.drops, d) }))
	r := wal.NewReader(bytes.NewReader(log), opts...)
	for n := 0; ; n++ {
		if n > len(log)+1 {
			res.err = errors.New("too many records: reader loops")
			return res
		}
		rec, err := r.Next()
		if err != nil {
			res.err = err
			return res
		}
		res.recs = append(res.recs, bytes.Clone(rec))
		res.offs = append(res.offs, r.LastRecordOffset())
	}
}

func TestOptionsProperties(t *testing.T) {
	for name, opts := range optionSets {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(7, uint64(len(name))))
			for round := range rounds(3) {
				recs, offs, log := optLog(t, rng, 20+rng.IntN(80), opts)
				frags := extents(t, log, offs)
				// Round trip.
				res := readAll(log, wal.Strict())
				expectEOF(t, res)
				equalRecords(t, res.recs, recs)
				if !slices.Equal(res.offs, offs) {
					t.Fatalf("round %d: offsets %v, the writer said %v", round, res.offs, offs)
				}
				checkStreams(t, log, res.recs)
				checkRanges(t, rng, log, res)
				for _, c := range interestingOffsets(rng, frags, len(log)) {
					checkOptCut(t, recs, frags, log, c)
				}
				for _, d := range interestingOffsets(rng, frags, len(log)-1) {
					bad := bytes.Clone(log)
					bad[d] ^= byte(1 + rng.IntN(255))
					checkOptDamage(t, recs, frags, bad, d)
					if d%5 == 0 {
						checkRanges(t, rng, bad, readAll(bad))
					}
				}
			}
		})
	}
}

// checkOptCut: a cut at c yields exactly the records whose fragments all
// end by c, a prefix, with no damage reported.
func checkOptCut(t *testing.T, recs [][]byte, frags [][]frag, log []byte, c int) {
	t.Helper()
	var want [][]byte
	straddle := false
	for i, fs := range frags {
		start, end := fs[0].off, fs[len(fs)-1].end()
		switch {
		case end <= int64(c):
			want = append(want, recs[i])
		case start < int64(c):
			straddle = true
		}
	}
	for _, strict := range []bool{false, true} {
		var opts []wal.ReaderOption
		if strict {
			opts = append(opts, wal.Strict())
		}
		res := readAll(log[:c], opts...)
		if res.err != io.EOF {
			t.Fatalf("cut at %d (strict %v): %v", c, strict, res.err)
		}
		equalRecords(t, res.recs, want)
		if len(res.damage()) != 0 {
			t.Fatalf("cut at %d: damage reported: %v", c, res.drops)
		}
		if straddle != (len(res.torn()) == 1) {
			t.Fatalf("cut at %d: torn tails %v, a record straddles the cut: %v", c, res.torn(), straddle)
		}
	}
}

// checkOptDamage: one damaged byte loses exactly the records with a
// fragment in the damaged block that ends after it.
func checkOptDamage(t *testing.T, recs [][]byte, frags [][]frag, bad []byte, d int) {
	t.Helper()
	var want [][]byte
	for i, fs := range frags {
		lost := false
		for _, f := range fs {
			lost = lost || (f.off/bs == int64(d/bs) && f.end() > int64(d))
		}
		if !lost {
			want = append(want, recs[i])
		}
	}
	res := readAll(bad)
	expectEOF(t, res)
	equalRecords(t, res.recs, want)
	strict := readAll(bad, wal.Strict())
	if !isPrefix(strict.recs, want) {
		t.Fatalf("damage at %d: strict mode returned records that are not a prefix", d)
	}
}

// TestPackedBytes pins the bytes of a small packed log and of a small
// compressed one, computed by hand from the format.
func TestPackedBytes(t *testing.T) {
	var buf bytes.Buffer
	w := wal.NewWriter(&buf, wal.PackSmallRecords())
	for _, r := range []string{"ab", "", "xyz"} {
		w.WriteRecord([]byte(r))
	}
	w.Flush()
	// One PACKED fragment: payload 02 'a' 'b' 00 03 'x' 'y' 'z' (8 bytes).
	payload := []byte{2, 'a', 'b', 0, 3, 'x', 'y', 'z'}
	want := encodeFragment(wal.PackedType, payload)
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("packed log\n got %x\nwant %x", buf.Bytes(), want)
	}

	buf.Reset()
	w = wal.NewWriter(&buf, wal.CompressRecords())
	rec := bytes.Repeat([]byte("a"), 40)
	w.WriteRecord(rec)
	w.Flush()
	// snappy: uvarint 40 (0x28); a 1-byte literal "a" (tag 0x00); a copy of
	// 39 bytes at offset 1: tag-2 copy (length-1)<<2|2 = 0x9a, offset 1 as
	// 2 bytes LE. 6 bytes, under 7/8 of 40.
	want = encodeFragment(wal.SnappyFullType, []byte{0x28, 0x00, 'a', 0x9a, 0x01, 0x00})
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("compressed log\n got %x\nwant %x", buf.Bytes(), want)
	}
	res := readAll(buf.Bytes(), wal.Strict())
	if len(res.recs) != 1 || !bytes.Equal(res.recs[0], rec) {
		t.Fatalf("read back %q", res.recs)
	}
}

// TestPackedSizeGoals measures the two goals of the record-types issue:
// 1,000,000 random records of 8 to 32 bytes packed take at most 0.80 of
// the unpacked log; db_bench's 116-byte entries compressed take at most
// 0.65 of the plain log. It writes 100,000 of each (the ratios do not
// depend on the count); SHALE_WAL_LONG=1 writes the million.
func TestPackedSizeGoals(t *testing.T) {
	n := 100_000
	if os.Getenv("SHALE_WAL_LONG") != "" {
		n = 1_000_000
	}
	size := func(recs func(i int) []byte, opts ...wal.WriterOption) int64 {
		var buf bytes.Buffer
		w := wal.NewWriter(&buf, opts...)
		for i := range n {
			w.WriteRecord(recs(i))
		}
		w.Flush()
		return int64(buf.Len())
	}
	rng := rand.New(rand.NewPCG(1, 1))
	small := make([][]byte, n)
	for i := range small {
		small[i] = make([]byte, 8+rng.IntN(25))
		for j := range small[i] {
			small[i][j] = byte(rng.Uint32())
		}
	}
	plain := size(func(i int) []byte { return small[i] })
	packed := size(func(i int) []byte { return small[i] }, wal.PackSmallRecords())
	r := float64(packed) / float64(plain)
	t.Logf("%d records of 8-32 bytes: plain %d bytes, packed %d (%.3f)", n, plain, packed, r)
	if r > 0.80 {
		t.Errorf("packed/plain = %.3f, goal at most 0.80", r)
	}
	// db_bench's entries: a batch of one put, 16-byte key, 100-byte value
	// of which half repeats.
	entry := func(i int) []byte {
		v := make([]byte, 100)
		for j := range v {
			if j < 50 {
				v[j] = byte(rng.Uint32())
			} else {
				v[j] = v[j-50]
			}
		}
		return append(fmt.Appendf(nil, "%016d", i), v...)
	}
	entries := make([][]byte, n)
	for i := range entries {
		entries[i] = entry(i)
	}
	plain = size(func(i int) []byte { return entries[i] })
	for _, opts := range [][]wal.WriterOption{{wal.CompressRecords()}, {wal.PackSmallRecords(), wal.CompressRecords()}} {
		c := size(func(i int) []byte { return entries[i] }, opts...)
		r = float64(c) / float64(plain)
		t.Logf("%d entries of 116 bytes: plain %d bytes, with %d option(s) %d (%.3f)", n, plain, len(opts), c, r)
		if r > 0.65 {
			t.Errorf("compressed/plain = %.3f, goal at most 0.65", r)
		}
	}
}
