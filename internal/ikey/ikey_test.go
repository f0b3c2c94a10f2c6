package ikey

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// The encoding is LevelDB's: user key, then fixed64 LE of seq<<8 | kind.
func TestEncodingPinned(t *testing.T) {
	got := Make([]byte("a"), 5, KindSet)
	want := []byte{'a', 0x01, 0x05, 0, 0, 0, 0, 0, 0}
	if !bytes.Equal(got, want) {
		t.Fatalf("Make(a, 5, PUT) = % x, want % x", got, want)
	}
	got = Make(nil, MaxSeq, KindDelete)
	want = []byte{0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	if !bytes.Equal(got, want) {
		t.Fatalf("Make(\"\", MaxSeq, DEL) = % x, want % x", got, want)
	}
	uk, seq, kind, ok := Parse(Make([]byte("key"), 1234, KindDelete))
	if !ok || string(uk) != "key" || seq != 1234 || kind != KindDelete {
		t.Fatalf("Parse round trip: %q %d %v %v", uk, seq, kind, ok)
	}
	if _, _, _, ok := Parse([]byte{1, 2, 3}); ok {
		t.Fatal("Parse accepted a 3-byte key")
	}
	if _, _, _, ok := Parse(append([]byte("k"), 2, 0, 0, 0, 0, 0, 0, 0)); ok {
		t.Fatal("Parse accepted kind 2")
	}
}

func TestCompareOrder(t *testing.T) {
	// User key ascending, then sequence number descending.
	sorted := []string{"a#9,PUT", "a#5,DEL", "a#5,DEL", "a#1,PUT", "ab#100,PUT", "b#0,DEL"}
	for i := 1; i < len(sorted); i++ {
		a, b := ParseString(sorted[i-1]), ParseString(sorted[i])
		c := Compare(a, b)
		if sorted[i-1] == sorted[i] && c != 0 || sorted[i-1] != sorted[i] && c >= 0 {
			t.Fatalf("Compare(%s, %s) = %d", sorted[i-1], sorted[i], c)
		}
	}
	// A seek key sorts before every version it can see.
	if Compare(SeekKey([]byte("a"), 5), ParseString("a#5,PUT")) > 0 ||
		Compare(SeekKey([]byte("a"), 5), ParseString("a#6,PUT")) < 0 {
		t.Fatal("SeekKey(a, 5) is not between a#6 and a#5")
	}
}

func TestStringRoundTrip(t *testing.T) {
	for _, s := range []string{"a#5,PUT", "#0,DEL", "x#y#72057594037927935,PUT"} {
		if got := String(ParseString(s)); got != s {
			t.Fatalf("String(ParseString(%q)) = %q", s, got)
		}
	}
}

// Separator and Successor shorten keys as LevelDB's bytewise comparator
// does, and keep the ordering they promise.
func TestSeparatorSuccessor(t *testing.T) {
	k := func(s string) []byte { return Make([]byte(s), 7, KindSet) }
	for _, tc := range []struct{ a, b, want string }{
		{"abc1xyz", "abc3", "abc2"}, // shortened
		{"abc1", "abc2", "abc1"},    // c+1 == b's byte: unchanged
		{"abc", "abcd", "abc"},      // a prefix of b: unchanged
		{"a\xff", "b", "a\xff"},     // 0xff cannot grow
		{"foo", "zzz", "g"},         // first differing byte
	} {
		got := Separator(nil, k(tc.a), k(tc.b))
		if string(UserKey(got)) != tc.want {
			t.Errorf("Separator(%q, %q) = %q, want %q", tc.a, tc.b, UserKey(got), tc.want)
		}
		if Compare(k(tc.a), got) > 0 || Compare(got, k(tc.b)) >= 0 {
			t.Errorf("Separator(%q, %q) = %s is not in [a, b)", tc.a, tc.b, String(got))
		}
	}
	for _, tc := range []struct{ a, want string }{
		{"abc", "b"}, {"\xff\xffx", "\xff\xffy"}, {"\xff\xff", "\xff\xff"}, {"", ""},
	} {
		got := Successor(nil, k(tc.a))
		if string(UserKey(got)) != tc.want || Compare(got, k(tc.a)) < 0 {
			t.Errorf("Successor(%q) = %s, want user key %q and >= a", tc.a, String(got), tc.want)
		}
	}
}

// Random pairs: the separator always lies in [a, b).
func TestSeparatorRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	key := func() []byte {
		b := make([]byte, r.IntN(6))
		for i := range b {
			b[i] = "ab\x00\xff"[r.IntN(4)]
		}
		return Make(b, r.Uint64N(100), Kind(r.IntN(2)))
	}
	for range 20000 {
		a, b := key(), key()
		if Compare(a, b) >= 0 {
			continue
		}
		s := Separator(nil, a, b)
		if Compare(a, s) > 0 || Compare(s, b) >= 0 {
			t.Fatalf("Separator(%s, %s) = %s", String(a), String(b), String(s))
		}
		if u := Successor(nil, a); Compare(u, a) < 0 {
			t.Fatalf("Successor(%s) = %s < a", String(a), String(u))
		}
	}
}

// TestPrefixesOrder: whenever two keys' prefixes differ, they order the
// keys as bytes.Compare does, for keys around 16 bytes long made of zero,
// one and 0xff bytes (where zero padding could mislead), and the prefixes
// of keys that agree in their first 16 bytes are equal.
func TestPrefixesOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	key := func() []byte {
		k := make([]byte, rng.IntN(21))
		for i := range k {
			k[i] = []byte{0, 1, 0xff}[rng.IntN(3)]
		}
		return k
	}
	for range 200_000 {
		a, b := key(), key()
		a0, a1 := Prefixes(a)
		b0, b1 := Prefixes(b)
		c := bytes.Compare(a, b)
		switch {
		case a0 != b0 && (a0 < b0) != (c < 0):
			t.Fatalf("%x vs %x: first prefixes %x, %x; bytes.Compare %d", a, b, a0, b0, c)
		case a0 == b0 && a1 != b1 && (a1 < b1) != (c < 0):
			t.Fatalf("%x vs %x: second prefixes %x, %x; bytes.Compare %d", a, b, a1, b1, c)
		case len(a) >= 16 && len(b) >= 16 && bytes.Equal(a[:16], b[:16]) && (a0 != b0 || a1 != b1):
			t.Fatalf("%x and %x agree in 16 bytes, prefixes differ", a, b)
		}
	}
	if p0, p1 := Prefixes([]byte("0123456789abcdefXYZ")); p0 != 0x3031323334353637 || p1 != 0x3839616263646566 {
		t.Fatalf("Prefixes of a 19-byte key: %x %x", p0, p1)
	}
}
