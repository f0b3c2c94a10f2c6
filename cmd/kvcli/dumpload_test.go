package main

import (
	"bytes"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shale-db/shale"
)

// nastyEntries are keys and values that a naive line format would garble.
var nastyEntries = map[string]string{
	"plain":                  "value",
	"tab\there":              "new\nline",
	"cr\r\n":                 "\r",
	"back\\slash":            `\x41 is not an escape here`,
	"\xff\xfe invalid utf8":  "\xc3\x28 also invalid",
	"nul\x00byte":            "\x00",
	"empty value":            "",
	"unicode ключ 鍵 🔑":       "zero\u200bwidth and \u2028 line separator",
	"\x1b[31mescape\x1b[0m":  "bell\a",
	"U+FFFD \ufffd is valid": "\xef\xbf\xbd",
	`{"key":"json"}`:         `"quoted"` + "\t",
	"trailing backslash\\":   "\\",
}

func fillNasty(t *testing.T, dir string) map[string]string {
	t.Helper()
	want := map[string]string{}
	for k, v := range nastyEntries {
		want[k] = v
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		k := make([]byte, 1+r.IntN(20))
		v := make([]byte, r.IntN(300))
		for i := range k {
			k[i] = byte(r.IntN(256))
		}
		for i := range v {
			v[i] = byte(r.IntN(256))
		}
		want[string(k)] = string(v)
	}
	fill(t, dir, func(db *shale.DB) {
		for k, v := range want {
			put(t, db, k, v)
		}
	})
	return want
}

// TestDumpLoadRoundTrip pipes dump into load, in each format, and checks
// that the copy holds exactly the same bytes.
func TestDumpLoadRoundTrip(t *testing.T) {
	src := t.TempDir()
	want := fillNasty(t, src)
	for _, flags := range [][]string{nil, {"--json"}, {"--hex"}, {"--json", "--hex"}} {
		t.Run(strings.Join(append([]string{"text"}, flags...), ""), func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "copy")
			pipe(t, append([]string{"--db", src, "dump"}, flags...), append([]string{"--db", dst, "load", "--batch", "7"}, flags...))
			got := contents(t, dst)
			if len(got) != len(want) {
				t.Errorf("copy has %d entries, want %d", len(got), len(want))
			}
			bad := 0
			for k, v := range want {
				if g, ok := got[k]; !ok || g != v {
					t.Errorf("key %q: got %q (present %v), want %q", k, g, ok, v)
					if bad++; bad == 5 {
						t.FailNow()
					}
				}
			}
		})
	}
}

// pipe runs "kvcli from... | kvcli to..." and fails unless both exit 0.
func pipe(t *testing.T, from, to []string) {
	t.Helper()
	a := exec.Command(kvcliBin, from...)
	b := exec.Command(kvcliBin, to...)
	out, err := a.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	b.Stdin = out
	var aErr, bErr bytes.Buffer
	a.Stderr, b.Stderr = &aErr, &bErr
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	if err := a.Run(); err != nil {
		t.Fatalf("kvcli %q: %v: %s", from, err, aErr.String())
	}
	if err := b.Wait(); err != nil {
		t.Fatalf("kvcli %q: %v: %s", to, err, bErr.String())
	}
}

// TestDumpFormat pins the text and JSON lines dump writes.
func TestDumpFormat(t *testing.T) {
	dir := t.TempDir()
	fill(t, dir, func(db *shale.DB) {
		put(t, db, "a\tb", "x\ny")
		put(t, db, "bin\xff", "<&>")
	})
	if got, w := ok(t, "", "--db", dir, "dump"), `a\tb`+"\t"+`x\ny`+"\n"+`bin\xff`+"\t<&>\n"; got != w {
		t.Errorf("dump = %q, want %q", got, w)
	}
	w := `{"key":"a\tb","value":"x\ny"}` + "\n" + `{"key_base64":"Ymlu/w==","value":"<&>"}` + "\n"
	if got := ok(t, "", "--db", dir, "dump", "--json"); got != w {
		t.Errorf("dump --json = %q, want %q", got, w)
	}
	w = "610962\t780a79\n62696eff\t3c263e\n"
	if got := ok(t, "", "--db", dir, "dump", "--hex"); got != w {
		t.Errorf("dump --hex = %q, want %q", got, w)
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		input, errPart string
		flags          []string
		a              string // the value of "a" afterwards
	}{
		{"a\t1\nno tab here\nc\t3\n", "line 2: no tab between key and value", nil, "1"},
		{"a\t1\nb\\q\t2\n", `line 2: key: unknown escape \q`, nil, "1"},
		{"a\t1\nb\t\\x4\n", `line 2: value: \x at offset 0 needs two hex digits`, nil, "1"},
		{`{"key":"a","value":"1"}` + "\n" + `{"key":"b"}` + "\n", `line 2: want exactly one of "value"`, []string{"--json"}, "1"},
		{`{"key":"a","value":"1","extra":1}` + "\n", `line 1: json: unknown field "extra"`, []string{"--json"}, ""},
		{`{"key_base64":"!!","value":"1"}` + "\n", "line 1: key_base64", []string{"--json"}, ""},
	}
	for _, tc := range tests {
		dir := t.TempDir()
		r := kv(t, tc.input, nil, append([]string{"--db", dir, "load"}, tc.flags...)...)
		if r.code != 3 || !strings.Contains(r.stderr, tc.errPart) {
			t.Errorf("load %q: exit %d, stderr %q; want 3 and %q", tc.input, r.code, r.stderr, tc.errPart)
		}
		// The lines before the bad one are loaded.
		if got := contents(t, dir); got["a"] != tc.a {
			t.Errorf("load %q: lines before the error not loaded: %q", tc.input, got)
		}
	}
}

func TestLoadCRLF(t *testing.T) {
	dir := t.TempDir()
	ok(t, "a\t1\r\nb\t2\r\n", "--db", dir, "load")
	if got := contents(t, dir); got["a"] != "1" || got["b"] != "2" || len(got) != 2 {
		t.Errorf("load of CRLF lines: %q", got)
	}
}
