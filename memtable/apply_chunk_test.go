package memtable

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/shale-db/shale/internal/batchrepr"
	"github.com/shale-db/shale/internal/ikey"
)

// TestApplyLetsReadersIn applies a batch of 10,000 puts and, between its
// chunks, reads from the same goroutine: with the index's lock held for the
// whole batch those reads would deadlock. Each read sees the memtable as
// before the batch at a sequence number below the batch's, and the batch's
// inserted entries at its own; after Apply, all of them, with the counts
// of one batch.
func TestApplyLetsReadersIn(t *testing.T) {
	for _, chunks := range []*Chunks{nil, NewChunks(0)} {
		m := NewIn(chunks)
		m.Add(1, ikey.KindSet, []byte("before"), []byte("v0"))
		const n, seq = 10000, 100
		key := func(i int) []byte { return fmt.Appendf(nil, "k%05d", i) }
		var repr []byte
		for i := 0; i < n; i++ {
			repr = batchrepr.AppendPut(repr, key(i), []byte("v"))
		}
		calls := 0
		testHookApplyChunk = func() {
			calls++
			if !m.mu.TryRLock() {
				t.Fatalf("chunk %d: the index is locked between chunks", calls)
			}
			m.mu.RUnlock()
			if v, ok, _ := m.Get([]byte("before"), seq-1); !ok || string(v) != "v0" {
				t.Fatalf("chunk %d: an entry from before the batch: %q, %v", calls, v, ok)
			}
			if _, ok, del := m.Get(key(0), seq-1); ok || del {
				t.Fatalf("chunk %d: the batch's first entry is visible below its sequence number", calls)
			}
			done := calls * applyChunk // entries inserted so far
			if v, ok, _ := m.Get(key(done-1), seq+uint64(done-1)); !ok || string(v) != "v" {
				t.Fatalf("chunk %d: entry %d, inserted, not found at its sequence number", calls, done-1)
			}
		}
		err := m.Apply(repr, seq)
		testHookApplyChunk = nil
		if err != nil {
			t.Fatal(err)
		}
		if want := (n - 1) / applyChunk; calls != want {
			t.Fatalf("%d pauses between chunks, want %d", calls, want)
		}
		if m.Len() != n+1 {
			t.Fatalf("Len %d, want %d", m.Len(), n+1)
		}
		for i := 0; i < n; i++ {
			if _, ok, _ := m.Get(key(i), seq+n); !ok {
				t.Fatalf("entry %d missing after Apply", i)
			}
		}
		m.Unref()
		if chunks != nil {
			chunks.Close()
		}
	}
}

// TestApplySortsLargeBatch applies batches below and above sortApplyMin,
// of random keys that repeat within the batch, puts and deletions mixed,
// into a memtable that already holds some of those keys, and checks it
// against one that took the same entries one by one with Add: the same
// entries in the same order, and every key's newest version found by Get
// at the batch's last sequence number.
func TestApplySortsLargeBatch(t *testing.T) {
	for _, n := range []int{sortApplyMin / 2, sortApplyMin, 3 * sortApplyMin} {
		t.Run(fmt.Sprintf("n=%d", n), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(n), 9))
			m, want := New(), New()
			for i := range 500 {
				k := fmt.Appendf(nil, "key%06d", rng.IntN(n))
				m.Add(uint64(i+1), ikey.KindSet, k, []byte("old"))
				want.Add(uint64(i+1), ikey.KindSet, k, []byte("old"))
			}
			const seq = 1000
			var repr []byte
			for i := range n {
				k := fmt.Appendf(nil, "key%06d", rng.IntN(n))
				if rng.IntN(4) == 0 {
					repr = batchrepr.AppendDelete(repr, k)
					want.Add(seq+uint64(i), ikey.KindDelete, k, nil)
				} else {
					v := fmt.Appendf(nil, "v%d", i)
					repr = batchrepr.AppendPut(repr, k, v)
					want.Add(seq+uint64(i), ikey.KindSet, k, v)
				}
			}
			if err := m.Apply(repr, seq); err != nil {
				t.Fatal(err)
			}
			if m.Len() != want.Len() || m.Deletions() != want.Deletions() || m.ApproximateSize() != want.ApproximateSize() {
				t.Fatalf("n=%d: Len %d, Deletions %d, size %d; want %d, %d, %d", n,
					m.Len(), m.Deletions(), m.ApproximateSize(), want.Len(), want.Deletions(), want.ApproximateSize())
			}
			keys := make([][]byte, n)
			for i := range keys {
				keys[i] = fmt.Appendf(nil, "key%06d", i)
			}
			sameMemtable(t, m, want, keys, seq+uint64(n))
			m.Unref()
			want.Unref()
		})
	}
}

