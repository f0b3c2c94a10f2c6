package wal_test

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/shale-db/shale/wal"
)

// TestZeroedSpace: preallocated space (zeros to the end of the block, and
// whole zero blocks) is skipped silently, at the end of a log and before
// more records.
func TestZeroedSpace(t *testing.T) {
	log := writeLog(t, []byte("foo"))
	log = append(log, make([]byte, 3*bs-len(log))...) // rest of block 0, blocks 1 and 2
	withMore := append(bytes.Clone(log), writeLog(t, []byte("bar"))...)
	for _, tc := range []struct {
		log  []byte
		want [][]byte
	}{
		{log, [][]byte{[]byte("foo")}},
		{log[:bs+100], [][]byte{[]byte("foo")}},
		{withMore, [][]byte{[]byte("foo"), []byte("bar")}},
	} {
		res := readLog(tc.log, wal.Strict())
		expectEOF(t, res)
		equalRecords(t, res.recs, tc.want)
		if len(res.drops) != 0 {
			t.Fatalf("drops %v", res.drops)
		}
	}
}

// TestZeroHeaderBeforeData: a zero header that is not followed by zeros to
// the end of the block is damage, so one zeroed header never drops records
// unreported.
func TestZeroHeaderBeforeData(t *testing.T) {
	log := writeLog(t, []byte("foo"), []byte("bar"), []byte("baz"))
	clear(log[10:17]) // the header of "bar"
	checkDrops(t, log, [][]byte{[]byte("foo")}, false, 10, 20, "checksum mismatch")
}

// TestZeroesInsideRecord: zeroed space cannot sit inside a record. If the
// log ends there, the record is a torn tail; if data follows, it is damage,
// and the fragments after the zeros are not joined to the record.
func TestZeroesInsideRecord(t *testing.T) {
	log := writeLog(t, []byte("a"), bigString("big", 3*bs))
	clear(log[bs:]) // the MIDDLE and LAST fragments
	checkDrops(t, log, [][]byte{[]byte("a")}, true, 8, int64(len(log)-8), "incomplete record")

	log = writeLog(t, []byte("a"), bigString("big", 3*bs), []byte("tail"))
	clear(log[bs : 2*bs]) // the first MIDDLE
	res := readLog(log)
	expectEOF(t, res)
	equalRecords(t, res.recs, [][]byte{[]byte("a"), []byte("tail")})
	if len(res.torn()) != 0 || len(res.drops) != 3 || res.drops[0].Offset != 8 ||
		res.drops[0].Reason != "partial record cut by zeroed space" {
		t.Fatalf("drops %v", res.drops)
	}
}

func TestStrict(t *testing.T) {
	log := writeLog(t, []byte("foo"), bigString("x", 2*bs), []byte("bar"))
	log[bs+100]++ // inside the MIDDLE fragment at bs
	var drops []wal.Drop
	r := wal.NewReader(bytes.NewReader(log), wal.Strict(), wal.Named("000007.log"),
		wal.OnDrop(func(d wal.Drop) { drops = append(drops, d) }))
	if rec, err := r.Next(); err != nil || string(rec) != "foo" {
		t.Fatalf("first record: %q, %v", rec, err)
	}
	_, err := r.Next()
	var ce *wal.CorruptionError
	if !errors.Is(err, wal.ErrCorrupt) || !errors.As(err, &ce) {
		t.Fatalf("damage in strict mode: %v", err)
	}
	if ce.Offset != bs || ce.File != "000007.log" || ce.Reason != "checksum mismatch" {
		t.Fatalf("error %+v", ce)
	}
	if want := "wal: 000007.log: offset 32768: checksum mismatch (32768 bytes)"; err.Error() != want {
		t.Fatalf("message %q, want %q", err, want)
	}
	if _, err2 := r.Next(); err2 != err {
		t.Fatalf("strict error not sticky: %v", err2)
	}
	if len(drops) != 0 {
		t.Fatalf("strict mode reported drops %v", drops)
	}
}

// TestStrictTornTail: a torn tail is not damage, even in strict mode, and is
// reported distinctly.
func TestStrictTornTail(t *testing.T) {
	log := writeLog(t, []byte("foo"), bigString("x", 2*bs))
	res := readLog(log[:bs+5], wal.Strict(), wal.Named("000009.log"))
	expectEOF(t, res)
	equalRecords(t, res.recs, [][]byte{[]byte("foo")})
	want := wal.Drop{File: "000009.log", Offset: 10, Bytes: bs + 5 - 10, Reason: "incomplete record", TornTail: true}
	if len(res.drops) != 1 || res.drops[0] != want {
		t.Fatalf("drops %v, want %v", res.drops, want)
	}
	if s := want.String(); s != "wal: 000009.log: offset 10: torn tail: incomplete record, 32763 bytes dropped" {
		t.Fatalf("Drop.String() = %q", s)
	}
}

