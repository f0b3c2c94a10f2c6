package wal_test

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	"github.com/shale-db/shale/wal"
)

// randomLog writes n random records, flushing at random points and now and
// then continuing the log with a new Writer, as the engine may. It returns
// the records, their layout and the log.
func randomLog(t testing.TB, rng *rand.Rand, n int) ([][]byte, [][]frag, []byte) {
	t.Helper()
	sizes := randomSizes(rng, n)
	recs := randomRecords(rng, sizes)
	var buf bytes.Buffer
	w := wal.NewWriter(&buf)
	for _, r := range recs {
		if err := w.WriteRecord(r); err != nil {
			t.Fatal(err)
		}
		switch rng.IntN(8) {
		case 0:
			w.Flush()
		case 1:
			w.Flush()
			w = wal.NewWriterAt(&buf, int64(buf.Len()))
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	frags, size := layout(sizes, 0)
	if int64(buf.Len()) != size {
		t.Fatalf("log is %d bytes, layout says %d", buf.Len(), size)
	}
	return recs, frags, buf.Bytes()
}

// rounds returns n, or 20n when SHALE_WAL_LONG is set.
func rounds(n int) int {
	if os.Getenv("SHALE_WAL_LONG") != "" {
		return 20 * n
	}
	return n
}

func TestPropertyRoundTrip(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for range rounds(15) {
		recs, frags, log := randomLog(t, rng, 1+rng.IntN(100))
		res := readLog(log, wal.Strict())
		expectEOF(t, res)
		equalRecords(t, res.recs, recs)
		for i, fs := range frags {
			if res.offs[i] != fs[0].off {
				t.Fatalf("record %d at %d, layout says %d", i, res.offs[i], fs[0].off)
			}
		}
		if len(res.drops) != 0 {
			t.Fatalf("drops %v", res.drops)
		}
		checkStreams(t, log, res.recs)
		checkRanges(t, rng, log, res)
	}
}

// TestPropertyCut: a log cut at any offset yields exactly the records that
// end at or before the cut, and a torn tail exactly when the cut falls
// inside a record.
func TestPropertyCut(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	for range rounds(6) {
		recs, frags, log := randomLog(t, rng, 5+rng.IntN(15))
		for _, c := range interestingOffsets(rng, frags, len(log)) {
			checkCut(t, recs, frags, log, c)
		}
	}
}

// interestingOffsets returns offsets around every fragment boundary and
// block boundary, and some random ones, all within [0, n].
func interestingOffsets(rng *rand.Rand, frags [][]frag, n int) []int {
	var out []int
	add := func(base int64) {
		for _, d := range []int64{-8, -7, -6, -1, 0, 1, 4, 6, 7, 8} {
			if c := base + d; c >= 0 && c <= int64(n) {
				out = append(out, int(c))
			}
		}
	}
	for _, fs := range frags {
		for _, f := range fs {
			add(f.off)
		}
	}
	for b := 0; b <= n; b += bs {
		add(int64(b))
	}
	for range 100 {
		out = append(out, rng.IntN(n+1))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func checkCut(t *testing.T, recs [][]byte, frags [][]frag, log []byte, c int) {
	t.Helper()
	var want [][]byte
	var torn *wal.Drop
	for i, fs := range frags {
		start, end := fs[0].off, fs[len(fs)-1].end()
		if end <= int64(c) {
			want = append(want, recs[i])
		} else if start < int64(c) {
			torn = &wal.Drop{Offset: start, Bytes: int64(c) - start, TornTail: true}
		}
	}
	for _, strict := range []bool{false, true} {
		var opts []wal.ReaderOption
		if strict {
			opts = append(opts, wal.Strict())
		}
		res := readLog(log[:c], opts...)
		if res.err != io.EOF {
			t.Fatalf("cut at %d (strict %v): %v", c, strict, res.err)
		}
		equalRecords(t, res.recs, want)
		if len(res.damage()) != 0 {
			t.Fatalf("cut at %d: damage reported: %v", c, res.drops)
		}
		got := res.torn()
		if (torn == nil) != (len(got) == 0) || len(got) > 1 ||
			(torn != nil && (got[0].Offset != torn.Offset || got[0].Bytes != torn.Bytes)) {
			t.Fatalf("cut at %d: torn tails %v, want %v", c, got, torn)
		}
	}
}

// TestPropertyDamage: one damaged byte loses exactly the records that have
// a fragment in the damaged block at or after the damaged fragment, and the
// damage is reported.
func TestPropertyDamage(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	for range rounds(5) {
		recs, frags, log := randomLog(t, rng, 5+rng.IntN(15))
		for _, d := range interestingOffsets(rng, frags, len(log)-1) {
			bad := bytes.Clone(log)
			bad[d] ^= byte(1 + rng.IntN(255))
			checkDamage(t, recs, frags, bad, d)
			if d%7 == 0 { // a sample, to keep the test fast
				res := readLog(bad)
				checkStreams(t, bad, res.recs)
				checkRanges(t, rng, bad, res)
			}
		}
	}
}

func checkDamage(t *testing.T, recs [][]byte, frags [][]frag, bad []byte, d int) {
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
	res := readLog(bad)
	expectEOF(t, res)
	equalRecords(t, res.recs, want)
	if len(want) < len(recs) && !slices.ContainsFunc(res.drops, func(x wal.Drop) bool {
		return x.Offset <= int64(d) && int64(d) < x.Offset+x.Bytes
	}) {
		t.Fatalf("damage at %d: no drop covers it: %v", d, res.drops)
	}
	strict := readLog(bad, wal.Strict())
	if !isPrefix(strict.recs, want) {
		t.Fatalf("damage at %d: strict mode returned records that are not a prefix", d)
	}
	lastBlock := d/bs == (len(bad)-1)/bs
	if !errors.Is(strict.err, wal.ErrCorrupt) && (len(want) < len(recs)) &&
		!(strict.err == io.EOF && lastBlock && len(strict.torn()) == 1) {
		t.Fatalf("damage at %d: strict mode ended with %v", d, strict.err)
	}
}

func isPrefix(got, want [][]byte) bool {
	return len(got) <= len(want) && slices.EqualFunc(got, want[:len(got)], bytes.Equal)
}

// checkStreams reads log with NextReader and checks that the records it
// streams in full are exactly want.
func checkStreams(t *testing.T, log []byte, want [][]byte) {
	t.Helper()
	r := wal.NewReader(bytes.NewReader(log))
	var got [][]byte
	for {
		rr, err := r.NextReader()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("NextReader: %v", err)
		}
		rec, err := io.ReadAll(rr)
		if err == nil {
			got = append(got, rec)
		} else if !errors.Is(err, wal.ErrCorrupt) && err != io.ErrUnexpectedEOF {
			t.Fatalf("stream: %v", err)
		}
	}
	equalRecords(t, got, want)
}

// checkRanges splits log into random adjacent ranges and checks that they
// yield the records of seq, each once and in order, and report no drop
// that a sequential reader does not.
func checkRanges(t *testing.T, rng *rand.Rand, log []byte, seq result) {
	t.Helper()
	cuts := []int64{0, int64(len(log)) + int64(rng.IntN(2))}
	for range rng.IntN(6) {
		cuts = append(cuts, int64(rng.IntN(len(log)+1)))
	}
	slices.Sort(cuts)
	var all result
	for i := 1; i < len(cuts); i++ {
		res := readRange(log, cuts[i-1], cuts[i])
		if res.err != io.EOF {
			t.Fatalf("range [%d, %d): %v", cuts[i-1], cuts[i], res.err)
		}
		all.recs = append(all.recs, res.recs...)
		all.offs = append(all.offs, res.offs...)
		all.drops = append(all.drops, res.drops...)
	}
	equalRecords(t, all.recs, seq.recs)
	if !slices.Equal(all.offs, seq.offs) {
		t.Fatalf("ranges %v: offsets %v, want %v", cuts, all.offs, seq.offs)
	}
	for _, d := range all.drops {
		if !slices.Contains(seq.drops, d) {
			t.Fatalf("ranges %v: drop %v not reported by a sequential reader %v", cuts, d, seq.drops)
		}
	}
}
