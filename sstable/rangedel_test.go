package sstable

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/shale-db/shale/internal/ikey"
	"github.com/shale-db/shale/internal/rangedel"
)

func sampleRangeDels() rangedel.Spans {
	return rangedel.Fragment([]rangedel.Tombstone{
		{Start: []byte("b"), End: []byte("f"), Seq: 4},
		{Start: []byte("b"), End: []byte("d"), Seq: 9},
		{Start: []byte("x"), End: []byte("z"), Seq: 2},
	})
}

// writeTableWithRangeDels writes entries and the spans as one table.
func writeTableWithRangeDels(t testing.TB, entries []kv, s rangedel.Spans, opts WriterOptions) ([]byte, Meta) {
	t.Helper()
	var buf bytes.Buffer
	w := NewWriter(&buf, opts)
	for _, e := range entries {
		if err := w.Add(e.key, e.val); err != nil {
			t.Fatal(err)
		}
	}
	w.AddRangeDels(s)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), w.Meta()
}

// TestRangeDelBlock: a table's range deletions come back as written, its
// bounds cover their ranges (the largest key sorting before every entry
// of the last end key), and a table of range deletions alone is a table.
func TestRangeDelBlock(t *testing.T) {
	s := sampleRangeDels()
	entries := []kv{{ikey.Make([]byte("c"), 3, ikey.KindSet), []byte("v")}, {ikey.Make([]byte("m"), 5, ikey.KindSet), []byte("w")}}
	for _, points := range [][]kv{entries, nil} {
		b, m := writeTableWithRangeDels(t, points, s, WriterOptions{})
		r := openTable(t, b, ReaderOptions{FileName: "t.ldb"})
		if got, want := fmt.Sprint(r.RangeDels()), fmt.Sprint(s); got != want {
			t.Fatalf("range deletions %s, want %s", got, want)
		}
		if m.RangeDels != 4 || m.LargestSeq != 9 {
			t.Fatalf("meta %+v: want 4 range deletions, largest seq 9", m)
		}
		if got := ikey.String(m.Smallest); got != ikey.String(ikey.Make([]byte("b"), 9, ikey.KindRangeDelete)) {
			t.Fatalf("smallest %s", got)
		}
		sentinel := ikey.Make([]byte("z"), ikey.MaxSeq, ikey.KindRangeDelete)
		if !bytes.Equal(m.Largest, sentinel) || ikey.Compare(m.Largest, ikey.Make([]byte("z"), ikey.MaxSeq, ikey.KindSet)) >= 0 {
			t.Fatalf("largest %s, want %s, before every entry of z", ikey.String(m.Largest), ikey.String(sentinel))
		}
	}
	// A table without any has none, and LevelDB's layout.
	b := writeTable(t, entries, WriterOptions{})
	if r := openTable(t, b, ReaderOptions{}); r.RangeDels() != nil {
		t.Fatal("range deletions in a table written without")
	}
}

// FuzzRangeDelBlock decodes arbitrary bytes as a range-deletion block:
// an error matching ErrCorrupt or spans that are fragmented, never a
// panic.
func FuzzRangeDelBlock(f *testing.F) {
	var b blockWriter
	b.restartInterval = 1
	for _, ts := range sampleRangeDels().Tombstones() {
		b.add(ikey.Make(ts.Start, ts.Seq, ikey.KindRangeDelete), ts.End)
	}
	f.Add(append([]byte(nil), b.finish()...))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := decodeRangeDels(data, "fuzz", 0)
		if err != nil {
			if !isCorrupt(err) {
				t.Fatalf("error does not match ErrCorrupt: %v", err)
			}
			return
		}
		for i, sp := range s {
			if bytes.Compare(sp.Start, sp.End) >= 0 || i > 0 && bytes.Compare(s[i-1].End, sp.Start) > 0 {
				t.Fatalf("spans not fragmented: %v", s)
			}
		}
	})
}

func isCorrupt(err error) bool { return errors.Is(err, ErrCorrupt) }
