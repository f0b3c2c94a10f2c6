package batchrepr

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/shale-db/shale/internal/ikey"
)

type entry struct {
	kind       ikey.Kind
	key, value []byte
}

func encode(seq uint64, es []entry) []byte {
	var repr []byte
	for _, e := range es {
		switch e.kind {
		case ikey.KindSet:
			repr = AppendPut(repr, e.key, e.value)
		case ikey.KindRangeDelete:
			repr = AppendRangeDelete(repr, e.key, e.value)
		default:
			repr = AppendDelete(repr, e.key)
		}
	}
	repr = withHeader(repr)
	SetSeq(repr, seq)
	return repr
}

// decodeAll returns the entries a Reader yields and its error.
func decodeAll(repr []byte) ([]entry, error) {
	var es []entry
	r := NewReader(repr)
	for {
		kind, k, v, ok := r.Next()
		if !ok {
			return es, r.Err()
		}
		es = append(es, entry{kind, k, v})
	}
}

func TestPinnedEncoding(t *testing.T) {
	repr := AppendPut(nil, []byte("a"), []byte("xy"))
	repr = AppendDelete(repr, []byte("bc"))
	SetSeq(repr, 0x0102030405060708)
	want := []byte{
		0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, // seq, fixed64 LE
		0x02, 0x00, 0x00, 0x00, // count, fixed32 LE
		0x01, 0x01, 'a', 0x02, 'x', 'y', // put "a" = "xy"
		0x00, 0x02, 'b', 'c', // delete "bc"
	}
	if !bytes.Equal(repr, want) {
		t.Fatalf("encoding:\n got %x\nwant %x", repr, want)
	}
	if Seq(repr) != 0x0102030405060708 || Count(repr) != 2 {
		t.Fatalf("Seq, Count = %#x, %d", Seq(repr), Count(repr))
	}
	// A 200-byte key takes a two-byte varint: 200 = 0x48 | 1<<7 -> c8 01.
	long := AppendDelete(nil, bytes.Repeat([]byte{'k'}, 200))
	if got := long[HeaderLen : HeaderLen+3]; !bytes.Equal(got, []byte{0x00, 0xc8, 0x01}) {
		t.Fatalf("long key prefix %x, want 00c801", got)
	}
	if len(long) != HeaderLen+DeleteLen(200) || len(repr) != HeaderLen+PutLen(1, 2)+DeleteLen(2) {
		t.Fatal("PutLen/DeleteLen disagree with the writers")
	}
	if HeaderLen != 12 || TagDelete != 0 || TagPut != 1 {
		t.Fatal("format constants changed")
	}
}

func randomEntries(rng *rand.Rand, n int) []entry {
	es := make([]entry, n)
	for i := range es {
		k := make([]byte, rng.IntN(20))
		for j := range k {
			k[j] = byte(rng.Uint32())
		}
		es[i] = entry{kind: ikey.KindDelete, key: k}
		if rng.IntN(3) > 0 {
			v := make([]byte, rng.IntN(300))
			for j := range v {
				v[j] = byte(rng.Uint32())
			}
			es[i] = entry{ikey.KindSet, k, v}
		}
	}
	return es
}

func equalEntries(a, b []entry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].kind != b[i].kind || !bytes.Equal(a[i].key, b[i].key) || !bytes.Equal(a[i].value, b[i].value) {
			return false
		}
	}
	return true
}

func TestRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := 0; iter < 200; iter++ {
		es := randomEntries(rng, rng.IntN(20))
		seq := rng.Uint64N(ikey.MaxSeq - 100)
		repr := encode(seq, es)
		n, err := Validate(repr)
		if err != nil || n != uint32(len(es)) {
			t.Fatalf("Validate = %d, %v; want %d, nil", n, err, len(es))
		}
		got, err := decodeAll(repr)
		if err != nil || !equalEntries(got, es) {
			t.Fatalf("decode = %v, %v; want %v", got, err, es)
		}
		if r := NewReader(repr); r.Seq() != seq || r.Count() != uint32(len(es)) {
			t.Fatalf("Reader header = %d, %d", r.Seq(), r.Count())
		}
	}
}

func TestValueSlicesCannotOverwrite(t *testing.T) {
	repr := AppendPut(nil, []byte("k"), []byte("v"))
	repr = AppendPut(repr, []byte("l"), []byte("w"))
	orig := bytes.Clone(repr)
	r := NewReader(repr)
	_, k, v, _ := r.Next()
	_ = append(k, 'X')
	_ = append(v, 'Y')
	if !bytes.Equal(repr, orig) {
		t.Fatal("appending to a returned slice changed the batch")
	}
}

