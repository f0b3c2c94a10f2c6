package wal_test

import (
	"bytes"
	"io"
	"testing"

	"github.com/shale-db/shale/wal"
)

// initialOffsetLog is LevelDB's log for its initial-offset tests: records
// 'a'.. of these sizes, at these offsets.
var (
	initialOffsetSizes = []int{
		10000, // two sizable records in the first block
		10000,
		2*bs - 1000, // spans three blocks
		1,
		13716,               // all but two bytes of block 3
		bs - wal.HeaderSize, // all of block 4
	}
	initialOffsetOffsets = []int64{
		0,
		7 + 10000,
		2 * (7 + 10000),
		2*(7+10000) + (2*bs - 1000) + 3*7,
		2*(7+10000) + (2*bs - 1000) + 3*7 + 7 + 1,
		3 * bs,
	}
)

func initialOffsetLog(t testing.TB) []byte {
	var recs [][]byte
	for i, n := range initialOffsetSizes {
		recs = append(recs, bytes.Repeat([]byte{byte('a' + i)}, n))
	}
	return writeLog(t, recs...)
}

// readRange reads the records of log that begin in [start, end).
func readRange(log []byte, start, end int64, opts ...wal.ReaderOption) result {
	var res result
	opts = append(opts, wal.OnDrop(func(d wal.Drop) { res.drops = append(res.drops, d) }))
	collect(wal.NewRangeReader(bytes.NewReader(log), start, end, opts...), &res, len(log))
	return res
}

// TestInitialOffset: reading from an offset yields the records from the
// first one that starts there or later (LevelDB's ReadStart,
// ReadSecondOneOff, ..., ReadInitialOffsetIntoBlockPadding).
func TestInitialOffset(t *testing.T) {
	log := initialOffsetLog(t)
	for _, tc := range []struct {
		start int64
		first int
	}{
		{0, 0}, {1, 1}, {10000, 1}, {10007, 1}, {10008, 2}, {20014, 2},
		{20015, 3}, {bs - 4, 3}, {bs + 1, 3}, {2*bs + 1, 3},
		{initialOffsetOffsets[3], 3}, {initialOffsetOffsets[3] + 1, 4},
		{3*bs - 3, 5}, // into block padding
	} {
		res := readRange(log, tc.start, int64(len(log)))
		expectEOF(t, res)
		if len(res.recs) != len(initialOffsetSizes)-tc.first {
			t.Fatalf("start %d: %d records, want %d", tc.start, len(res.recs), len(initialOffsetSizes)-tc.first)
		}
		for i, rec := range res.recs {
			k := tc.first + i
			if len(rec) != initialOffsetSizes[k] || rec[0] != byte('a'+k) || res.offs[i] != initialOffsetOffsets[k] {
				t.Fatalf("start %d: record %d has %d bytes of %q at %d", tc.start, i, len(rec), rec[0], res.offs[i])
			}
		}
		if len(res.drops) != 0 {
			t.Fatalf("start %d: drops %v", tc.start, res.drops)
		}
	}
}

// TestSkipIntoMultiRecord: starting inside a fragmented record, its MIDDLE
// and LAST fragments are skipped silently.
func TestSkipIntoMultiRecord(t *testing.T) {
	log := writeLog(t, bigString("foo", 3*bs), []byte("correct"))
	res := readRange(log, bs, int64(len(log)))
	expectEOF(t, res)
	equalRecords(t, res.recs, [][]byte{[]byte("correct")})
	if len(res.drops) != 0 {
		t.Fatalf("drops %v", res.drops)
	}
}

func TestReadPastEnd(t *testing.T) {
	log := initialOffsetLog(t)
	for _, past := range []int64{0, 5, bs} {
		res := readRange(log, int64(len(log))+past, int64(len(log))+past+100)
		expectEOF(t, res)
		if len(res.recs) != 0 || len(res.drops) != 0 {
			t.Fatalf("past end %d: %d records, drops %v", past, len(res.recs), res.drops)
		}
	}
	if res := readRange(log, 100, 100); res.err != io.EOF || len(res.recs) != 0 {
		t.Fatalf("empty range: %d records, %v", len(res.recs), res.err)
	}
}

// TestRangeEnd: a range yields the records that start before its end, in
// full, and no more.
func TestRangeEnd(t *testing.T) {
	log := initialOffsetLog(t)
	for _, tc := range []struct {
		start, end int64
		want       []int
	}{
		{0, 1, []int{0}},
		{0, 10007, []int{0}},
		{0, 10008, []int{0, 1}},
		{1, 20015, []int{1, 2}}, // record 2 runs on to block 2
		{20015, 3 * bs, []int{3, 4}},
		{3*bs - 3, 3*bs + 1, []int{5}},
	} {
		res := readRange(log, tc.start, tc.end)
		expectEOF(t, res)
		if len(res.recs) != len(tc.want) {
			t.Fatalf("[%d, %d): %d records, want %v", tc.start, tc.end, len(res.recs), tc.want)
		}
		for i, k := range tc.want {
			if len(res.recs[i]) != initialOffsetSizes[k] || res.offs[i] != initialOffsetOffsets[k] {
				t.Fatalf("[%d, %d): record %d is not record %d", tc.start, tc.end, i, k)
			}
		}
	}
}

// TestRangeTornTail: a torn tail is reported once, by the range that holds
// the start of the torn record, wherever the ranges split.
func TestRangeTornTail(t *testing.T) {
	log := writeLog(t, []byte("a"), bigString("big", 3*bs))
	log = log[:2*bs+100]
	seq := readLog(log)
	want := wal.Drop{Offset: 8, Bytes: int64(len(log)) - 8, Reason: "incomplete record", TornTail: true}
	if len(seq.drops) != 1 || seq.drops[0] != want {
		t.Fatalf("sequential drops %v, want %v", seq.drops, want)
	}
	for _, cut := range []int64{1, 8, 9, bs - 7, bs, bs + 3, 2 * bs, 2*bs + 50} {
		var drops []wal.Drop
		for _, rg := range [][2]int64{{0, cut}, {cut, int64(len(log))}} {
			drops = append(drops, readRange(log, rg[0], rg[1]).drops...)
		}
		if len(drops) != 1 || drops[0] != want {
			t.Fatalf("split at %d: drops %v, want %v", cut, drops, want)
		}
	}
}
