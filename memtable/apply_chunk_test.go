package memtable

import (
	"fmt"
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
