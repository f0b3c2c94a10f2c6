package raftstore

import (
	"bytes"
	"encoding/hex"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/shale-db/shale"
)

// TestEncodingPinned pins the bytes of two entries, computed by hand from
// the layout in encoding.go.
func TestEncodingPinned(t *testing.T) {
	l := raft.Log{
		Index: 5, Term: 2, Type: raft.LogCommand, Data: []byte("ab"),
		Extensions: []byte("x"), AppendedAt: time.Unix(1, 500),
	}
	// version 01, index 05, term 02, type 00, flags 01,
	// seconds varint(1) = 02, nanoseconds uvarint(500) = f4 03,
	// data 02 'a' 'b', extensions 01 'x'.
	const want = "01050200" + "01" + "02f403" + "026162" + "0178"
	if got := hex.EncodeToString(appendLog(nil, &l)); got != want {
		t.Errorf("encoding = %s, want %s", got, want)
	}
	l = raft.Log{Index: 300, Term: 1, Type: raft.LogConfiguration}
	// index uvarint(300) = ac 02, LogConfiguration 05, flags 00 (zero
	// time), two empty byte strings.
	const want2 = "01" + "ac02" + "01" + "05" + "00" + "00" + "00"
	if got := hex.EncodeToString(appendLog(nil, &l)); got != want2 {
		t.Errorf("encoding = %s, want %s", got, want2)
	}
	if k := hex.EncodeToString(logKey(0x0102)); k != "6c"+"0000000000000102" {
		t.Errorf("logKey(0x102) = %s", k)
	}
}

func roundTripLogs() []raft.Log {
	return []raft.Log{
		{},
		{Index: 1, Term: 1, Type: raft.LogCommand, Data: []byte("data")},
		{
			Index: 1<<64 - 2, Term: 1<<64 - 1, Type: raft.LogConfiguration,
			Data: bytes.Repeat([]byte{0xff}, 300), Extensions: []byte("ext"),
			AppendedAt: time.Date(2024, 2, 29, 23, 59, 59, 999_999_999, time.UTC),
		},
		{Index: 7, Type: raft.LogBarrier, Extensions: []byte{0}, AppendedAt: time.Unix(-5, 7).UTC()},
		{Index: 8, Type: raft.LogNoop, AppendedAt: time.Unix(0, 1).UTC()},
		{Index: 9, Type: raft.LogType(255), Data: []byte{0}},
	}
}

func TestEncodingRoundTrip(t *testing.T) {
	for _, l := range roundTripLogs() {
		var got raft.Log
		got.Data = []byte("stale") // every field is overwritten
		got.AppendedAt = time.Now()
		if err := decodeLog(appendLog(nil, &l), &got); err != nil {
			t.Fatalf("decode %+v: %v", l, err)
		}
		if !reflect.DeepEqual(got, l) {
			t.Errorf("round trip of %+v gave %+v", l, got)
		}
		if n := len(appendLog(nil, &l)); n > encodedLogLen(&l) {
			t.Errorf("encoding of %d bytes over the bound %d", n, encodedLogLen(&l))
		}
	}
}

// TestEncodingLocalTime: a time in another zone reads back as the same
// instant, in UTC, without its monotonic reading.
func TestEncodingLocalTime(t *testing.T) {
	at := time.Now().In(time.FixedZone("x", 3600))
	l := raft.Log{Index: 1, AppendedAt: at}
	var got raft.Log
	if err := decodeLog(appendLog(nil, &l), &got); err != nil {
		t.Fatal(err)
	}
	if !got.AppendedAt.Equal(at) || got.AppendedAt.Location() != time.UTC {
		t.Fatalf("AppendedAt %v, want %v in UTC", got.AppendedAt, at)
	}
}

func TestDecodeDamage(t *testing.T) {
	good := appendLog(nil, &raft.Log{Index: 5, Term: 2, Data: []byte("ab"), AppendedAt: time.Unix(1, 2)})
	for i := 0; i < len(good); i++ {
		if err := decodeLog(good[:i], new(raft.Log)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("decode of %d of %d bytes: %v", i, len(good), err)
		}
	}
	for name, b := range map[string][]byte{
		"trailing byte":   append(append([]byte(nil), good...), 0),
		"version 2":       append([]byte{2}, good[1:]...),
		"unknown flag":    {1, 1, 1, 0, 2, 0, 0},
		"nanoseconds 1e9": {1, 1, 1, 0, 1, 0, 0x80, 0x94, 0xeb, 0xdc, 0x03, 0, 0},
		"long data":       {1, 1, 1, 0, 0, 5, 'a', 0},
	} {
		if err := decodeLog(b, new(raft.Log)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", name, err)
		}
	}
}

