package wal_test

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/shale-db/shale/wal"
)

// The tests below follow, case by case, the intent of LevelDB's
// db/log_test.cc. Where shale's reader says more than LevelDB's (a torn tail
// is reported as such; drops count whole stretches of the log, headers
// included), the expectations say so.

func TestEmpty(t *testing.T) {
	res := readLog(nil)
	expectEOF(t, res)
	if len(res.recs) != 0 || len(res.drops) != 0 {
		t.Fatalf("empty log: %d records, drops %v", len(res.recs), res.drops)
	}
}

func TestReadWrite(t *testing.T) {
	recs := [][]byte{[]byte("foo"), []byte("bar"), {}, []byte("xxxx")}
	r := wal.NewReader(bytes.NewReader(writeLog(t, recs...)))
	for _, want := range recs {
		got, err := r.Next()
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("Next = %q, %v; want %q", got, err, want)
		}
	}
	for range 2 { // reads at EOF keep returning EOF
		if _, err := r.Next(); err != io.EOF {
			t.Fatalf("Next at end: %v", err)
		}
	}
}

func TestManyBlocks(t *testing.T) {
	var recs [][]byte
	for i := range 100000 {
		recs = append(recs, numberString(i))
	}
	res := readLog(writeLog(t, recs...))
	expectEOF(t, res)
	equalRecords(t, res.recs, recs)
}

func TestFragmentation(t *testing.T) {
	recs := [][]byte{[]byte("small"), bigString("medium", 50000), bigString("large", 100000)}
	res := readLog(writeLog(t, recs...))
	expectEOF(t, res)
	equalRecords(t, res.recs, recs)
}

func TestTrailers(t *testing.T) {
	for _, tc := range []struct {
		name  string
		extra int // the first record leaves HeaderSize-extra bytes
		recs  [][]byte
	}{
		// A trailer exactly as long as an empty record.
		{"marginal", 0, [][]byte{{}, []byte("bar")}},
		{"marginal2", 0, [][]byte{[]byte("bar")}},
		{"short", 4, [][]byte{{}, []byte("bar")}},
		{"aligned EOF", 4, nil},
	} {
		n := bs - 2*wal.HeaderSize + tc.extra
		recs := append([][]byte{bigString("foo", n)}, tc.recs...)
		var buf bytes.Buffer
		w := wal.NewWriter(&buf)
		w.WriteRecord(recs[0])
		if w.Size() != int64(bs-wal.HeaderSize+tc.extra) {
			t.Fatalf("%s: size %d after the first record", tc.name, w.Size())
		}
		for _, r := range recs[1:] {
			w.WriteRecord(r)
		}
		w.Flush()
		res := readLog(buf.Bytes())
		expectEOF(t, res)
		equalRecords(t, res.recs, recs)
		if len(res.drops) != 0 {
			t.Fatalf("%s: drops %v", tc.name, res.drops)
		}
	}
}

func TestOpenForAppend(t *testing.T) {
	log := writeLog(t, []byte("hello"))
	buf := bytes.NewBuffer(log)
	w := wal.NewWriterAt(buf, int64(len(log)))
	w.WriteRecord([]byte("world"))
	w.Flush()
	res := readLog(buf.Bytes())
	expectEOF(t, res)
	equalRecords(t, res.recs, [][]byte{[]byte("hello"), []byte("world")})
}

func TestRandomRead(t *testing.T) {
	rng := rand.New(rand.NewPCG(301, 0))
	var recs [][]byte
	for i := range 500 {
		recs = append(recs, bigString(string(numberString(i)), rng.IntN(1<<rng.IntN(17))))
	}
	res := readLog(writeLog(t, recs...))
	expectEOF(t, res)
	equalRecords(t, res.recs, recs)
}

// errAfter returns the first n bytes of log, then fails.
type errAfter struct {
	r   io.Reader
	err error
}

func (e *errAfter) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err == io.EOF {
		return n, e.err
	}
	return n, err
}

// TestReadError: LevelDB turns a read error into a dropped block and EOF;
// shale returns it, because the log is not known to end there.
func TestReadError(t *testing.T) {
	log := writeLog(t, []byte("foo"), make([]byte, bs))
	cause := errors.New("i/o error")
	r := wal.NewReader(&errAfter{bytes.NewReader(log[:bs]), cause})
	if rec, err := r.Next(); err != nil || string(rec) != "foo" {
		t.Fatalf("first record: %q, %v", rec, err)
	}
	_, err := r.Next()
	if !errors.Is(err, cause) || errors.Is(err, wal.ErrCorrupt) {
		t.Fatalf("read error: got %v", err)
	}
	if _, err2 := r.Next(); err2 != err {
		t.Fatalf("read error not sticky: %v", err2)
	}
}

