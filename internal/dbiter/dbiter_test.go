package dbiter_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/shale-db/shale/internal/dbiter"
	"github.com/shale-db/shale/internal/ikey"
	"github.com/shale-db/shale/internal/iterator"
	"github.com/shale-db/shale/internal/itertest"
)

// history is a small database: user keys a to e, with newer versions,
// deletions and a re-put.
var history = []string{
	"a#1,PUT:a1",
	"b#9,PUT:b9", "b#6,DEL", "b#2,PUT:b2",
	"c#7,DEL", "c#3,PUT:c3",
	"d#8,PUT:d8",
	"e#5,PUT:e5", "e#4,DEL",
}

func newIter(seq uint64, lower, upper string, specs ...string) (*dbiter.Iter, *itertest.Iter) {
	inner := itertest.FromStrings(specs...).Strict()
	var lo, hi []byte
	if lower != "" {
		lo = []byte(lower)
	}
	if upper != "" {
		hi = []byte(upper)
	}
	return dbiter.New(inner, seq, lo, hi), inner
}

func TestVisibility(t *testing.T) {
	for _, tc := range []struct {
		seq  uint64
		want string // the forward scan, then the backward scan must be its reverse
	}{
		{0, ""},
		{1, "a:a1"},
		{2, "a:a1 b:b2"},
		{4, "a:a1 b:b2 c:c3"},
		{5, "a:a1 b:b2 c:c3 e:e5"},
		{6, "a:a1 c:c3 e:e5"},
		{7, "a:a1 e:e5"},
		{8, "a:a1 d:d8 e:e5"},
		{9, "a:a1 b:b9 d:d8 e:e5"},
		{ikey.MaxSeq + 100, "a:a1 b:b9 d:d8 e:e5"},
	} {
		it, inner := newIter(tc.seq, "", "", history...)
		var fwd, bwd string
		for ok := it.First(); ok; ok = it.Next() {
			fwd += fmt.Sprintf(" %s:%s", it.Key(), it.Value())
		}
		for ok := it.Last(); ok; ok = it.Prev() {
			bwd = fmt.Sprintf(" %s:%s", it.Key(), it.Value()) + bwd
		}
		if strings.TrimSpace(fwd) != tc.want || bwd != fwd {
			t.Errorf("seq %d: forward %q, backward %q, want %q", tc.seq, fwd, bwd, tc.want)
		}
		if err := it.Close(); err != nil || inner.Violation() != nil {
			t.Errorf("seq %d: Close %v, violation %v", tc.seq, err, inner.Violation())
		}
	}
}

func TestDirectionChanges(t *testing.T) {
	it, inner := newIter(8, "", "", history...)
	itertest.RunScript(t, it, itertest.UserKeys, `
		next -> .
		first -> a:a1
		next -> d:d8
		prev -> a:a1
		prev -> .
		next -> a:a1
		last -> e:e5
		prev -> d:d8
		next -> e:e5
		next -> .
		prev -> e:e5
		seek-ge b -> d:d8
		prev -> a:a1
		next -> d:d8
		seek-lt e -> d:d8
		next -> e:e5
		seek-lt d -> a:a1
		next -> d:d8
		seek-ge a -> a:a1
		seek-lt a -> .
		next -> a:a1
		seek-ge f -> .
		prev -> e:e5
	`)
	if inner.Violation() != nil {
		t.Fatal(inner.Violation())
	}
}

// In reverse the value shown is the newest visible version's, copied
// before the internal iterator moves past it.
func TestReverseNewestVersion(t *testing.T) {
	it, _ := newIter(20, "", "", "a#10,PUT:new", "a#5,PUT:mid", "a#1,PUT:old", "b#3,PUT:b")
	itertest.RunScript(t, it, itertest.UserKeys, `
		last -> b:b
		prev -> a:new
		next -> b:b
		prev -> a:new
		prev -> .
	`)
	it, _ = newIter(7, "", "", "a#10,PUT:new", "a#5,PUT:mid", "a#1,PUT:old", "b#9,PUT:b", "b#8,DEL")
	itertest.RunScript(t, it, itertest.UserKeys, `
		last -> a:mid
		next -> .
		seek-ge a -> a:mid
		prev -> .
		next -> a:mid
	`)
}

