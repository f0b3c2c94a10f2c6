package manifest

import (
	"encoding/hex"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/shale-db/shale/internal/filename"
	"github.com/shale-db/shale/internal/ikey"
)

func meta(num uint64, size int64, smallest, largest string) *FileMeta {
	return &FileMeta{Num: num, Size: size, Smallest: ikey.ParseString(smallest), Largest: ikey.ParseString(largest)}
}

// pinnedEdit has one of every field; pinnedHex is its encoding, computed by
// hand from LevelDB's tag table.
func pinnedEdit() *VersionEdit {
	e := new(VersionEdit)
	e.SetComparator(BytewiseComparator)
	e.SetLogNumber(5)
	e.SetPrevLogNumber(0)
	e.SetNextFileNumber(300)
	e.SetLastSequence(128)
	e.SetCompactPointer(1, ikey.ParseString("a#3,PUT"))
	e.DeleteFile(2, 7)
	e.AddFile(0, meta(9, 1000, "b#2,DEL", "c#4,PUT"))
	return e
}

var pinnedHex = strings.Join([]string{
	"01" + "1a" + hex.EncodeToString([]byte("leveldb.BytewiseComparator")), // tag 1, len 26
	"02" + "05",   // log number 5
	"09" + "00",   // prev log number 0
	"03" + "ac02", // next file number 300 = 0x2c|0x80, 0x02
	"04" + "8001", // last sequence 128
	"05" + "01" + "09" + "61" + "0103000000000000", // compact pointer L1, "a", 3<<8|PUT
	"06" + "02" + "07", // deleted file L2 #7
	"07" + "00" + "09" + "e807" + // new file L0 #9, size 1000
		"09" + "62" + "0002000000000000" + // smallest "b", 2<<8|DEL
		"09" + "63" + "0104000000000000", // largest "c", 4<<8|PUT
}, "")

func TestEncodePinned(t *testing.T) {
	got := hex.EncodeToString(pinnedEdit().Encode(nil))
	if got != pinnedHex {
		t.Fatalf("encoding\n got %s\nwant %s", got, pinnedHex)
	}
	b, _ := hex.DecodeString(pinnedHex)
	var e VersionEdit
	if err := e.Decode(b); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&e, pinnedEdit()) {
		t.Fatalf("decoded %+v", e)
	}
}

func TestEncodeRoundTrip(t *testing.T) {
	edits := []*VersionEdit{
		{},
		pinnedEdit(),
		func() *VersionEdit {
			e := new(VersionEdit)
			e.SetLastSequence(ikey.MaxSeq)
			e.SetLogNumber(filename.MaxNum)
			e.SetNextFileNumber(filename.MaxNum + 1)
			for l := 0; l < NumLevels; l++ {
				e.AddFile(l, meta(uint64(100+l), 1<<40, "\x00\xff#1,PUT", "zz#0,DEL"))
				e.DeleteFile(l, uint64(l))
			}
			return e
		}(),
	}
	for i, e := range edits {
		var got VersionEdit
		if err := got.Decode(e.Encode(nil)); err != nil {
			t.Fatalf("edit %d: %v", i, err)
		}
		if !reflect.DeepEqual(&got, e) {
			t.Fatalf("edit %d: decoded %+v, want %+v", i, got, *e)
		}
	}
}

func TestDecodeDoesNotAlias(t *testing.T) {
	b := pinnedEdit().Encode(nil)
	var e VersionEdit
	if err := e.Decode(b); err != nil {
		t.Fatal(err)
	}
	for i := range b {
		b[i] = 0xee
	}
	if !reflect.DeepEqual(&e, pinnedEdit()) {
		t.Fatal("decoded edit changed with its input")
	}
}