func TestStream(t *testing.T) {
	big := bigString("0123456789", 5*bs+17)
	log := writeLog(t, []byte("foo"), big, nil, []byte("bar"))
	r := wal.NewReader(bytes.NewReader(log))
	var got [][]byte
	for {
		rr, err := r.NextReader()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		// Read in odd-sized pieces.
		var rec []byte
		buf := make([]byte, 1000)
		for {
			n, err := rr.Read(buf)
			rec = append(rec, buf[:n]...)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		got = append(got, rec)
	}
	equalRecords(t, got, [][]byte{[]byte("foo"), big, nil, []byte("bar")})
}

func TestStreamDamage(t *testing.T) {
	big := bigString("0123456789", 3*bs)
	log := writeLog(t, big, []byte("after"))
	log[2*bs+50]++ // in the second MIDDLE
	var drops []wal.Drop
	r := wal.NewReader(bytes.NewReader(log), wal.OnDrop(func(d wal.Drop) { drops = append(drops, d) }))
	rr, err := r.NextReader()
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, rr)
	if !errors.Is(err, wal.ErrCorrupt) || n != 2*bs-14 {
		t.Fatalf("streaming a damaged record: %d bytes, %v", n, err)
	}
	if rec, err := r.Next(); err != nil || string(rec) != "after" {
		t.Fatalf("after the damaged record: %q, %v", rec, err)
	}
	if _, err := rr.Read(make([]byte, 1)); err == nil {
		t.Fatal("stale stream reads")
	}
	if len(drops) != 3 { // the damaged block, the partial record, the orphan LAST
		t.Fatalf("drops %v", drops)
	}
}

func TestStreamTornTail(t *testing.T) {
	log := writeLog(t, bigString("x", 3*bs))
	r := wal.NewReader(bytes.NewReader(log[:2*bs+3]))
	rr, _ := r.NextReader()
	if _, err := io.Copy(io.Discard, rr); err != io.ErrUnexpectedEOF {
		t.Fatalf("torn stream: %v", err)
	}
	if _, err := r.NextReader(); err != io.EOF {
		t.Fatalf("after torn stream: %v", err)
	}
}

// TestStreamAbandoned: Next skips the unread rest of a streamed record.
func TestStreamAbandoned(t *testing.T) {
	log := writeLog(t, bigString("x", 3*bs), []byte("next"))
	r := wal.NewReader(bytes.NewReader(log))
	rr, _ := r.NextReader()
	rr.Read(make([]byte, 10))
	if rec, err := r.Next(); err != nil || string(rec) != "next" || r.LastRecordOffset() != 3*bs+28 {
		t.Fatalf("after abandoning a stream: %q, %v at %d", rec, err, r.LastRecordOffset())
	}
}

// TestStreamNoBuffering: streaming a record allocates no more than a block,
// whatever the record's size.
func TestStreamNoBuffering(t *testing.T) {
	log := writeLog(t, make([]byte, 64*bs))
	buf := make([]byte, 4096)
	allocs := testing.AllocsPerRun(5, func() {
		r := wal.NewReader(bytes.NewReader(log))
		rr, _ := r.NextReader()
		io.CopyBuffer(io.Discard, struct{ io.Reader }{rr}, buf)
	})
	if allocs > 10 {
		t.Fatalf("%v allocations to stream a record", allocs)
	}
}

func TestScanner(t *testing.T) {
	log := writeLog(t, []byte("foo"), []byte("bar"))
	log[10]++ // the checksum of "bar"
	log = append(log, 1, 2, 3)
	got := scanAll(t, log)
	want := []wal.Fragment{
		{Offset: 0, Span: 10, Type: wal.FullType, Length: 3, Payload: []byte("foo")},
		{Offset: 10, Span: 13, Type: wal.FullType, Length: 3, Problem: "checksum mismatch"},
	}
	if len(got) != len(want) {
		t.Fatalf("fragments %+v", got)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Offset != w.Offset || g.Span != w.Span || g.Type != w.Type || g.Length != w.Length ||
			!bytes.Equal(g.Payload, w.Payload) || g.Problem != w.Problem {
			t.Fatalf("fragment %d: %+v, want %+v", i, g, w)
		}
	}
}