func TestCorruption(t *testing.T) {
	valid := encode(7, []entry{{ikey.KindSet, []byte("a"), []byte("xy")}, {ikey.KindDelete, []byte("bc"), nil}})
	withCount := func(n uint32) []byte { b := bytes.Clone(valid); SetCount(b, n); return b }
	patch := func(off int, c ...byte) []byte { b := bytes.Clone(valid); copy(b[off:], c); return b }
	maxSeq := bytes.Clone(valid)
	SetSeq(maxSeq, ikey.MaxSeq)
	tests := []struct {
		name string
		repr []byte
		want string // in the message, with the offset
	}{
		{"empty", nil, "shorter than its 12-byte header at offset 0"},
		{"short header", valid[:11], "batch of 11 bytes"},
		{"count too large", withCount(3), "header counts 3 entries, batch ends after 2 at offset 22"},
		{"count too small", withCount(1), "4 bytes follow the 1 entries the header counts at offset 18"},
		{"zero count with entries", withCount(0), "10 bytes follow"},
		{"unknown tag", patch(18, 2), "unknown tag 2 in entry 1 at offset 18"},
		{"key length past end", patch(19, 3), "key length 3 in entry 1 runs past the end (2 bytes left) at offset 19"},
		{"value length past end", patch(15, 0x7f), "value length 127 in entry 0 runs past the end"},
		{"truncated varint", append(withCount(3), 1, 0x80), "truncated key length in entry 2 at offset 23"},
		{"non-minimal varint", append(append(withCount(3), 0, 0x81, 0x00), "k"...), "malformed key length in entry 2 at offset 23"},
		{"varint over 32 bits", append(withCount(3), 0, 0xff, 0xff, 0xff, 0xff, 0x10), "malformed key length"},
		{"varint too long", append(withCount(3), 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01), "malformed key length"},
		{"sequence overflow", maxSeq, "exceeds the maximum at offset 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Validate(tc.repr)
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Validate error %v does not match ErrCorrupt", err)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "batchrepr: corrupt batch: ") {
				t.Fatalf("error %q, want it to contain %q", err, tc.want)
			}
			if _, rerr := decodeAll(tc.repr); rerr == nil || rerr.Error() != err.Error() {
				t.Fatalf("Reader error %v, Validate error %v", rerr, err)
			}
		})
	}
}

func TestUvarint32(t *testing.T) {
	tests := []struct {
		in []byte
		v  uint32
		n  int
	}{
		{[]byte{0}, 0, 1},
		{[]byte{0x7f, 0xff}, 127, 1},
		{[]byte{0x80, 0x01}, 128, 2},
		{[]byte{0xff, 0xff, 0xff, 0xff, 0x0f}, 1<<32 - 1, 5},
		{[]byte{0xff, 0xff, 0xff, 0xff, 0x1f}, 0, -1},
		{[]byte{0x80, 0x00}, 0, -1},
		{[]byte{0x80}, 0, 0},
		{nil, 0, 0},
	}
	for _, tc := range tests {
		if v, n := uvarint32(tc.in); v != tc.v || n != tc.n {
			t.Errorf("uvarint32(%x) = %d, %d; want %d, %d", tc.in, v, n, tc.v, tc.n)
		}
	}
}

// TestTruncations checks that every proper prefix of a valid batch fails
// cleanly, after yielding only a prefix of the true entries.
func TestTruncations(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	es := randomEntries(rng, 12)
	repr := encode(42, es)
	for i := 0; i < len(repr); i++ {
		got, err := decodeAll(repr[:i])
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("prefix of %d bytes: error %v", i, err)
		}
		if !equalEntries(got, es[:len(got)]) {
			t.Fatalf("prefix of %d bytes yielded wrong entries", i)
		}
		if _, verr := Validate(repr[:i]); verr == nil {
			t.Fatalf("Validate accepted a prefix of %d bytes", i)
		}
	}
}

func TestAppend(t *testing.T) {
	a := encode(10, []entry{{ikey.KindSet, []byte("a"), []byte("1")}})
	b := encode(99, []entry{{ikey.KindDelete, []byte("b"), nil}, {ikey.KindSet, []byte("c"), []byte("3")}})
	empty := encode(5, nil)

	got := Append(nil, nil)
	got = Append(got, a)
	got = Append(got, empty)
	got = Append(got, nil)
	got = Append(got, b)
	want := encode(10, []entry{{ikey.KindSet, []byte("a"), []byte("1")}, {ikey.KindDelete, []byte("b"), nil}, {ikey.KindSet, []byte("c"), []byte("3")}})
	if !bytes.Equal(got, want) {
		t.Fatalf("Append:\n got %x\nwant %x", got, want)
	}
	if &got[0] == &a[0] {
		t.Fatal("Append into nil aliased src")
	}
}

