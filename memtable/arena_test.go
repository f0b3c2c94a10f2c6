package memtable

import (
	"bytes"
	"fmt"
	"runtime"
	"testing"

	"github.com/shale-db/shale/internal/ikey"
)

// fillPooled adds n entries of 100-byte values to a memtable from c and
// returns it with the values it holds, by key.
func fillPooled(t *testing.T, c *Chunks, n int) (*Memtable, map[string][]byte) {
	t.Helper()
	m := NewIn(c)
	want := make(map[string][]byte, n)
	for i := range n {
		k := fmt.Sprintf("key%06d", (i*7919)%n)
		v := bytes.Repeat([]byte{byte('a' + i%26)}, 100)
		m.Add(uint64(i+1), ikey.KindSet, []byte(k), v)
		want[k] = v
	}
	return m, want
}

// A memtable from NewIn keeps its bytes in chunks from its pool while a
// reference is held, and gives every chunk back at the last Unref: test
// binaries poison what is given back, so a slice read after it shows.
func TestChunksHeldUntilLastUnref(t *testing.T) {
	c := NewChunks(64 << 20) // keeps every freed chunk mapped, so reading one after release is safe here
	m, want := fillPooled(t, c, 2000)
	held, free := c.Stats()
	if min := 2000 * 124 / arenaChunkSize; held < min || free != 0 {
		t.Fatalf("after 2,000 entries of 124 bytes: %d chunks held, %d free; want at least %d held, none free", held, free, min)
	}
	v, found, _ := m.Get([]byte("key000007"), ikey.MaxSeq)
	if !found || !bytes.Equal(v, want["key000007"]) {
		t.Fatalf("Get = %q, %v", v, found)
	}

	m.Ref() // a reader's reference
	m.Unref()
	it := m.NewIter()
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		if k := string(ikey.UserKey(it.Key())); !bytes.Equal(it.Value(), want[k]) {
			t.Fatalf("%s = %q, want %q", k, it.Value(), want[k])
		}
		n++
	}
	it.Close()
	if n != len(want) {
		t.Fatalf("iterated %d entries, want %d", n, len(want))
	}
	if h, _ := c.Stats(); h != held {
		t.Fatalf("after a reader's Ref and Unref: %d chunks held, want %d", h, held)
	}

	m.Unref() // the creator's, the last
	if h, f := c.Stats(); h != 0 || f != held {
		t.Fatalf("after the last Unref: %d held, %d free; want 0 and %d", h, f, held)
	}
	if !bytes.Equal(v, bytes.Repeat([]byte{0xdd}, len(v))) {
		t.Fatalf("a value read before the last Unref still holds %q: the chunk was not given back", v)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("an Unref past the last reference did not panic")
		}
	}()
	m.Unref()
}

// The next memtable reuses the chunks the last one gave back, values of
// more than a quarter of a chunk stay on the Go heap, and Close unmaps the
// free chunks.
func TestChunksReused(t *testing.T) {
	c := NewChunks(1 << 20)
	m, _ := fillPooled(t, c, 1000)
	big := bytes.Repeat([]byte{'z'}, arenaChunkSize/2)
	m.Add(5000, ikey.KindSet, []byte("big"), big)
	held, _ := c.Stats()
	m.Unref()
	m2, want := fillPooled(t, c, 1000)
	if h, f := c.Stats(); h != held || f != 0 {
		t.Fatalf("the next memtable of the same entries: %d held, %d free; want %d and 0 (the large value off the pool)", h, f, held)
	}
	for k, v := range want {
		if got, found, _ := m2.Get([]byte(k), ikey.MaxSeq); !found || !bytes.Equal(got, v) {
			t.Fatalf("%s = %q, %v in a memtable of reused chunks", k, got, found)
		}
	}
	m2.Unref()
	c.Close()
	if h, f := c.Stats(); h != 0 || f != 0 {
		t.Fatalf("after Close: %d held, %d free", h, f)
	}
	m3, want := fillPooled(t, c, 10) // a pool still hands out chunks after Close
	if got, _, _ := m3.Get([]byte("key000003"), ikey.MaxSeq); !bytes.Equal(got, want["key000003"]) {
		t.Fatalf("after Close: %q", got)
	}
	m3.Unref()
	if h, f := c.Stats(); h != 0 || f != 0 {
		t.Fatalf("a chunk given back after Close stayed: %d held, %d free", h, f)
	}
}

