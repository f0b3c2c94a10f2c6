package memtable

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/shale-db/shale/internal/batchrepr"
	"github.com/shale-db/shale/internal/ikey"
)

// TestApplyLetsReadersIn applies a batch of 10,000 puts and, between its
// chunks, reads from the same goroutine: with the index's lock held for the
// whole batch those reads would deadlock. Each read sees the memtable as
// before the batch at a sequence number below the batch's, and the batch's
// inserted entries at its own; after Apply, all of them, with the counts
// of one batch. The batch's keys come in order (applyInOrder's way) and in
// reverse (sorted first, applySorted's).
func TestApplyLetsReadersIn(t *testing.T) {
	for c := range 4 {
		var chunks *Chunks
		if c%2 == 1 {
			chunks = NewChunks(0)
		}
		reverse := c >= 2
		m := NewIn(chunks)
		m.Add(1, ikey.KindSet, []byte("before"), []byte("v0"))
		const n, seq = 10000, 100
		key := func(i int) []byte { return fmt.Appendf(nil, "k%05d", i) }
		var repr []byte
		for i := 0; i < n; i++ {
			j := i
			if reverse {
				j = n - 1 - i
			}
			repr = batchrepr.AppendPut(repr, key(j), []byte("v"))
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
			done := calls * applyChunk   // entries inserted so far, in key order
			last := seq + uint64(done-1) // key(done-1)'s sequence number
			if reverse {
				last = seq + uint64(n-done)
			}
			if v, ok, _ := m.Get(key(done-1), last); !ok || string(v) != "v" {
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

// TestApplyInOrder applies large batches whose keys ascend as they stand,
// which Apply appends as it decodes them (applyInOrder), and batches that
// look so until an entry breaks the order, the memtable's last entry
// included, which must go through the sort (applySorted). Each is checked
// against a memtable that took the same entries one by one with Add, and
// ascendsAbove's verdict against the case's. A damaged batch that ascends
// fails and leaves the memtable as it was.
func TestApplyInOrder(t *testing.T) {
	const n = 5000 // above inOrderMin
	key := func(i int) []byte { return fmt.Appendf(nil, "key%07d", i) }
	type tc struct {
		name    string
		keys    func(i int) int // the key of entry i; -1: a range deletion
		inOrder bool
	}
	cases := []tc{
		{"ascending", func(i int) int { return 1000 + 2*i }, true},
		{"with range deletions", func(i int) int {
			if i%700 == 3 {
				return -1
			}
			return 1000 + 2*i
		}, true},
		{"a repeated key", func(i int) int { return 1000 + 2*(i-boolInt(i > n/2)) }, false},
		{"the last one out of order", func(i int) int {
			if i == n-1 {
				return 1001
			}
			return 1000 + 2*i
		}, false},
		{"starting below the top", func(i int) int { return 100 + 2*i }, false},
		{"starting at the top's key", func(i int) int { return 998 + 2*i }, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, chunks := range []*Chunks{nil, NewChunks(0)} {
				m, want := NewIn(chunks), New()
				for i := range 500 { // the top is key 998
					m.Add(uint64(i+1), ikey.KindSet, key(2*i), []byte("old"))
					want.Add(uint64(i+1), ikey.KindSet, key(2*i), []byte("old"))
				}
				const seq = 1000
				var repr []byte
				rdels := 0
				for i := range n {
					s := seq + uint64(i)
					switch k := c.keys(i); {
					case k < 0:
						repr = batchrepr.AppendRangeDelete(repr, key(10+i), key(20+i))
						rdels++
					case i%5 == 4:
						repr = batchrepr.AppendDelete(repr, key(k))
						want.Add(s, ikey.KindDelete, key(k), nil)
					default:
						v := fmt.Appendf(nil, "v%d", i)
						repr = batchrepr.AppendPut(repr, key(k), v)
						want.Add(s, ikey.KindSet, key(k), v)
					}
				}
				m.wmu.Lock()
				inOrder, err := m.ascendsAbove(repr, seq, n)
				m.wmu.Unlock()
				if err != nil || inOrder != c.inOrder {
					t.Fatalf("ascendsAbove: %v, %v; want %v", inOrder, err, c.inOrder)
				}
				if err := m.Apply(repr, seq); err != nil {
					t.Fatal(err)
				}
				// The same batch through applySorted, for the accounting.
				sorted := New()
				for i := range 500 {
					sorted.Add(uint64(i+1), ikey.KindSet, key(2*i), []byte("old"))
				}
				old := inOrderMin
				inOrderMin = 1 << 31
				err = sorted.Apply(repr, seq)
				inOrderMin = old
				if err != nil {
					t.Fatal(err)
				}
				if m.ApproximateSize() != sorted.ApproximateSize() || len(m.RangeDels()) != len(sorted.RangeDels()) {
					t.Fatalf("size %d and %d range deletion spans; applySorted gives %d and %d",
						m.ApproximateSize(), len(m.RangeDels()), sorted.ApproximateSize(), len(sorted.RangeDels()))
				}
				sorted.Unref()
				if got := len(m.RangeDels()); (got > 0) != (rdels > 0) {
					t.Fatalf("%d range deletion spans after %d range deletions", got, rdels)
				}
				if m.Len() != want.Len()+rdels || m.Deletions() != want.Deletions()+rdels {
					t.Fatalf("Len %d, Deletions %d; want %d and %d", m.Len(), m.Deletions(), want.Len()+rdels, want.Deletions()+rdels)
				}
				keys := make([][]byte, 1000+2*n+10)
				for i := range keys {
					keys[i] = key(i)
				}
				sameMemtable(t, m, want, keys, seq+n)
				m.Unref()
				want.Unref()
				if chunks != nil {
					chunks.Close()
				}
			}
		})
	}

	// Damage: a batch that ascends, cut short, and one whose range
	// deletion has no end, change nothing.
	var repr []byte
	for i := range n {
		repr = batchrepr.AppendPut(repr, key(1000+i), []byte("v"))
	}
	openEnd := batchrepr.AppendRangeDelete(bytes.Clone(repr), key(1), nil)
	for _, bad := range [][]byte{repr[:len(repr)-2], openEnd} {
		m := New()
		m.Add(1, ikey.KindSet, key(0), []byte("old"))
		size := m.ApproximateSize()
		if err := m.Apply(bad, 100); err == nil {
			t.Fatal("a damaged batch applied")
		}
		if m.Len() != 1 || m.ApproximateSize() != size {
			t.Fatalf("a failed Apply changed the memtable: Len %d, size %d (was %d)", m.Len(), m.ApproximateSize(), size)
		}
		if _, ok, _ := m.Get(key(1000), ikey.MaxSeq); ok {
			t.Fatal("a failed Apply left an entry")
		}
		m.Unref()
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestApplyInOrderTopEntry applies a large batch in key order whose first
// entry is the memtable's largest entry itself (the same user key, sequence
// number and kind): it does not sort above it, so Apply must replace it
// rather than append a second copy, as insert does.
func TestApplyInOrderTopEntry(t *testing.T) {
	const n, seq = 5000, 1000
	key := func(i int) []byte { return fmt.Appendf(nil, "key%07d", i) }
	m, want := New(), New()
	defer m.Unref()
	defer want.Unref()
	m.Add(seq, ikey.KindSet, key(0), []byte("held"))
	want.Add(seq, ikey.KindSet, key(0), []byte("held"))
	var repr []byte
	for i := range n {
		repr = batchrepr.AppendPut(repr, key(i), []byte("new"))
		want.Add(seq+uint64(i), ikey.KindSet, key(i), []byte("new"))
	}
	m.wmu.Lock()
	inOrder, err := m.ascendsAbove(repr, seq, n)
	m.wmu.Unlock()
	if err != nil || inOrder {
		t.Fatalf("ascendsAbove: %v, %v; want false", inOrder, err)
	}
	if err := m.Apply(repr, seq); err != nil {
		t.Fatal(err)
	}
	if m.Len() != n || m.ApproximateSize() != want.ApproximateSize() {
		t.Fatalf("Len %d, size %d; want %d and %d", m.Len(), m.ApproximateSize(), n, want.ApproximateSize())
	}
	sameMemtable(t, m, want, [][]byte{key(0), key(1), key(n - 1)}, seq+n)
}

// TestApplyInOrderWithReaders applies batches in key order, range
// deletions among them, with inOrderMin lowered so that each takes
// applyInOrder, while other goroutines Get and iterate the memtable (run it
// with -race). Readers read at a sequence number already published, so
// each Get must find what the batches before it wrote, and each iteration
// must see keys in order. At the end the memtable holds what a memtable
// given the same entries by Add holds.
func TestApplyInOrderWithReaders(t *testing.T) {
	defer func(old uint32) { inOrderMin = old }(inOrderMin)
	inOrderMin = 8
	for _, chunks := range []*Chunks{nil, NewChunks(0)} {
		m, want := NewLazy(chunks, 1<<30), New()
		key := func(i int) []byte { return fmt.Appendf(nil, "k%08d", i) }
		var published atomic.Uint64 // the last sequence number applied
		var next atomic.Int64       // the keys below it are written
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for r := range 3 {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(r), 1))
				for {
					select {
					case <-stop:
						return
					default:
					}
					n := int(next.Load()) // before published: the writer stores it after
					seq := published.Load()
					if n == 0 {
						continue
					}
					i := rng.IntN(n)
					if i%7 != 3 { // deleted keys are written as deletions
						if _, ok, del := m.Get(key(i), seq); !ok || del {
							t.Errorf("key %d, written below %d, not found at %d", i, n, seq)
							return
						}
					}
					it := m.NewIter()
					var prev []byte
					c := 0
					for ok := it.SeekGE(ikey.Make(key(i), ikey.MaxSeq, ikey.KindSet)); ok && c < 300; ok = it.Next() {
						if prev != nil && ikey.Compare(prev, it.Key()) >= 0 {
							t.Errorf("iteration went from %q to %q", prev, it.Key())
						}
						prev = append(prev[:0], it.Key()...)
						c++
					}
					it.Close()
				}
			})
		}
		seq := uint64(1)
		k := 0
		for b := range 60 {
			size := 8 + b*97%700
			var repr []byte
			for j := range size {
				s := seq + uint64(j)
				switch {
				case j == size/2:
					repr = batchrepr.AppendRangeDelete(repr, key(k-5), key(k-3))
				case k%7 == 3:
					repr = batchrepr.AppendDelete(repr, key(k))
					want.Add(s, ikey.KindDelete, key(k), nil)
					k++
				default:
					v := fmt.Appendf(nil, "v%d", k)
					repr = batchrepr.AppendPut(repr, key(k), v)
					want.Add(s, ikey.KindSet, key(k), v)
					k++
				}
			}
			m.wmu.Lock()
			inOrder, err := m.ascendsAbove(repr, seq, uint32(size))
			m.wmu.Unlock()
			if err != nil || !inOrder {
				t.Fatalf("batch %d: ascendsAbove %v, %v", b, inOrder, err)
			}
			if err := m.Apply(repr, seq); err != nil {
				t.Fatal(err)
			}
			seq += uint64(size)
			published.Store(seq - 1)
			next.Store(int64(k))
		}
		close(stop)
		wg.Wait()
		keys := make([][]byte, k+1)
		for i := range keys {
			keys[i] = key(i)
		}
		if m.Len() != want.Len()+60 {
			t.Fatalf("Len %d, want %d and 60 range deletions", m.Len(), want.Len())
		}
		sameMemtable(t, m, want, keys, seq)
		m.Unref()
		want.Unref()
		if chunks != nil {
			chunks.Close()
		}
	}
}