func TestBounds(t *testing.T) {
	it, inner := newIter(9, "b", "e", history...)
	itertest.RunScript(t, it, itertest.UserKeys, `
		first -> b:b9
		next -> d:d8
		next -> .
		prev -> d:d8
		last -> d:d8
		prev -> b:b9
		prev -> .
		next -> b:b9
		seek-ge a -> b:b9
		seek-ge c -> d:d8
		seek-ge e -> .
		seek-ge z -> .
		prev -> d:d8
		seek-lt z -> d:d8
		seek-lt d -> b:b9
		seek-lt b -> .
		seek-lt a -> .
		next -> b:b9
	`)
	if inner.Violation() != nil {
		t.Fatal(inner.Violation())
	}
	// An empty range.
	it, _ = newIter(9, "c", "c", history...)
	itertest.RunScript(t, it, itertest.UserKeys, `
		first -> .
		last -> .
		seek-ge a -> .
		seek-lt z -> .
	`)
}

// spy records the keys the internal iterator stood at.
type spy struct {
	iterator.Iterator
	seen []string
}

func (s *spy) note(ok bool) bool {
	if ok {
		s.seen = append(s.seen, string(ikey.UserKey(s.Key())))
	}
	return ok
}
func (s *spy) First() bool          { return s.note(s.Iterator.First()) }
func (s *spy) Last() bool           { return s.note(s.Iterator.Last()) }
func (s *spy) SeekGE(k []byte) bool { return s.note(s.Iterator.SeekGE(k)) }
func (s *spy) SeekLT(k []byte) bool { return s.note(s.Iterator.SeekLT(k)) }
func (s *spy) Next() bool           { return s.note(s.Iterator.Next()) }
func (s *spy) Prev() bool           { return s.note(s.Iterator.Prev()) }

// Scans stop at the first internal entry beyond a bound.
func TestBoundsStopEarly(t *testing.T) {
	var specs []string
	for c := 'a'; c <= 'z'; c++ {
		specs = append(specs, fmt.Sprintf("%c#2,PUT:x", c), fmt.Sprintf("%c#1,PUT:y", c))
	}
	s := &spy{Iterator: itertest.FromStrings(specs...)}
	it := dbiter.New(s, 10, []byte("m"), []byte("p"))
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	for ok := it.Last(); ok; ok = it.Prev() {
		n++
	}
	if n != 6 {
		t.Fatalf("saw %d entries, want 6", n)
	}
	for _, k := range s.seen {
		if k < "l" || k > "p" {
			t.Fatalf("internal iterator reached %q; saw %v", k, s.seen)
		}
	}
}

func TestCorruption(t *testing.T) {
	bad := [][]byte{
		[]byte("short"),
		append([]byte("b"), 7, 0, 0, 0, 0, 0, 0, 0), // kind 7
	}
	for _, b := range bad {
		kvs := itertest.Parse("a#1,PUT:a", "c#1,PUT:c")
		kvs = append(kvs[:1], itertest.KV{Key: b}, kvs[1])
		for _, script := range []string{"first -> a:a\nnext -> err\nfirst -> err", "last -> err\nfirst -> err"} {
			it := dbiter.New(itertest.New(kvs), 5, nil, nil)
			itertest.RunScript(t, it, itertest.UserKeys, script)
			if !errors.Is(it.Err(), dbiter.ErrCorrupt) || !errors.Is(it.Close(), dbiter.ErrCorrupt) {
				t.Fatalf("key %x: Err = %v, want ErrCorrupt", b, it.Err())
			}
		}
	}
}

func TestInnerError(t *testing.T) {
	boom := errors.New("boom")
	inner := itertest.FromStrings(history...).FailAfter(2, boom)
	it := dbiter.New(inner, 9, nil, nil)
	itertest.RunScript(t, it, itertest.UserKeys, `
		first -> a:a1
		next -> b:b9
		next -> err
		prev -> err
		last -> err
	`)
	if !errors.Is(it.Err(), boom) || !errors.Is(it.Close(), boom) || !errors.Is(it.Close(), boom) {
		t.Fatalf("Err = %v, want boom", it.Err())
	}
	if inner.Closes() != 1 {
		t.Fatalf("inner closed %d times, want 1", inner.Closes())
	}
}

func TestClose(t *testing.T) {
	it, inner := newIter(9, "", "", history...)
	if !it.First() {
		t.Fatal("First failed")
	}
	if it.Close() != nil || it.Close() != nil || inner.Closes() != 1 {
		t.Fatalf("Close twice: inner closed %d times", inner.Closes())
	}
	if it.First() || it.Next() || it.Key() != nil {
		t.Fatal("positioning after Close succeeded")
	}
}
