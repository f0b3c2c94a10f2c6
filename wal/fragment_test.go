package wal_test

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/shale-db/shale/wal"
)

// fragmentLog is a FragmentWriter over a byte slice that notes where each
// fragment went, for tests that cut a log's writing short.
type fragmentLog struct {
	buf   []byte
	frags []frag
}

func (l *fragmentLog) Write(p []byte) (int, error) {
	if !allZeroBytes(p) {
		panic("a Writer over a FragmentWriter wrote something other than a zero trailer")
	}
	l.buf = append(l.buf, p...)
	return len(p), nil
}

func (l *fragmentLog) WriteFragment(h *[wal.HeaderSize]byte, payload []byte) error {
	l.frags = append(l.frags, frag{off: int64(len(l.buf)), typ: wal.RecordType(h[6]), n: len(payload)})
	l.buf = append(l.buf, h[:]...)
	l.buf = append(l.buf, payload...)
	return nil
}

func allZeroBytes(p []byte) bool {
	for _, c := range p {
		if c != 0 {
			return false
		}
	}
	return true
}

// TestFragmentWriterSameBytes: a Writer over a FragmentWriter writes the
// log's format byte for byte, one fragment per call, in the places the
// format gives them; from a log begun elsewhere too (NewWriterAt).
func TestFragmentWriterSameBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for trial := range 50 {
		sizes := randomSizes(rng, 1+rng.IntN(40))
		recs := randomRecords(rng, sizes)
		base := int64(0)
		if trial%2 == 1 {
			base = int64(rng.IntN(3 * bs))
		}
		var plain bytes.Buffer
		pw := wal.NewWriterAt(&plain, base)
		fl := &fragmentLog{}
		fw := wal.NewWriterAt(fl, base)
		for _, r := range recs {
			if err := pw.WriteRecord(r); err != nil {
				t.Fatal(err)
			}
			if err := fw.WriteRecord(r); err != nil {
				t.Fatal(err)
			}
			if fw.Buffered() != 0 {
				t.Fatalf("a Writer over a FragmentWriter buffers %d bytes", fw.Buffered())
			}
		}
		if err := pw.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := fw.Flush(); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(plain.Bytes(), fl.buf) {
			t.Fatalf("trial %d: the FragmentWriter's log differs from the plain Writer's", trial)
		}
		if fw.Size() != base+int64(len(fl.buf)) {
			t.Fatalf("Size %d, want %d", fw.Size(), base+int64(len(fl.buf)))
		}
		want, _ := layout(sizes, base)
		var got []frag
		for _, f := range fl.frags {
			got = append(got, frag{off: f.off + base, typ: f.typ, n: f.n})
		}
		var flat []frag
		for _, fs := range want {
			flat = append(flat, fs...)
		}
		if len(got) != len(flat) {
			t.Fatalf("trial %d: %d fragments handed over, the format places %d", trial, len(got), len(flat))
		}
		for i := range got {
			if got[i] != flat[i] {
				t.Fatalf("trial %d: fragment %d is %+v, the format places %+v", trial, i, got[i], flat[i])
			}
		}
	}
}

// TestKilledFragmentWriterIsTorn: a process killed while a fragment is
// written into a preallocated log (one pwritev a fragment, which a kill
// cuts short after any prefix) leaves every earlier fragment whole, a
// prefix of that fragment, and zeros after it. Reading that log, strictly
// too, gives exactly the records completed before the kill and at most one
// torn tail, wherever the fragment was cut.
func TestKilledFragmentWriterIsTorn(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for trial := range 400 {
		sizes := randomSizes(rng, 2+rng.IntN(20))
		recs := randomRecords(rng, sizes)
		fl := &fragmentLog{}
		w := wal.NewWriter(fl)
		lastFrag := make([]int, len(recs)) // index of each record's last fragment
		for i, r := range recs {
			if err := w.WriteRecord(r); err != nil {
				t.Fatal(err)
			}
			lastFrag[i] = len(fl.frags) - 1
		}
		k := rng.IntN(len(fl.frags)) // the fragment being copied at the kill
		log := killedImage(rng, fl, k)
		complete := 0
		for complete < len(recs) && lastFrag[complete] < k {
			complete++
		}
		res := readLog(log, wal.Strict())
		expectEOF(t, res)
		equalRecords(t, res.recs, recs[:complete])
		if len(res.damage()) != 0 || len(res.torn()) > 1 {
			t.Fatalf("trial %d, killed in fragment %d (%+v): drops %v; want at most one torn tail",
				trial, k, fl.frags[k], res.drops)
		}
		if n := len(res.torn()); n == 1 {
			d := res.torn()[0]
			if d.Offset+d.Bytes != int64(len(log)) {
				t.Fatalf("trial %d: torn tail %v does not reach the end of the log, %d", trial, d, len(log))
			}
		}
	}
}

// killedImage returns the log fl wrote as a kill during the write of
// fragment k leaves it: fragments before k whole; a prefix of k, from none
// of it to all but its last byte; zeros after, past the end of the log
// (the preallocated rest of the file).
func killedImage(rng *rand.Rand, fl *fragmentLog, k int) []byte {
	f := fl.frags[k]
	log := make([]byte, len(fl.buf)+4096)
	n := f.off + rng.Int64N(f.end()-f.off)
	copy(log, fl.buf[:n])
	return log
}

// TestUnpublishedFragmentBeforeDataIsDamage: a zero checksum is damage
// like any other wrong checksum (only a writer that stored it last, as
// shale's memory-mapped WAL once did, could leave one in a torn tail, and
// that writer left zeros after it, a torn tail by that rule); with a
// record after it, the record after it is read.
func TestUnpublishedFragmentBeforeDataIsDamage(t *testing.T) {
	first, second := bigString("first", 503), bigString("second", 2000)
	log := writeLog(t, first, second)
	binary.LittleEndian.PutUint32(log[510:514], 0)
	log = append(log, make([]byte, bs-len(log))...)
	log = append(log, writeLog(t, []byte("next"))...)
	log = append(log, make([]byte, 100)...)
	res := readLog(log)
	expectEOF(t, res)
	equalRecords(t, res.recs, [][]byte{first, []byte("next")})
	if d := res.damage(); len(d) != 1 || d[0].Offset != 510 || len(res.torn()) != 0 {
		t.Fatalf("drops %v; want the checksum mismatch at 510 as damage", res.drops)
	}
	// Nothing after it, and the log ends with its last byte: damage too
	// (the log was cut where a writer closed it, not where a kill left it).
	log = writeLog(t, first, second)
	binary.LittleEndian.PutUint32(log[510:514], 0)
	checkDrops(t, log, [][]byte{first}, false, 510, int64(len(log)-510), "checksum mismatch")
}