func FuzzDecodeLog(f *testing.F) {
	for _, l := range roundTripLogs() {
		f.Add(appendLog(nil, &l))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var l raft.Log
		if err := decodeLog(b, &l); err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error not matching ErrCorrupt: %v", err)
			}
			return
		}
		// What decodes re-encodes to something that decodes the same.
		var again raft.Log
		if err := decodeLog(appendLog(nil, &l), &again); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(l, again) {
			t.Fatalf("%+v re-encoded as %+v", l, again)
		}
	})
}

// TestStoreAllFields stores every field through the Store and reads it
// back, before and after reopening.
func TestStoreAllFields(t *testing.T) {
	dir := t.TempDir()
	s, err := New(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	var want []*raft.Log
	for i, l := range roundTripLogs()[1:] {
		l.Index = uint64(i + 1)
		want = append(want, &l)
	}
	if err := s.StoreLogs(want); err != nil {
		t.Fatal(err)
	}
	for pass := 0; pass < 2; pass++ {
		for _, w := range want {
			var got raft.Log
			if err := s.GetLog(w.Index, &got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(&got, w) {
				t.Fatalf("pass %d: GetLog(%d) = %+v, want %+v", pass, w.Index, got, *w)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if s, err = New(dir, nil); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
}

// writeRaw writes entries [first, last] and the given meta records
// straight to a shale database, as a store interrupted mid-DeleteRange
// would have left them once deleted were gone.
func writeRaw(t *testing.T, dir string, first, last uint64, deleted span, meta map[string][]byte) {
	t.Helper()
	db, err := shale.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	var b shale.Batch
	for i := first; i <= last; i++ {
		b.Put(logKey(i), appendLog(nil, &raft.Log{Index: i}))
	}
	for i := deleted.first; deleted.ok && i <= deleted.last; i++ {
		b.Delete(logKey(i))
	}
	for k, v := range meta {
		b.Put([]byte(k), v)
	}
	if err := db.Write(&b, shale.Sync); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

func rawKeys(t *testing.T, dir string) (logs []uint64, meta []string) {
	t.Helper()
	db, err := shale.Open(dir, &shale.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for e, err := range db.All(nil) {
		if err != nil {
			t.Fatal(err)
		}
		if e.Key[0] == prefixLog {
			i, _ := logKeyIndex(e.Key)
			logs = append(logs, i)
		} else {
			meta = append(meta, string(e.Key))
		}
	}
	return logs, meta
}

func truncationRecord(lo, hi uint64) []byte { return appendUint64(appendUint64(nil, lo), hi) }

// TestInterruptedTruncation: a DeleteRange cut short after its first batch
// is finished by the next read-write New, and left out by a read-only one.
func TestInterruptedTruncation(t *testing.T) {
	for _, tc := range []struct {
		name        string
		pending     span
		deleted     span
		lowWater    uint64
		first, last uint64
	}{
		{"prefix", span{1, 50, true}, span{1, 10, true}, 51, 51, 100},
		{"suffix", span{80, 100, true}, span{80, 90, true}, 0, 1, 79},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			meta := map[string][]byte{string(metaTruncation): truncationRecord(tc.pending.first, tc.pending.last)}
			if tc.lowWater != 0 {
				meta[string(metaLowWater)] = appendUint64(nil, tc.lowWater)
			}
			writeRaw(t, dir, 1, 100, tc.deleted, meta)
			for _, ro := range []bool{true, false} {
				s, err := New(dir, &shale.Options{ReadOnly: ro})
				if err != nil {
					t.Fatal(err)
				}
				first, _ := s.FirstIndex()
				last, _ := s.LastIndex()
				if first != tc.first || last != tc.last {
					t.Errorf("read-only %v: bounds [%d, %d], want [%d, %d]", ro, first, last, tc.first, tc.last)
				}
				s.Close()
			}
			logs, metas := rawKeys(t, dir)
			if len(logs) != int(tc.last-tc.first+1) || logs[0] != tc.first || logs[len(logs)-1] != tc.last {
				t.Errorf("entries left on disk: %d from %d", len(logs), logs[0])
			}
			for _, m := range metas {
				if m == string(metaTruncation) {
					t.Error("the truncation record is still there")
				}
			}
		})
	}
}