// TestApplyAppendsBatchesInOrder applies batches of keys in order, each
// above everything before it (a sequential fill's batches, which take
// index.appendAbove), puts and deletions mixed, some batches too small to
// be appended, and one that starts below the top, and checks the memtable
// against one that took the same entries one by one.
func TestApplyAppendsBatchesInOrder(t *testing.T) {
	for _, chunks := range []*Chunks{nil, NewChunks(0)} {
		testApplyAppends(t, NewIn(chunks))
	}
}

func testApplyAppends(t *testing.T, m *Memtable) {
	want := New()
	seq := uint64(1)
	next := 0
	for b, size := range []int{1, 7, 8, 300, 1000, 3, 5000, 64} {
		start := next
		if b == 6 {
			start = next - 10 // overlaps the top: inserted one by one
		}
		var repr []byte
		for i := range size {
			k := fmt.Appendf(nil, "key%07d", start+i)
			if i%5 == 4 {
				repr = batchrepr.AppendDelete(repr, k)
				want.Add(seq+uint64(i), ikey.KindDelete, k, nil)
			} else {
				v := fmt.Appendf(nil, "v%d", seq+uint64(i))
				repr = batchrepr.AppendPut(repr, k, v)
				want.Add(seq+uint64(i), ikey.KindSet, k, v)
			}
		}
		if err := m.Apply(repr, seq); err != nil {
			t.Fatal(err)
		}
		seq += uint64(size)
		next = max(next, start+size)
	}
	if m.Len() != want.Len() || m.Deletions() != want.Deletions() || m.ApproximateSize() != want.ApproximateSize() {
		t.Fatalf("Len %d, Deletions %d, size %d; want %d, %d, %d",
			m.Len(), m.Deletions(), m.ApproximateSize(), want.Len(), want.Deletions(), want.ApproximateSize())
	}
	keys := make([][]byte, next)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "key%07d", i)
	}
	sameMemtable(t, m, want, keys, seq)
}

// sameMemtable fails t unless m holds want's entries, in the same order
// forward and backward, and answers Get at seq for every one of keys as
// want does.
func sameMemtable(t *testing.T, m, want *Memtable, keys [][]byte, seq uint64) {
	t.Helper()
	got, exp := m.NewIter(), want.NewIter()
	defer got.Close()
	defer exp.Close()
	n := 0
	ok1, ok2 := got.First(), exp.First()
	for ; ok1 && ok2; ok1, ok2 = got.Next(), exp.Next() {
		if !bytes.Equal(got.Key(), exp.Key()) || !bytes.Equal(got.Value(), exp.Value()) {
			t.Fatalf("entry %d is %q=%q, want %q=%q", n, got.Key(), got.Value(), exp.Key(), exp.Value())
		}
		n++
	}
	if ok1 || ok2 || n != want.Len() {
		t.Fatalf("iterated %d entries (more: %v, %v), want %d", n, ok1, ok2, want.Len())
	}
	ok1, ok2 = got.Last(), exp.Last()
	for ; ok1 && ok2; ok1, ok2 = got.Prev(), exp.Prev() {
		if !bytes.Equal(got.Key(), exp.Key()) {
			t.Fatalf("backward: %q, want %q", got.Key(), exp.Key())
		}
	}
	if ok1 || ok2 {
		t.Fatalf("backward: one memtable has more entries (%v, %v)", ok1, ok2)
	}
	for _, k := range keys {
		v1, f1, d1 := m.Get(k, seq)
		v2, f2, d2 := want.Get(k, seq)
		if f1 != f2 || d1 != d2 || !bytes.Equal(v1, v2) {
			t.Fatalf("Get(%s) = %q, %v, %v; want %q, %v, %v", k, v1, f1, d1, v2, f2, d2)
		}
	}
}
