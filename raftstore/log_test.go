package raftstore_test

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/shale-db/shale/raftstore"
)

func TestGapsRefused(t *testing.T) {
	s := openTemp(t)
	mustStore(t, s, entries(5, 7))
	for _, tc := range []struct {
		name string
		logs []*raft.Log
	}{
		{"gap after the last", entries(9, 9)},
		{"overlaps the last", entries(7, 8)},
		{"before the first", entries(3, 4)},
		{"gap inside the batch", []*raft.Log{entry(8, "a"), entry(10, "b")}},
		{"descending batch", []*raft.Log{entry(9, "a"), entry(8, "b")}},
	} {
		if err := s.StoreLogs(tc.logs); !errors.Is(err, raftstore.ErrNonContiguous) {
			t.Errorf("%s: %v, want ErrNonContiguous", tc.name, err)
		}
	}
	if err := s.DeleteRange(6, 6); !errors.Is(err, raftstore.ErrNonContiguous) {
		t.Errorf("DeleteRange inside the log: %v", err)
	}
	checkBounds(t, s, 5, 7)
	for i := uint64(5); i <= 7; i++ {
		checkEntry(t, s, entry(i, fmt.Sprintf("log%d", i)))
	}
	checkMissing(t, s, 8)
	mustStore(t, s, entries(8, 8)) // a refusal leaves the tail where it was
}

func TestDeleteRangeShapes(t *testing.T) {
	s := openTemp(t)
	mustStore(t, s, entries(10, 20))
	steps := []struct {
		from, to    uint64
		first, last uint64
	}{
		{0, 5, 10, 20},   // before the log: nothing
		{21, 99, 10, 20}, // after it: nothing
		{18, 99, 10, 17}, // a suffix, past the end
		{17, 17, 10, 16}, // a suffix of one
		{0, 12, 13, 16},  // a prefix, from before the start
		{13, 13, 14, 16}, // a prefix of one
		{0, 1<<64 - 1, 0, 0},
	}
	for _, st := range steps {
		if err := s.DeleteRange(st.from, st.to); err != nil {
			t.Fatalf("DeleteRange(%d, %d): %v", st.from, st.to, err)
		}
		checkBounds(t, s, st.first, st.last)
	}
	for i := uint64(9); i <= 21; i++ {
		checkMissing(t, s, i)
	}
	if err := s.DeleteRange(5, 4); err != nil {
		t.Fatalf("empty range: %v", err)
	}
}

// TestTruncateSuffixThenAppend is what a follower does when the leader's
// log conflicts with its own: delete the suffix, append the leader's.
func TestTruncateSuffixThenAppend(t *testing.T) {
	dir := t.TempDir()
	s := newStore(t, dir)
	mustStore(t, s, entries(1, 10))
	if err := s.DeleteRange(6, 10); err != nil {
		t.Fatal(err)
	}
	replaced := &raft.Log{Index: 6, Term: 2, Data: []byte("new")}
	mustStore(t, s, []*raft.Log{replaced})
	checkBounds(t, s, 1, 6)
	checkEntry(t, s, replaced)
	s.Close()
	s = newStore(t, dir)
	defer s.Close()
	checkBounds(t, s, 1, 6)
	checkEntry(t, s, replaced)
	checkMissing(t, s, 7)
}

func TestReopenKeepsBounds(t *testing.T) {
	dir := t.TempDir()
	reopen := func(s *raftstore.Store) *raftstore.Store {
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		return newStore(t, dir)
	}
	s := newStore(t, dir)
	s = reopen(s)
	checkBounds(t, s, 0, 0)
	mustStore(t, s, entries(100, 200))
	s = reopen(s)
	checkBounds(t, s, 100, 200)
	if err := s.DeleteRange(100, 150); err != nil {
		t.Fatal(err)
	}
	s = reopen(s)
	checkBounds(t, s, 151, 200)
	checkMissing(t, s, 150)
	checkEntry(t, s, entry(151, "log151"))

	// Everything deleted (as raft does after restoring a snapshot), then a
	// new log that starts below the old one: the low-water mark follows.
	if err := s.DeleteRange(151, 200); err != nil {
		t.Fatal(err)
	}
	s = reopen(s)
	checkBounds(t, s, 0, 0)
	mustStore(t, s, entries(50, 60))
	s = reopen(s)
	checkBounds(t, s, 50, 60)
	checkEntry(t, s, entry(50, "log50"))
	s.Close()
}

// TestDeleteRangeLarge deletes more entries than one batch holds, and
// checks the result before and after reopening.
func TestDeleteRangeLarge(t *testing.T) {
	const n, keep = 40_000, 1_000
	dir := t.TempDir()
	s := newStore(t, dir)
	for i := uint64(1); i <= n; i += 1000 {
		mustStore(t, s, entries(i, i+999))
	}
	if err := s.DeleteRange(1, n-keep); err != nil {
		t.Fatal(err)
	}
	checkBounds(t, s, n-keep+1, n)
	for _, i := range []uint64{1, 16384, 16385, n - keep} {
		checkMissing(t, s, i)
	}
	s.Close()
	s = newStore(t, dir)
	defer s.Close()
	checkBounds(t, s, n-keep+1, n)
	checkEntry(t, s, entry(n-keep+1, fmt.Sprintf("log%d", n-keep+1)))
}

// TestConcurrentStoreLogs appends from 8 goroutines. Each takes the next
// range of indexes and retries while the range before it is not yet
// queued; every acknowledged entry must be readable, now and after
// reopening, and the log must have no gap.
func TestConcurrentStoreLogs(t *testing.T) {
	const writers, perWriter, batch = 8, 20, 16
	dir := t.TempDir()
	s := newStore(t, dir)
	// The first entry is stored before the race: an empty log would take
	// whichever range came first as its start.
	mustStore(t, s, entries(1, 1))
	var next atomic.Uint64
	next.Store(1)
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < perWriter; j++ {
				first := next.Add(batch) - batch + 1
				if err := storeInTurn(s, entries(first, first+batch-1)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	// A reader races the writers: it never sees a bound beyond what is
	// readable.
	stop := make(chan struct{})
	readerDone := make(chan error, 1)
	go func() { readerDone <- readWhileWriting(s, stop) }()
	wg.Wait()
	close(stop)
	if err := <-readerDone; err != nil {
		t.Fatal(err)
	}
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	total := uint64(1 + writers*perWriter*batch)
	checkAll := func(st *raftstore.Store) {
		checkBounds(t, st, 1, total)
		for i := uint64(1); i <= total; i++ {
			checkEntry(t, st, entry(i, fmt.Sprintf("log%d", i)))
		}
	}
	checkAll(s)
	checkAll(reopened(t, s, dir))
}

func reopened(t *testing.T, s *raftstore.Store, dir string) *raftstore.Store {
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = newStore(t, dir)
	t.Cleanup(func() { s.Close() })
	return s
}

// storeInTurn stores logs, retrying while the entries before them are not
// yet queued by another goroutine.
func storeInTurn(s *raftstore.Store, logs []*raft.Log) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := s.StoreLogs(logs)
		if !errors.Is(err, raftstore.ErrNonContiguous) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Microsecond)
	}
}

func readWhileWriting(s *raftstore.Store, stop chan struct{}) error {
	for {
		select {
		case <-stop:
			return nil
		default:
		}
		last, err := s.LastIndex()
		if err != nil {
			return err
		}
		if last == 0 {
			continue
		}
		var l raft.Log
		if err := s.GetLog(last, &l); err != nil {
			return fmt.Errorf("GetLog(LastIndex() = %d): %w", last, err)
		}
	}
}