func TestNoAllocs(t *testing.T) {
	repr := encode(1, randomEntries(rand.New(rand.NewPCG(5, 6)), 50))
	if n := testing.AllocsPerRun(100, func() { _, _ = Validate(repr) }); n != 0 {
		t.Errorf("Validate allocates %v times", n)
	}
	if n := testing.AllocsPerRun(100, func() {
		r := NewReader(repr)
		for _, _, _, ok := r.Next(); ok; _, _, _, ok = r.Next() {
		}
	}); n != 0 {
		t.Errorf("Reader allocates %v times", n)
	}
}

func FuzzDecode(f *testing.F) {
	rng := rand.New(rand.NewPCG(7, 8))
	for i := 0; i < 8; i++ {
		f.Add(encode(rng.Uint64N(1000), randomEntries(rng, i)))
	}
	f.Add(AppendDelete(nil, nil))
	f.Add(AppendPut(AppendRangeDelete(nil, []byte("a"), []byte("m")), []byte("b"), []byte("v")))
	f.Add(AppendRangeDelete(nil, []byte{}, nil)) // no end: a Batch's, before the commit gives one
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, repr []byte) {
		n, verr := Validate(repr)
		es, err := decodeAll(repr)
		if (err == nil) != (verr == nil) {
			t.Fatalf("Reader error %v, Validate error %v", err, verr)
		}
		// ValidateCommitted: Validate's answer, and an error as well for
		// a range deletion with no end.
		cn, cerr := ValidateCommitted(repr)
		openEnd := false
		for _, e := range es {
			openEnd = openEnd || e.kind == ikey.KindRangeDelete && len(e.value) == 0
		}
		switch {
		case err != nil && (cerr == nil || cerr.Error() != verr.Error()):
			t.Fatalf("ValidateCommitted error %v, Validate's %v", cerr, verr)
		case err == nil && openEnd != (cerr != nil):
			t.Fatalf("ValidateCommitted error %v on a batch with an open-ended range deletion: %v", cerr, openEnd)
		case cerr == nil && cn != n:
			t.Fatalf("ValidateCommitted count %d, Validate's %d", cn, n)
		case cerr != nil && !errors.Is(cerr, ErrCorrupt):
			t.Fatalf("ValidateCommitted error %v does not match ErrCorrupt", cerr)
		}
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not match ErrCorrupt", err)
			}
			return
		}
		if n != uint32(len(es)) {
			t.Fatalf("Validate count %d, decoded %d", n, len(es))
		}
		if re := encode(Seq(repr), es); !bytes.Equal(re, repr) {
			t.Fatalf("re-encoding differs:\n got %x\nwant %x", re, repr)
		}
	})
}

// TestRangeDelete: a range deletion round-trips with its start and end,
// in order with the puts and deletes around it, and its size is what
// RangeDeleteLen says.
func TestRangeDelete(t *testing.T) {
	repr := AppendPut(nil, []byte("a"), []byte("1"))
	before := len(repr)
	repr = AppendRangeDelete(repr, []byte("b"), []byte("zz"))
	if got := len(repr) - before; got != RangeDeleteLen(1, 2) {
		t.Fatalf("range deletion of %d bytes, RangeDeleteLen says %d", got, RangeDeleteLen(1, 2))
	}
	repr = AppendDelete(repr, []byte("c"))
	es, err := decodeAll(repr)
	if err != nil {
		t.Fatal(err)
	}
	want := []entry{{ikey.KindSet, []byte("a"), []byte("1")}, {ikey.KindRangeDelete, []byte("b"), []byte("zz")}, {ikey.KindDelete, []byte("c"), nil}}
	if fmt.Sprint(es) != fmt.Sprint(want) || Count(repr) != 3 {
		t.Fatalf("decoded %v (count %d), want %v", es, Count(repr), want)
	}
}

func ExampleReader() {
	repr := AppendPut(nil, []byte("apple"), []byte("red"))
	repr = AppendDelete(repr, []byte("pear"))
	SetSeq(repr, 100)

	r := NewReader(repr)
	for i := uint64(0); ; i++ {
		kind, key, value, ok := r.Next()
		if !ok {
			break
		}
		fmt.Printf("%s %q\n", ikey.String(ikey.Make(key, r.Seq()+i, kind)), value)
	}
	fmt.Println(r.Err())
	// Output:
	// apple#100,PUT "red"
	// pear#101,DEL ""
	// <nil>
}