// Trim unmaps the free chunks but keeps later ones, unlike Close.
func TestChunksTrim(t *testing.T) {
	c := NewChunks(1 << 20)
	m, _ := fillPooled(t, c, 1000)
	m.Unref()
	if _, f := c.Stats(); f == 0 {
		t.Fatal("no free chunk kept after the last Unref")
	}
	c.Trim()
	if h, f := c.Stats(); h != 0 || f != 0 {
		t.Fatalf("after Trim: %d held, %d free", h, f)
	}
	m, _ = fillPooled(t, c, 1000)
	held, _ := c.Stats()
	m.Unref()
	if _, f := c.Stats(); f != held {
		t.Fatalf("after Trim, a memtable's %d chunks given back: %d kept, want all", held, f)
	}
	c.Close()
}

// A memtable from NewIn keeps its index's leaves in its chunks too: its
// entries cost the Go heap almost nothing, and the chunks it holds stay
// near what ApproximateSize charges.
func TestLeavesOutsideHeap(t *testing.T) {
	const n = 20_000
	for _, sequential := range []bool{true, false} {
		c := NewChunks(0)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		m := NewIn(c)
		for i := range n {
			j := i
			if !sequential {
				j = i * 7919 % n
			}
			k := []byte(fmt.Sprintf("%016d", j))
			m.Add(uint64(i+1), ikey.KindSet, k, bytes.Repeat(k, 6))
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		heap := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / n
		held, _ := c.Stats()
		t.Logf("sequential %v: %d bytes of Go heap an entry; %d chunks held for ApproximateSize %d", sequential, heap, held, m.ApproximateSize())
		if heap > 8 {
			t.Errorf("sequential %v: %d bytes of Go heap an entry, want the leaves outside it", sequential, heap)
		}
		perEntry := (int64(held)*arenaChunkSize - int64(n*(16+ikey.TrailerLen+96))) / n
		t.Logf("sequential %v: chunks hold %d bytes an entry beyond its own (entryOverhead %d)", sequential, perEntry, entryOverhead)
		if perEntry > entryOverhead*5/4 {
			t.Errorf("sequential %v: chunks hold %d bytes an entry beyond its own, far above the %d that ApproximateSize charges", sequential, perEntry, entryOverhead)
		}
		m.Unref()
		c.Close()
	}
}

// Values too large for a chunk live on the Go heap, where nothing the
// collector sees points at them once the leaves are outside it: the
// memtable keeps them alive itself.
func TestLargeValuesOutliveCollections(t *testing.T) {
	c := NewChunks(0)
	defer c.Close()
	m := NewIn(c)
	defer m.Unref()
	const n, size = 64, arenaChunkSize / 2
	for i := range n {
		m.Add(uint64(i+1), ikey.KindSet, []byte(fmt.Sprintf("big%03d", i)), bytes.Repeat([]byte{byte(i)}, size))
	}
	var garbage [][]byte
	for range 3 {
		runtime.GC()
		for range n {
			garbage = append(garbage, bytes.Repeat([]byte{0xee}, size))
		}
	}
	for i := range n {
		v, found, _ := m.Get([]byte(fmt.Sprintf("big%03d", i)), ikey.MaxSeq)
		if !found || !bytes.Equal(v, bytes.Repeat([]byte{byte(i)}, size)) {
			t.Fatalf("value %d after collections: found %v, %d bytes, first %x", i, found, len(v), v[:min(len(v), 4)])
		}
	}
	runtime.KeepAlive(garbage)
}