func TestDecodeCorrupt(t *testing.T) {
	cases := []struct {
		name, hex, want string
	}{
		{"tag 8 (retired)", "0205" + "0800", "unknown tag 8 at offset 2"},
		{"tag 0", "00", "unknown tag 0 at offset 0"},
		{"huge tag", "ffffffff0f", "unknown tag 4294967295 at offset 0"},
		{"truncated tag", "0205" + "80", "tag at offset 2: truncated varint"},
		{"truncated value", "0280", "log number at offset 1: truncated varint"},
		{"missing value", "03", "next file number at offset 1: truncated varint"},
		{"varint overflow", "04" + "ffffffffffffffffff7f", "last sequence at offset 1: varint overflows"},
		{"level 7", "060701", "level at offset 1: level out of range"},
		{"huge level", "06ffffffff0f01", "level at offset 1: level out of range"},
		{"length past end", "011b" + hex.EncodeToString([]byte("leveldb.BytewiseComparator")), "comparator at offset 1: length past the end"},
		{"short key", "0501" + "03616263", "compact pointer at offset 2: shorter than an internal key"},
		{"empty key", "0501" + "00", "compact pointer at offset 2: shorter than an internal key"},
		{"size above int64", "070009" + "ffffffffffffffffff01", "file size at offset 3: size out of range"},
		{"truncated new file", "0700090a" + "09620002000000000000", "largest key length at offset 14: truncated varint"},
	}
	for _, c := range cases {
		b, err := hex.DecodeString(c.hex)
		if err != nil {
			t.Fatalf("%s: bad test hex: %v", c.name, err)
		}
		var e VersionEdit
		e.SetLogNumber(99)
		err = e.Decode(b)
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: err = %v, want ErrCorrupt", c.name, err)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %q, want it to contain %q", c.name, err, c.want)
		}
		if !reflect.DeepEqual(e, VersionEdit{}) {
			t.Errorf("%s: failed Decode left %+v", c.name, e)
		}
	}
}

func TestDuplicateFieldKeepsLast(t *testing.T) {
	b, _ := hex.DecodeString("0205" + "0207")
	var e VersionEdit
	if err := e.Decode(b); err != nil || e.LogNumber != 7 {
		t.Fatalf("LogNumber = %d, err %v; want 7", e.LogNumber, err)
	}
}

func TestEditString(t *testing.T) {
	e := pinnedEdit()
	e.AddFile(3, meta(10, 5, "\x00k#1,PUT", "k\xff#2,DEL"))
	want := `comparator: leveldb.BytewiseComparator
log-number: 5
prev-log-number: 0
next-file-number: 300
last-sequence: 128
compact-pointer: L1 a#3,PUT
deleted-file: L2 000007
new-file: L0 000009 1000B [b#2,DEL .. c#4,PUT]
new-file: L3 000010 5B ["\x00k"#1,PUT .. "k\xff"#2,DEL]
`
	if got := e.String(); got != want {
		t.Fatalf("String:\n%s\nwant:\n%s", got, want)
	}
}

func TestValidate(t *testing.T) {
	bad := []*VersionEdit{
		{NewFiles: []NewFile{{Level: 0}}},
		{NewFiles: []NewFile{{Level: 7, Meta: meta(1, 1, "a#1,PUT", "b#1,PUT")}}},
		{NewFiles: []NewFile{{Level: 1, Meta: &FileMeta{Num: 1, Smallest: []byte("a"), Largest: ikey.ParseString("b#1,PUT")}}}},
		{NewFiles: []NewFile{{Level: 1, Meta: meta(1, -1, "a#1,PUT", "b#1,PUT")}}},
		{DeletedFiles: []DeletedFile{{Level: -1, Num: 3}}},
		{CompactPointers: []CompactPointer{{Level: 2, Key: nil}}},
	}
	for i, e := range bad {
		if err := e.Validate(); err == nil || errors.Is(err, ErrCorrupt) {
			t.Errorf("edit %d: Validate = %v, want a non-corruption error", i, err)
		}
	}
	if err := pinnedEdit().Validate(); err != nil {
		t.Fatal(err)
	}
}

// A file number above filename.MaxNum is damage: no reader parses such a
// file's name back, and past 2^64 the counter would wrap to zero and give
// live files' numbers to new files, which Create truncates.
func TestDecodeRefusesHugeFileNumbers(t *testing.T) {
	const huge = filename.MaxNum + 1
	for name, e := range map[string]*VersionEdit{
		"log number":          {LogNumber: huge, HasLogNumber: true},
		"prev log number":     {PrevLogNumber: huge, HasPrevLogNumber: true},
		"next file number":    {NextFileNumber: huge + 1, HasNextFileNumber: true},
		"deleted file number": func() *VersionEdit { e := new(VersionEdit); e.DeleteFile(1, huge); return e }(),
		"new file number": func() *VersionEdit {
			e := new(VersionEdit)
			e.AddFile(1, meta(huge, 10, "a#1,PUT", "b#1,PUT"))
			return e
		}(),
		"max uint64": {NextFileNumber: math.MaxUint64, HasNextFileNumber: true},
	} {
		var got VersionEdit
		err := got.Decode(e.Encode(nil))
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "above the largest file number") || !strings.Contains(err.Error(), "at offset") {
			t.Errorf("%s: Decode = %v; want ErrCorrupt naming the field and its offset", name, err)
		}
	}
}