// TestZeroedTailIsTorn: a crash can leave a file's new size on disk before
// the last sectors of its data (XFS, ext4 with data=writeback): the log then
// ends in zeros from a 512-byte boundary inside its last record, whose
// checksum fails. That record was never completely written, so it is a
// torn tail, as if the log ended there, not damage: strict readers (the
// MANIFEST's) must accept it.
func TestZeroedTailIsTorn(t *testing.T) {
	first := bigString("first", 503) // the next header is at 510, over a sector boundary
	second := bigString("second", 2000)
	big := bigString("big", 2*bs+2000) // FIRST, MIDDLE, and a LAST of about 2000 bytes
	for _, tc := range []struct {
		name   string
		recs   [][]byte
		zeroAt int // the first zeroed byte; the log is zero from there on
		extra  int // zero bytes appended after the log
	}{
		{"payload", [][]byte{first, second}, 1024, 0},
		{"natural zeros before the sector", [][]byte{first, second}, 1000, 0},
		{"header", [][]byte{first, second}, 512, 0},
		{"into zero blocks", [][]byte{first, second}, 1536, 2*bs + 300},
		{"middle fragment", [][]byte{first, big}, bs + 512, 0},
		{"last fragment", [][]byte{first, big}, 2*bs + 1024, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := writeLog(t, tc.recs...)
			clear(log[tc.zeroAt:])
			log = append(log, make([]byte, tc.extra)...)
			res := readLog(log, wal.Strict())
			expectEOF(t, res)
			equalRecords(t, res.recs, tc.recs[:1])
			if len(res.drops) != 1 || !res.drops[0].TornTail || res.drops[0].Offset != 510 ||
				res.drops[0].Offset+res.drops[0].Bytes != int64(len(log)) {
				t.Fatalf("drops %v; want one torn tail from 510 to the end, %d", res.drops, len(log))
			}
		})
	}
}

// TestZeroesBeforeDataAreDamage: zeros inside a record are damage when
// anything but zeros follows them, when the log does not end in zeros, or
// when they do not start at a sector boundary and the log ends with the
// record.
func TestZeroesBeforeDataAreDamage(t *testing.T) {
	first, second := bigString("first", 503), bigString("second", 2000)
	// Zeros from a sector inside the second record to the end of the
	// block, then a record in the next block: damage, and the record after
	// it is read.
	log := writeLog(t, first, second)
	clear(log[1024:])
	log = append(log, make([]byte, bs-len(log))...)
	log = append(log, writeLog(t, []byte("next"))...)
	res := readLog(log)
	expectEOF(t, res)
	equalRecords(t, res.recs, [][]byte{first, []byte("next")})
	if d := res.damage(); len(d) != 1 || d[0].Offset != 510 || d[0].Reason != "checksum mismatch" || len(res.torn()) != 0 {
		t.Fatalf("drops %v; want the checksum mismatch at 510 as damage", res.drops)
	}
	// Zeros from a sector, but the last byte intact.
	log = writeLog(t, first, second)
	clear(log[1024 : len(log)-1])
	checkDrops(t, log, [][]byte{first}, false, 510, int64(len(log)-510), "checksum mismatch")
	// Zeros to the end, but none from a sector boundary and none past the
	// record: what a flipped bit in a record that ends in zero bytes looks
	// like.
	log = writeLog(t, first, second) // 2517 bytes: the last boundary is 2048
	clear(log[2100:])
	checkDrops(t, log, [][]byte{first}, false, 510, int64(len(log)-510), "checksum mismatch")
}

// TestZeroedFromAnyByteIsTorn: a crash that stops a write into a
// preallocated log part way can leave the last record written up to any
// byte (or, for a crash of the machine, any sectors of it) and zeros after
// it: a torn tail too, wherever the zeros start inside the record.
func TestZeroedFromAnyByteIsTorn(t *testing.T) {
	first, second := bigString("first", 503), bigString("second", 2000)
	for _, zeroAt := range []int{513, 1000, 2100, 2516} {
		log := writeLog(t, first, second) // 2517 bytes
		clear(log[zeroAt:])
		if zeroAt == 2100 {
			copy(log[2400:], second[len(second)-117:]) // a copy that wrote its end first
		}
		log = append(log, make([]byte, 3*bs)...) // the preallocated rest
		res := readLog(log, wal.Strict())
		expectEOF(t, res)
		equalRecords(t, res.recs, [][]byte{first})
		if len(res.drops) != 1 || !res.drops[0].TornTail || res.drops[0].Offset != 510 {
			t.Fatalf("zeros from %d: drops %v; want one torn tail from 510", zeroAt, res.drops)
		}
	}
}