// checkDrops checks that reading log gives want, then EOF, and exactly one
// drop: at offset off, of n bytes, whose reason contains reason.
func checkDrops(t *testing.T, log []byte, want [][]byte, torn bool, off, n int64, reason string) {
	t.Helper()
	res := readLog(log)
	expectEOF(t, res)
	equalRecords(t, res.recs, want)
	if len(res.drops) != 1 {
		t.Fatalf("drops %v, want one", res.drops)
	}
	d := res.drops[0]
	if d.TornTail != torn || d.Offset != off || d.Bytes != n || !strings.Contains(d.Reason, reason) {
		t.Fatalf("drop %+v, want torn %v, offset %d, %d bytes, %q", d, torn, off, n, reason)
	}
}

func TestBadRecordType(t *testing.T) {
	log := writeLog(t, []byte("foo"))
	log[6] += 100
	fixChecksum(log, 0)
	checkDrops(t, log, nil, false, 0, 10, "unknown record type")
}

func TestTruncatedTrailingRecordIsTornTail(t *testing.T) {
	log := writeLog(t, []byte("foo"))
	checkDrops(t, log[:len(log)-4], nil, true, 0, 6, "incomplete header")
}

func TestBadLength(t *testing.T) {
	log := writeLog(t, bigString("bar", bs-wal.HeaderSize), []byte("foo"))
	log[4]++ // the low byte of the first fragment's length
	checkDrops(t, log, [][]byte{[]byte("foo")}, false, 0, bs, "bad record length")
}

func TestBadLengthAtEndIsTornTail(t *testing.T) {
	log := writeLog(t, []byte("foo"))
	checkDrops(t, log[:len(log)-1], nil, true, 0, 9, "incomplete record")
}

// TestImpossibleLengthAtEnd: a length that overruns the block cannot come
// from a torn write, so even in the last block it is damage.
func TestImpossibleLengthAtEnd(t *testing.T) {
	log := writeLog(t, []byte("foo"))
	log[5] = 0x90
	checkDrops(t, log, nil, false, 0, 10, "bad record length")
}

func TestChecksumMismatch(t *testing.T) {
	log := writeLog(t, []byte("foo"))
	log[0] += 10
	checkDrops(t, log, nil, false, 0, 10, "checksum mismatch")
}

func TestUnexpectedMiddleAndLastType(t *testing.T) {
	for _, typ := range []wal.RecordType{wal.MiddleType, wal.LastType} {
		log := writeLog(t, []byte("foo"))
		log[6] = byte(typ)
		fixChecksum(log, 0)
		checkDrops(t, log, nil, false, 0, 10, "missing start")
	}
}

func TestUnexpectedFullType(t *testing.T) {
	log := writeLog(t, []byte("foo"), []byte("bar"))
	log[6] = byte(wal.FirstType)
	fixChecksum(log, 0)
	checkDrops(t, log, [][]byte{[]byte("bar")}, false, 0, 10, "partial record without end")
}

func TestUnexpectedFirstType(t *testing.T) {
	big := bigString("bar", 100000)
	log := writeLog(t, []byte("foo"), big)
	log[6] = byte(wal.FirstType)
	fixChecksum(log, 0)
	checkDrops(t, log, [][]byte{big}, false, 0, 10, "partial record without end")
}

func TestMissingLastIsTornTail(t *testing.T) {
	log := writeLog(t, bigString("bar", bs))
	log = log[:len(log)-14] // the whole LAST fragment
	checkDrops(t, log, nil, true, 0, bs, "incomplete record")
}

func TestPartialLastIsTornTail(t *testing.T) {
	log := writeLog(t, bigString("bar", bs))
	log = log[:len(log)-1]
	checkDrops(t, log, nil, true, 0, int64(len(log)), "incomplete record")
}

// TestErrorJoinsRecords: with the fragments in the middle block wiped,
// FIRST(R1) and LAST(R2) must not be joined.
func TestErrorJoinsRecords(t *testing.T) {
	log := writeLog(t, bigString("foo", bs), bigString("bar", bs), []byte("correct"))
	for i := bs; i < 2*bs; i++ {
		log[i] = 'x'
	}
	res := readLog(log)
	expectEOF(t, res)
	equalRecords(t, res.recs, [][]byte{[]byte("correct")})
	if n := res.droppedBytes(); n < 2*bs || n > 2*bs+100 {
		t.Fatalf("dropped %d bytes: %v", n, res.drops)
	}
	if len(res.torn()) != 0 {
		t.Fatalf("damage reported as torn tail: %v", res.drops)
	}
}

// TestEmptyFirstBeforeFull: old LevelDB writers could leave an empty FIRST
// at a block's end and restart the record in the next block. Like LevelDB,
// the reader drops it silently.
func TestEmptyFirstBeforeFull(t *testing.T) {
	log := writeLog(t, make([]byte, bs-2*wal.HeaderSize))
	log = append(log, encodeFragment(wal.FirstType, nil)...)
	log = append(log, encodeFragment(wal.FullType, []byte("again"))...)
	res := readLog(log)
	expectEOF(t, res)
	equalRecords(t, res.recs, [][]byte{make([]byte, bs-2*wal.HeaderSize), []byte("again")})
	if len(res.drops) != 0 {
		t.Fatalf("drops %v", res.drops)
	}
}
