package memtable

import (
	"bytes"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shale-db/shale/internal/batchrepr"
	"github.com/shale-db/shale/internal/ikey"
)

// TestConcurrentWriterReadersIterators runs one writer applying batches
// against readers and iterators, as the engine does: the writer publishes
// the last sequence number it applied, and readers read at a published
// sequence number. Batch b writes keysPerBatch keys, each with value b, so
// any reader at the sequence number published after batch b must see b
// for every key (a batch is atomic), and an iterator created after that
// publication must see every entry at or below it exactly once, in order,
// in both directions. Batches of 8 entries go in under one hold of the
// index's lock; batches of 668 in three chunks (applyChunk). With a
// filter (NewSized), whose smallest size fills up during the run, Gets go
// through it: it must never hide a key.
func TestConcurrentWriterReadersIterators(t *testing.T) {
	for _, keysPerBatch := range []int{8, 3*applyChunk - 100} {
		for _, filter := range []bool{false, true} {
			t.Run(fmt.Sprintf("%d/filter=%v", keysPerBatch, filter), func(t *testing.T) {
				m := New()
				if filter {
					m = NewSized(nil, 1)
				}
				testConcurrentWriterReadersIterators(t, m, keysPerBatch)
			})
		}
	}
}

func testConcurrentWriterReadersIterators(t *testing.T, m *Memtable, keysPerBatch int) {
	batches := 3000
	// The writer also stops at the deadline, so a loaded machine (or -race)
	// runs fewer batches rather than longer.
	deadline := time.Now().Add(time.Second)
	var visible atomic.Uint64 // last sequence number applied
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the writer
		defer wg.Done()
		defer close(done)
		var repr []byte
		for b := 1; b <= batches && time.Now().Before(deadline); b++ {
			repr = repr[:0]
			val := []byte(strconv.Itoa(b))
			for k := 0; k < keysPerBatch; k++ {
				key := []byte(fmt.Sprintf("key%d", (k*7+b)%keysPerBatch)) // vary the order within a batch
				if b%5 == 0 && k%2 == 0 {
					repr = batchrepr.AppendDelete(repr, key)
				} else {
					repr = batchrepr.AppendPut(repr, key, val)
				}
			}
			seq := uint64(b-1)*uint64(keysPerBatch) + 1
			if err := m.Apply(repr, seq); err != nil {
				t.Error(err)
				return
			}
			visible.Store(seq + uint64(keysPerBatch) - 1)
		}
	}()
	errs := make(chan error, 8)
	for r := 0; r < 2; r++ {
		wg.Add(2)
		go func() { defer wg.Done(); errs <- checkGets(m, &visible, done, keysPerBatch) }()
		go func() { defer wg.Done(); errs <- checkIters(m, &visible, done) }()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

func checkGets(m *Memtable, visible *atomic.Uint64, done <-chan struct{}, keysPerBatch int) error {
	for {
		select {
		case <-done:
			return nil
		default:
		}
		seq := visible.Load()
		if seq == 0 {
			continue
		}
		b := int(seq) / keysPerBatch // the last batch applied at seq
		for k := 0; k < keysPerBatch; k++ {
			key := []byte(fmt.Sprintf("key%d", k))
			v, found, deleted := m.Get(key, seq)
			switch {
			case found && string(v) == strconv.Itoa(b):
			case deleted && b%5 == 0:
			default:
				return fmt.Errorf("Get(%s, %d) = %q, %v, %v; batch %d", key, seq, v, found, deleted, b)
			}
		}
	}
}

// checkIters scans the memtable forwards and backwards, and checks that
// each pass holds every sequence number <= the visible one exactly once,
// in ikey.Compare order. Every few entries it steps back and forth, and
// checks that, counting only visible entries (seq <= the visible one, as
// the engine filters), it lands where it was.
func checkIters(m *Memtable, visible *atomic.Uint64, done <-chan struct{}) error {
	for pass := 0; ; pass++ {
		select {
		case <-done:
			return nil
		default:
		}
		seq := visible.Load()
		it := m.NewIter()
		seen := make([]bool, seq+1)
		var prev []byte
		forward := pass%2 == 0
		ok := it.First()
		if !forward {
			ok = it.Last()
		}
		for ; ok; ok = move(it, forward) {
			k := it.Key()
			if prev != nil && (ikey.Compare(prev, k) < 0) != forward {
				return fmt.Errorf("out of order: %s then %s", ikey.String(prev), ikey.String(k))
			}
			if s := ikey.Seq(k); s <= seq {
				if seen[s] {
					return fmt.Errorf("%s seen twice", ikey.String(k))
				}
				seen[s] = true
				if s%7 == 0 {
					if err := backAndForth(it, seq, prev, forward); err != nil {
						return err
					}
				}
				prev = k
			}
		}
		it.Close()
		if i := bytes.IndexByte(boolBytes(seen[1:]), 0); i >= 0 {
			return fmt.Errorf("pass %d: sequence number %d of %d missing", pass, i+1, seq)
		}
	}
}

// backAndForth moves the iterator, which stands at a visible entry, one
// visible entry back (expecting prev, the visible entry before it in this
// pass's direction) and one forward again (expecting where it started).
func backAndForth(it *Iterator, seq uint64, prev []byte, forward bool) error {
	cur := it.Key()
	ok := moveVisible(it, !forward, seq)
	switch {
	case prev == nil && ok:
		return fmt.Errorf("stepping back from the first entry %s found %s", ikey.String(cur), ikey.String(it.Key()))
	case prev == nil:
		// Off the end; moving forward again starts over.
		if !moveVisible(it, forward, seq) || ikey.Compare(it.Key(), cur) != 0 {
			return fmt.Errorf("could not return to %s", ikey.String(cur))
		}
		return nil
	case !ok || ikey.Compare(it.Key(), prev) != 0:
		return fmt.Errorf("stepping back from %s did not find %s", ikey.String(cur), ikey.String(prev))
	}
	if !moveVisible(it, forward, seq) || ikey.Compare(it.Key(), cur) != 0 {
		return fmt.Errorf("stepping forward from %s did not return to %s", ikey.String(prev), ikey.String(cur))
	}
	return nil
}

// moveVisible moves to the next entry in the direction with seq <= seq.
func moveVisible(it *Iterator, forward bool, seq uint64) bool {
	for {
		if !move(it, forward) {
			return false
		}
		if ikey.Seq(it.Key()) <= seq {
			return true
		}
	}
}

func move(it *Iterator, forward bool) bool {
	if forward {
		return it.Next()
	}
	return it.Prev()
}

func boolBytes(bs []bool) []byte {
	out := make([]byte, len(bs))
	for i, b := range bs {
		if b {
			out[i] = 1
		}
	}
	return out
}
