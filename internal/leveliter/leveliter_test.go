package leveliter_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/shale-db/shale/internal/ikey"
	"github.com/shale-db/shale/internal/iterator"
	"github.com/shale-db/shale/internal/itertest"
	"github.com/shale-db/shale/internal/leveliter"
)

// level is a test level: files of entries, and a log of the tables opened.
type level struct {
	t       testing.TB
	files   []file
	opened  []*itertest.Iter
	nums    []int         // file numbers in the order opened
	openErr map[int]error // file number -> error from open
	failAt  map[int]int   // file number -> FailAfter budget
}

type file struct {
	num int
	kvs []itertest.KV
}

var errBoom = errors.New("boom")

func newLevel(t testing.TB, files ...[]itertest.KV) *level {
	l := &level{t: t, openErr: map[int]error{}, failAt: map[int]int{}}
	for i, kvs := range files {
		l.files = append(l.files, file{num: i, kvs: kvs})
	}
	return l
}

func bounds(f file) (smallest, largest []byte) { return f.kvs[0].Key, f.kvs[len(f.kvs)-1].Key }

// open checks that every table opened before is closed: one at a time.
func (l *level) open(f file) (iterator.Iterator, error) {
	for _, o := range l.opened {
		if o.Closes() == 0 {
			l.t.Errorf("opening file %d while another table is open", f.num)
		}
	}
	if err := l.openErr[f.num]; err != nil {
		return nil, fmt.Errorf("open %06d: %w", f.num, err)
	}
	it := itertest.New(f.kvs).Strict()
	if n, ok := l.failAt[f.num]; ok {
		it.FailAfter(n, errBoom)
	}
	l.opened = append(l.opened, it)
	l.nums = append(l.nums, f.num)
	return it, nil
}

func (l *level) iter() *leveliter.Iter[file] { return leveliter.New(l.files, bounds, l.open) }

// check verifies every opened table was closed once and used correctly.
func (l *level) check() {
	l.t.Helper()
	for i, o := range l.opened {
		if o.Closes() != 1 || o.Violation() != nil {
			l.t.Fatalf("table %d: closed %d times, violation %v", i, o.Closes(), o.Violation())
		}
	}
}

func threeFiles(t *testing.T) *level {
	return newLevel(t,
		itertest.Parse("a#5,PUT:1", "b#3,PUT:2"),
		itertest.Parse("c#9,PUT:3", "d#1,DEL", "d#0,PUT:4"),
		itertest.Parse("f#2,PUT:5", "g#1,PUT:6"),
	)
}

func TestLevelScript(t *testing.T) {
	l := threeFiles(t)
	it := l.iter()
	itertest.RunScript(t, it, itertest.InternalKeys, `
		next -> .
		first -> a#5,PUT:1
		next -> b#3,PUT:2
		next -> c#9,PUT:3
		prev -> b#3,PUT:2
		prev -> a#5,PUT:1
		prev -> .
		next -> a#5,PUT:1
		seek-ge b#2,PUT -> c#9,PUT:3
		next -> d#1,DEL:
		next -> d#0,PUT:4
		next -> f#2,PUT:5
		next -> g#1,PUT:6
		next -> .
		prev -> g#1,PUT:6
		seek-lt f#2,PUT -> d#0,PUT:4
		seek-lt zz#0,DEL -> g#1,PUT:6
		seek-lt a#5,PUT -> .
		seek-ge zz#0,DEL -> .
		seek-ge e#7,PUT -> f#2,PUT:5
		last -> g#1,PUT:6
	`)
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	l.check()
}

// A seek opens only the table that can hold the answer.
func TestLevelSeekOpensOneTable(t *testing.T) {
	for _, tc := range []struct {
		op, key string
		want    int // the only file opened
	}{
		{"seek-ge", "c#10,PUT", 1}, // c#10 < c#9: file 1
		{"seek-ge", "b#3,PUT", 0},
		{"seek-ge", "b#2,PUT", 1},
		{"seek-lt", "c#10,PUT", 0}, // below file 1's smallest: file 0's last
		{"seek-lt", "c#9,PUT", 0},
		{"seek-lt", "c#8,PUT", 1},
		{"seek-lt", "e#0,PUT", 1},
		{"seek-lt", "f#3,PUT", 1},
	} {
		l := threeFiles(t)
		it := l.iter()
		itertest.RunScript(t, it, itertest.InternalKeys, tc.op+" "+tc.key+" -> "+firstHit(tc.op, tc.key, l))
		if len(l.nums) != 1 || l.nums[0] != tc.want {
			t.Errorf("%s %s: opened files %v, want only %d", tc.op, tc.key, l.nums, tc.want)
		}
		it.Close()
		l.check()
	}
}

// firstHit computes the expected script result from the flattened level.
func firstHit(op, key string, l *level) string {
	var all []itertest.KV
	for _, f := range l.files {
		all = append(all, f.kvs...)
	}
	k := ikey.ParseString(key)
	i, _ := slices.BinarySearchFunc(all, k, func(kv itertest.KV, k []byte) int { return ikey.Compare(kv.Key, k) })
	if op == "seek-lt" {
		i--
	}
	if i < 0 || i >= len(all) {
		return "."
	}
	return ikey.String(all[i].Key) + ":" + string(all[i].Value)
}

