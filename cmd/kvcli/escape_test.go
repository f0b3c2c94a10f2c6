package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestEscapePinned pins the escaped form of chosen byte strings.
func TestEscapePinned(t *testing.T) {
	tests := []struct{ in, out string }{
		{"", ""},
		{"hello world", "hello world"},
		{"a\tb\nc\rd", `a\tb\nc\rd`},
		{`back\slash`, `back\\slash`},
		{"\x00\x01\x7f", `\x00\x01\x7f`},
		{"\xff\xfe", `\xff\xfe`},
		{"é ключ 鍵 🔑", "é ключ 鍵 🔑"},
		{"\u200b", `\xe2\x80\x8b`},       // zero width space: not printable
		{"\u00a0", `\xc2\xa0`},           // no-break space: not printable
		{"\ufffd", "\ufffd"},             // U+FFFD itself is printable
		{"\xc3", `\xc3`},                 // a lone lead byte
		{"\xed\xa0\x80", `\xed\xa0\x80`}, // an encoded surrogate is invalid
		{`\x41`, `\\x41`},
	}
	for _, tc := range tests {
		if got := escape([]byte(tc.in)); got != tc.out {
			t.Errorf("escape(%q) = %q, want %q", tc.in, got, tc.out)
		}
		if got, err := unescape(tc.out); err != nil || string(got) != tc.in {
			t.Errorf("unescape(%q) = %q, %v; want %q", tc.out, got, err, tc.in)
		}
	}
}

func TestUnescapeErrors(t *testing.T) {
	for _, s := range []string{`\`, `a\`, `\q`, `\x`, `\x4`, `\xzz`, `\u0041`, `\"`} {
		if b, err := unescape(s); err == nil {
			t.Errorf("unescape(%q) = %q, want an error", s, b)
		}
	}
	if b, err := unescape(`\xAb`); err != nil || string(b) != "\xab" {
		t.Errorf("unescape of upper-case hex: %q, %v", b, err)
	}
}

// FuzzEscape checks that escaping is exact and line-safe for any bytes.
func FuzzEscape(f *testing.F) {
	for _, s := range []string{"", "a\tb", "\xff", "\\", "é\x00\n", "\u2028"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s := escape(b)
		if strings.ContainsAny(s, "\t\n\r") {
			t.Fatalf("escape(%q) = %q holds a tab or line break", b, s)
		}
		got, err := unescape(s)
		if err != nil || !bytes.Equal(got, b) {
			t.Fatalf("unescape(escape(%q)) = %q, %v", b, got, err)
		}
	})
}

// FuzzUnescape checks that unescape never panics, and that what it accepts
// escapes back to an equivalent form.
func FuzzUnescape(f *testing.F) {
	for _, s := range []string{`a\tb`, `\xff`, `\\`, `\x4`, `\`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := unescape(s)
		if err != nil {
			return
		}
		if got, err := unescape(escape(b)); err != nil || !bytes.Equal(got, b) {
			t.Fatalf("round trip of %q: %q, %v", b, got, err)
		}
	})
}
