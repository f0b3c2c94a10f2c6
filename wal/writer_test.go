package wal_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"io"
	"testing"

	"github.com/shale-db/shale/wal"
)

// scanAll lists the fragments of log with a Scanner.
func scanAll(t testing.TB, log []byte) []wal.Fragment {
	t.Helper()
	var out []wal.Fragment
	s := wal.NewScanner(bytes.NewReader(log))
	for {
		f, err := s.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, f)
	}
}

// TestWorkedExample checks the example of the format's specification:
// records A (1000 bytes), B (97270) and C (8000).
func TestWorkedExample(t *testing.T) {
	log := writeLog(t, bigString("A", 1000), bigString("B", 97270), bigString("C", 8000))
	want := []struct {
		off int64
		typ wal.RecordType
		n   int
	}{
		{0, wal.FullType, 1000},        // A, in the first block
		{1007, wal.FirstType, 31754},   // B fills the rest of the first block,
		{32768, wal.MiddleType, 32761}, // all of the second,
		{65536, wal.LastType, 32755},   // and all but 6 bytes of the third;
		{98304, wal.FullType, 8000},    // C starts the fourth block.
	}
	got := scanAll(t, log)
	if len(got) != len(want) {
		t.Fatalf("got %d fragments, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.Offset != w.off || g.Type != w.typ || g.Length != w.n || g.Problem != "" {
			t.Errorf("fragment %d: got offset %d %v length %d %q, want offset %d %v length %d",
				i, g.Offset, g.Type, g.Length, g.Problem, w.off, w.typ, w.n)
		}
	}
	if trailer := log[98298:98304]; !bytes.Equal(trailer, make([]byte, 6)) {
		t.Errorf("trailer = %x, want 6 zero bytes", trailer)
	}
	if len(log) != 98304+7+8000 {
		t.Errorf("log is %d bytes, want %d", len(log), 98304+7+8000)
	}
}

// TestPinnedBytes pins the whole encoding of two small records, computed by
// hand with a bitwise CRC-32C.
func TestPinnedBytes(t *testing.T) {
	log := writeLog(t, []byte("foo"), nil)
	want := "dd5fb37a" + "0300" + "01" + "666f6f" + // FULL "foo"
		"052b2843" + "0000" + "01" // FULL ""
	if got := hex.EncodeToString(log); got != want {
		t.Errorf("log = %s, want %s", got, want)
	}
}

// TestBoundaries writes a record into every interesting remainder of a
// block and checks the fragments against the independent layout.
func TestBoundaries(t *testing.T) {
	for _, left := range []int{bs, 100, 15, 14, 9, 8, 7, 6, 5, 1} {
		for _, size := range []int{0, 1, 2, 7, bs - 7, bs - 8, bs - 6, bs, 2*bs - 14, 3*bs + 5} {
			// A first record that leaves exactly `left` bytes in block 0
			// (for left == bs, no first record).
			var sizes []int
			if left < bs {
				sizes = append(sizes, bs-left-wal.HeaderSize)
			}
			sizes = append(sizes, size, 3)
			checkLayout(t, sizes)
		}
	}
}