func TestLevelEmpty(t *testing.T) {
	it := leveliter.New(nil, bounds, func(file) (iterator.Iterator, error) {
		t.Fatal("open called on an empty level")
		return nil, nil
	})
	itertest.RunScript(t, it, itertest.InternalKeys, `
		first -> .
		last -> .
		seek-ge a#1,PUT -> .
		seek-lt a#1,PUT -> .
		prev -> .
		next -> .
	`)
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestLevelOpenError(t *testing.T) {
	l := threeFiles(t)
	l.openErr[1] = errBoom
	it := l.iter()
	itertest.RunScript(t, it, itertest.InternalKeys, `
		first -> a#5,PUT:1
		next -> b#3,PUT:2
		next -> err
		next -> err
		last -> err
	`)
	if err := it.Close(); !errors.Is(err, errBoom) || !errors.Is(it.Close(), errBoom) {
		t.Fatalf("Close = %v, want boom (twice)", err)
	}
	l.check()
}

func TestLevelTableError(t *testing.T) {
	l := threeFiles(t)
	l.failAt[2] = 1 // Last succeeds, the next Prev fails
	it := l.iter()
	itertest.RunScript(t, it, itertest.InternalKeys, `
		last -> g#1,PUT:6
		prev -> err
		first -> err
	`)
	if !errors.Is(it.Err(), errBoom) || !errors.Is(it.Close(), errBoom) {
		t.Fatalf("Err = %v, want boom", it.Err())
	}
	l.check()
}

func TestLevelRandom(t *testing.T) {
	rng := itertest.Rand(t)
	cfg := itertest.Config{
		Cmp:       ikey.Compare,
		SeekKey:   func(r *rand.Rand) []byte { return itertest.InternalKey(r, 22) },
		FormatKey: ikey.String,
		Ops:       200,
	}
	for trial := range itertest.Scale(400, 40000) {
		want := randomEntries(rng)
		l := newLevel(t, split(rng, want)...)
		inject := len(l.files) > 0 && rng.IntN(5) == 0
		if inject {
			f := rng.IntN(len(l.files))
			if rng.IntN(2) == 0 {
				l.openErr[f] = errBoom
			} else {
				l.failAt[f] = rng.IntN(10)
			}
		}
		it := l.iter()
		err := itertest.Run(rng, it, want, cfg)
		if err != nil && !(inject && errors.Is(err, errBoom)) {
			t.Fatalf("trial %d: %v\nfiles: %v", trial, err, l.files)
		}
		if cerr := it.Close(); (cerr != nil) != (err != nil) {
			t.Fatalf("trial %d: Close = %v after run error %v", trial, cerr, err)
		}
		l.check()
	}
}

// randomEntries returns sorted distinct internal keys with values.
func randomEntries(rng *rand.Rand) []itertest.KV {
	var kvs []itertest.KV
	for i := range rng.IntN(60) {
		kvs = append(kvs, itertest.KV{Key: itertest.InternalKey(rng, 20), Value: fmt.Appendf(nil, "v%d", i)})
	}
	slices.SortFunc(kvs, func(a, b itertest.KV) int { return ikey.Compare(a.Key, b.Key) })
	return slices.CompactFunc(kvs, func(a, b itertest.KV) bool { return ikey.Compare(a.Key, b.Key) == 0 })
}

// split cuts kvs into non-empty runs at random points.
func split(rng *rand.Rand, kvs []itertest.KV) [][]itertest.KV {
	var files [][]itertest.KV
	for len(kvs) > 0 {
		n := 1 + rng.IntN(min(len(kvs), 8))
		files = append(files, kvs[:n:n])
		kvs = kvs[n:]
	}
	return files
}

// scanIter is a table iterator that counts each step as a block read in
// order, and records the run it was told to continue.
type scanIter struct {
	iterator.Iterator
	run       int
	continued int // -1: ContinueScan was not called
}

func (s *scanIter) ScanRun() int         { return s.run }
func (s *scanIter) ContinueScan(n int)   { s.continued, s.run = n, n }
func (s *scanIter) First() bool          { s.run++; return s.Iterator.First() }
func (s *scanIter) Next() bool           { s.run++; return s.Iterator.Next() }
func (s *scanIter) SeekGE(k []byte) bool { s.run = 1; return s.Iterator.SeekGE(k) }

// Next into the following table hands it the run of blocks the table
// before read in order; a First or a seek starts a table afresh.
func TestLevelNextContinuesScan(t *testing.T) {
	l := threeFiles(t)
	var opened []*scanIter
	it := leveliter.New(l.files, bounds, func(f file) (iterator.Iterator, error) {
		inner, err := l.open(f)
		s := &scanIter{Iterator: inner, continued: -1}
		opened = append(opened, s)
		return s, err
	})
	for ok := it.First(); ok; ok = it.Next() {
	}
	// file 0: First, Next, Next (past its end): run 3; file 1 continues
	// it, then First, Next, Next, Next: run 3+4.
	if len(opened) != 3 || opened[0].continued != -1 || opened[1].continued != 3 || opened[2].continued != 7 {
		t.Fatalf("continued runs %v, want -1, 3, 7", continuedRuns(opened))
	}
	opened = nil
	if !it.SeekGE(ikey.ParseString("c#9,PUT")) {
		t.Fatal("SeekGE c#9 found nothing")
	}
	if len(opened) != 1 || opened[0].continued != -1 {
		t.Fatalf("a seek's table continued a scan: %v", continuedRuns(opened))
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	l.check()
}

func continuedRuns(its []*scanIter) []int {
	var runs []int
	for _, s := range its {
		runs = append(runs, s.continued)
	}
	return runs
}
