package itertest

import (
	"strings"
	"testing"

	"github.com/shale-db/shale/internal/ikey"
	"github.com/shale-db/shale/internal/iterator"
)

// Keys says how a script writes keys: Parse reads a seek argument, Format
// prints a result.
type Keys struct {
	Parse  func(string) []byte
	Format func([]byte) string
}

var (
	// InternalKeys writes internal keys as "a#5,PUT".
	InternalKeys = Keys{Parse: ikey.ParseString, Format: ikey.String}
	// UserKeys writes keys as they are.
	UserKeys = Keys{
		Parse:  func(s string) []byte { return []byte(s) },
		Format: func(k []byte) string { return string(k) },
	}
)

// RunScript runs a readable table test against it. Each non-empty line of
// script is "OP [KEY] -> RESULT", where OP is first, last, next, prev,
// seek-ge or seek-lt, and RESULT is "key:value" for an entry, "." for a
// false result with Err nil, or "err" for false with Err non-nil. Lines
// starting with "#" are comments.
func RunScript(t testing.TB, it iterator.Iterator, keys Keys, script string) {
	t.Helper()
	for n, line := range strings.Split(script, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		op, want, ok := strings.Cut(line, "->")
		if !ok {
			t.Fatalf("line %d: no -> in %q", n, line)
		}
		op, want = strings.TrimSpace(op), strings.TrimSpace(want)
		if got := runOp(t, it, keys, op); got != want {
			t.Fatalf("line %d: %s: got %s, want %s", n, op, got, want)
		}
	}
}

func runOp(t testing.TB, it iterator.Iterator, keys Keys, op string) string {
	t.Helper()
	name, arg, _ := strings.Cut(op, " ")
	var ok bool
	switch name {
	case "first":
		ok = it.First()
	case "last":
		ok = it.Last()
	case "next":
		ok = it.Next()
	case "prev":
		ok = it.Prev()
	case "seek-ge":
		ok = it.SeekGE(keys.Parse(strings.TrimSpace(arg)))
	case "seek-lt":
		ok = it.SeekLT(keys.Parse(strings.TrimSpace(arg)))
	default:
		t.Fatalf("unknown op %q", op)
	}
	switch {
	case ok:
		return keys.Format(it.Key()) + ":" + string(it.Value())
	case it.Err() != nil:
		return "err"
	}
	return "."
}