// checkLayout writes records of the given sizes and checks every fragment's
// offset, type and length, the zero trailers, the round trip and the record
// offsets.
func checkLayout(t *testing.T, sizes []int) {
	t.Helper()
	recs := make([][]byte, len(sizes))
	for i, n := range sizes {
		recs[i] = bigString(string(rune('a'+i)), n)
	}
	log := writeLog(t, recs...)
	if !bytes.Equal(log, encodeLog(recs)) {
		t.Fatalf("sizes %v: Writer's bytes differ from the independent encoding", sizes)
	}
	wantFrags, wantLen := layout(sizes, 0)
	if int64(len(log)) != wantLen {
		t.Fatalf("sizes %v: log is %d bytes, want %d", sizes, len(log), wantLen)
	}
	var flat []frag
	for _, fs := range wantFrags {
		flat = append(flat, fs...)
	}
	got := scanAll(t, log)
	if len(got) != len(flat) {
		t.Fatalf("sizes %v: %d fragments, want %d", sizes, len(got), len(flat))
	}
	covered := make([]bool, len(log))
	for i, f := range flat {
		g := got[i]
		if g.Offset != f.off || g.Type != f.typ || g.Length != f.n || g.Problem != "" {
			t.Fatalf("sizes %v: fragment %d = %+v, want %+v", sizes, i, g, f)
		}
		for j := f.off; j < f.end(); j++ {
			covered[j] = true
		}
	}
	for i, c := range covered {
		if !c && log[i] != 0 {
			t.Fatalf("sizes %v: trailer byte %d is %#x", sizes, i, log[i])
		}
	}
	res := readLog(log)
	expectEOF(t, res)
	equalRecords(t, res.recs, recs)
	for i, fs := range wantFrags {
		if res.offs[i] != fs[0].off {
			t.Fatalf("sizes %v: record %d at offset %d, want %d", sizes, i, res.offs[i], fs[0].off)
		}
	}
	if len(res.drops) != 0 {
		t.Fatalf("sizes %v: drops %v", sizes, res.drops)
	}
}

func TestSevenBytesLeft(t *testing.T) {
	// A first record leaves 7 bytes: a non-empty record starts with an
	// empty FIRST there, an empty record is an empty FULL.
	for _, tc := range []struct {
		size int
		typ  wal.RecordType
	}{{0, wal.FullType}, {1, wal.FirstType}, {100, wal.FirstType}} {
		log := writeLog(t, make([]byte, bs-2*wal.HeaderSize), make([]byte, tc.size))
		f := scanAll(t, log)[1]
		if f.Offset != bs-wal.HeaderSize || f.Type != tc.typ || f.Length != 0 {
			t.Errorf("size %d: second fragment %+v, want %v of length 0 at %d", tc.size, f, tc.typ, bs-wal.HeaderSize)
		}
	}
}

func TestManySmallRecords(t *testing.T) {
	sizes := make([]int, 20000)
	for i := range sizes {
		sizes[i] = i % 23
	}
	checkLayout(t, sizes)
}

func TestWriterAccounting(t *testing.T) {
	var buf bytes.Buffer
	w := wal.NewWriter(&buf)
	if w.Size() != 0 || w.LastRecordOffset() != -1 || w.Buffered() != 0 {
		t.Fatalf("new writer: size %d, last %d, buffered %d", w.Size(), w.LastRecordOffset(), w.Buffered())
	}
	w.WriteRecord(make([]byte, 100))
	if w.Size() != 107 || w.Buffered() != 107 || buf.Len() != 0 || w.LastRecordOffset() != 0 {
		t.Fatalf("after one record: size %d, buffered %d, written %d", w.Size(), w.Buffered(), buf.Len())
	}
	w.Flush()
	if w.Buffered() != 0 || buf.Len() != 107 {
		t.Fatalf("after flush: buffered %d, written %d", w.Buffered(), buf.Len())
	}
	// A record that fills blocks is written through as each block fills.
	w.WriteRecord(make([]byte, 2*bs))
	if buf.Len() != 2*bs || w.Size() != 2*bs+107+21 || w.LastRecordOffset() != 107 {
		t.Fatalf("after a big record: written %d, size %d, last %d", buf.Len(), w.Size(), w.LastRecordOffset())
	}
	w.Flush()
	if int64(buf.Len()) != w.Size() {
		t.Fatalf("after flush: written %d, size %d", buf.Len(), w.Size())
	}
}

