package merging_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/shale-db/shale/internal/iterator"
	"github.com/shale-db/shale/internal/itertest"
	"github.com/shale-db/shale/internal/merging"
)

func strict(specs ...string) *itertest.Iter { return itertest.FromStrings(specs...).Strict() }

func TestMergeBothWays(t *testing.T) {
	a := strict("a#9,PUT:a9", "c#4,PUT:c4", "e#1,DEL")
	b := strict("a#7,DEL", "b#5,PUT:b5", "e#3,PUT:e3")
	c := strict("d#2,PUT:d2")
	m := merging.New(a, b, c, strict())
	itertest.RunScript(t, m, itertest.InternalKeys, `
		next -> .
		prev -> .
		first -> a#9,PUT:a9
		next -> a#7,DEL:
		next -> b#5,PUT:b5
		next -> c#4,PUT:c4
		next -> d#2,PUT:d2
		next -> e#3,PUT:e3
		next -> e#1,DEL:
		next -> .
		next -> .
		# Prev after running off the end is Last.
		prev -> e#1,DEL:
		prev -> e#3,PUT:e3
		prev -> d#2,PUT:d2
		prev -> c#4,PUT:c4
		prev -> b#5,PUT:b5
		prev -> a#7,DEL:
		prev -> a#9,PUT:a9
		prev -> .
		prev -> .
		# Next after running off the start is First.
		next -> a#9,PUT:a9
	`)
	checkStrict(t, a, b, c)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestMergeSeeksAndDirectionChanges(t *testing.T) {
	a := strict("a#9,PUT:1", "c#4,PUT:2", "e#1,DEL")
	b := strict("a#7,DEL", "b#5,PUT:3", "e#3,PUT:4")
	c := strict("d#2,PUT:5")
	m := merging.New(a, b, c)
	itertest.RunScript(t, m, itertest.InternalKeys, `
		seek-ge a#8,PUT -> a#7,DEL:
		prev -> a#9,PUT:1
		next -> a#7,DEL:
		next -> b#5,PUT:3
		prev -> a#7,DEL:
		next -> b#5,PUT:3
		next -> c#4,PUT:2
		seek-lt d#2,PUT -> c#4,PUT:2
		next -> d#2,PUT:5
		prev -> c#4,PUT:2
		prev -> b#5,PUT:3
		next -> c#4,PUT:2
		seek-ge f#0,PUT -> .
		prev -> e#1,DEL:
		seek-lt a#9,PUT -> .
		next -> a#9,PUT:1
		seek-lt e#2,PUT -> e#3,PUT:4
		next -> e#1,DEL:
		prev -> e#3,PUT:4
		last -> e#1,DEL:
		prev -> e#3,PUT:4
		next -> e#1,DEL:
		first -> a#9,PUT:1
		prev -> .
	`)
	checkStrict(t, a, b, c)
}

// Equal internal keys in several sources come out ordered by source index,
// forward and backward, across direction changes.
func TestMergeEqualKeys(t *testing.T) {
	m := merging.New(
		strict("a#1,PUT:0", "b#1,PUT:0"),
		strict("a#1,PUT:1", "b#1,PUT:1"),
		strict("a#1,PUT:2"),
	)
	itertest.RunScript(t, m, itertest.InternalKeys, `
		first -> a#1,PUT:0
		next -> a#1,PUT:1
		next -> a#1,PUT:2
		prev -> a#1,PUT:1
		prev -> a#1,PUT:0
		next -> a#1,PUT:1
		next -> a#1,PUT:2
		next -> b#1,PUT:0
		next -> b#1,PUT:1
		prev -> b#1,PUT:0
		prev -> a#1,PUT:2
		last -> b#1,PUT:1
		prev -> b#1,PUT:0
		prev -> a#1,PUT:2
		seek-ge a#1,PUT -> a#1,PUT:0
		seek-lt b#1,PUT -> a#1,PUT:2
	`)
}

func TestMergeNoSources(t *testing.T) {
	m := merging.New()
	itertest.RunScript(t, m, itertest.InternalKeys, `
		first -> .
		last -> .
		next -> .
		seek-ge a#1,PUT -> .
	`)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestMergeChildError(t *testing.T) {
	boom := errors.New("boom")
	// The second source fails on its third positioning call: its Next
	// from b#5 during the forward scan.
	a := strict("a#9,PUT:1", "c#4,PUT:2", "e#1,PUT:3")
	b := strict("a#7,PUT:4", "b#5,PUT:5", "d#3,PUT:6").FailAfter(2, boom)
	m := merging.New(a, b)
	itertest.RunScript(t, m, itertest.InternalKeys, `
		first -> a#9,PUT:1
		next -> a#7,PUT:4
		next -> b#5,PUT:5
		next -> err
		next -> err
		first -> err
		seek-ge a#0,PUT -> err
		prev -> err
	`)
	if !errors.Is(m.Err(), boom) {
		t.Fatalf("Err = %v, want boom", m.Err())
	}
	if err := m.Close(); !errors.Is(err, boom) {
		t.Fatalf("Close = %v, want boom", err)
	}
	checkStrict(t, a)
}

type closeErrIter struct {
	iterator.Iterator
	err    error
	closes int
}

func (c *closeErrIter) Close() error { c.closes++; return c.err }

func TestMergeCloseOnce(t *testing.T) {
	e1, e2 := errors.New("e1"), errors.New("e2")
	kids := []*closeErrIter{
		{Iterator: iterator.Empty(nil)},
		{Iterator: iterator.Empty(nil), err: e1},
		{Iterator: iterator.Empty(nil), err: e2},
	}
	m := merging.New(kids[0], kids[1], kids[2])
	for i := 0; i < 2; i++ {
		if err := m.Close(); err != e1 {
			t.Fatalf("Close #%d = %v, want e1", i, err)
		}
	}
	for i, k := range kids {
		if k.closes != 1 {
			t.Errorf("child %d closed %d times, want 1", i, k.closes)
		}
	}
	if m.First() || m.Next() {
		t.Fatal("positioning after Close returned true")
	}
}

func checkStrict(t *testing.T, iters ...*itertest.Iter) {
	t.Helper()
	for i, it := range iters {
		if err := it.Violation(); err != nil {
			t.Errorf("source %d: %v", i, err)
		}
	}
}

func ExampleNew() {
	m := merging.New(
		itertest.FromStrings("a#3,PUT:new", "c#2,PUT:c"),
		itertest.FromStrings("a#1,PUT:old", "b#1,DEL"),
	)
	defer m.Close()
	for ok := m.First(); ok; ok = m.Next() {
		fmt.Printf("%s=%s ", itertest.InternalKeys.Format(m.Key()), m.Value())
	}
	// Output: a#3,PUT=new a#1,PUT=old b#1,DEL= c#2,PUT=c
}