// TestWriterAt continues logs of every length near a block's end, as LevelDB
// does on reopening a log for append.
func TestWriterAt(t *testing.T) {
	for _, first := range []int{0, 5, bs - 15, bs - 14, bs - 13, bs - 8, bs - 7, bs - 1} {
		var buf bytes.Buffer
		w := wal.NewWriter(&buf)
		w.WriteRecord([]byte("hello"))
		w.WriteRecord(make([]byte, first))
		w.Flush()
		w2 := wal.NewWriterAt(&buf, int64(buf.Len()))
		w2.WriteRecord([]byte("world"))
		w2.WriteRecord(make([]byte, bs))
		w2.Flush()
		if int64(buf.Len()) != w2.Size() {
			t.Fatalf("first %d: log %d bytes, Size %d", first, buf.Len(), w2.Size())
		}
		// The bytes are those one Writer writes for all four records.
		want := writeLog(t, []byte("hello"), make([]byte, first), []byte("world"), make([]byte, bs))
		if !bytes.Equal(buf.Bytes(), want) {
			t.Fatalf("first %d: continued log differs from one written at once", first)
		}
	}
	if err := wal.NewWriterAt(io.Discard, -1).WriteRecord(nil); err == nil {
		t.Fatal("negative size: no error")
	}
}

// failWriter fails after accepting n bytes.
type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		m := f.n
		f.n = 0
		return m, errors.New("disk full")
	}
	f.n -= len(p)
	return len(p), nil
}

func TestWriterStickyError(t *testing.T) {
	w := wal.NewWriter(&failWriter{n: bs + 10})
	if err := w.WriteRecord(make([]byte, bs)); err != nil {
		t.Fatalf("first block: %v", err)
	}
	err := w.WriteRecord(make([]byte, bs))
	if err == nil {
		t.Fatal("no error when the second block fails")
	}
	for _, err2 := range []error{w.WriteRecord(nil), w.Flush()} {
		if err2 != err {
			t.Fatalf("error not sticky: %v then %v", err, err2)
		}
	}
	// A short write without an error is an error too.
	w = wal.NewWriter(shortWriter{})
	w.WriteRecord([]byte("x"))
	if err := w.Flush(); !errors.Is(err, io.ErrShortWrite) {
		t.Fatalf("short write: %v", err)
	}
}

type shortWriter struct{}

func (shortWriter) Write(p []byte) (int, error) { return len(p) / 2, nil }

// TestWriterNoAllocs checks that writing a record allocates nothing.
func TestWriterNoAllocs(t *testing.T) {
	w := wal.NewWriter(io.Discard)
	small, big := make([]byte, 100), make([]byte, 3*bs)
	if n := testing.AllocsPerRun(100, func() {
		w.WriteRecord(small)
		w.WriteRecord(big)
		w.Flush()
	}); n != 0 {
		t.Fatalf("%v allocations per record", n)
	}
}

// sliceWriter records the slices handed to Write, and what they held.
type sliceWriter struct {
	got [][]byte
	all []byte
}

func (s *sliceWriter) Write(p []byte) (int, error) {
	s.got = append(s.got, p)
	s.all = append(s.all, p...)
	return len(p), nil
}

// TestWriterWriteThrough: the fragments of a large record that fill whole
// blocks reach the io.Writer straight from the caller's slice, uncopied.
func TestWriterWriteThrough(t *testing.T) {
	var sw sliceWriter
	w := wal.NewWriter(&sw)
	w.WriteRecord([]byte("small"))
	rec := bigString("payload", 3*bs)
	w.WriteRecord(rec)
	w.Flush()
	uncopied := 0
	for _, b := range sw.got {
		for off := 0; off+len(b) <= len(rec); off++ {
			if len(b) > 0 && &b[0] == &rec[off] {
				uncopied += len(b)
				break
			}
		}
	}
	// FIRST (bs-19 bytes after "small") and two MIDDLEs go out uncopied.
	if want := (bs - 12 - 7) + 2*(bs-7); uncopied != want {
		t.Fatalf("%d payload bytes written uncopied, want %d", uncopied, want)
	}
	// And the bytes are still the format's.
	if !bytes.Equal(sw.all, encodeLog([][]byte{[]byte("small"), rec})) {
		t.Fatal("write-through changed the bytes")
	}
}
