package cache

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
)

// sameShardKeys returns n offsets of file 1 that all land in one shard, so
// that a test can reason about a single LRU list.
func sameShardKeys(c *Cache, n int) []uint64 {
	want := c.shard(1, 0)
	var offs []uint64
	for off := uint64(0); len(offs) < n; off += 4096 {
		if c.shard(1, off) == want {
			offs = append(offs, off)
		}
	}
	return offs
}

func TestGetSet(t *testing.T) {
	c := New(1 << 20)
	if _, ok := c.Get(1, 0); ok {
		t.Fatal("empty cache hit")
	}
	c.Set(1, 0, []byte("a"))
	c.Set(2, 0, []byte("b"))
	c.Set(1, 4096, []byte("c"))
	for _, tc := range []struct {
		file, off uint64
		want      string
	}{{1, 0, "a"}, {2, 0, "b"}, {1, 4096, "c"}} {
		v, ok := c.Get(tc.file, tc.off)
		if !ok || string(v) != tc.want {
			t.Fatalf("Get(%d,%d) = %q,%v want %q", tc.file, tc.off, v, ok, tc.want)
		}
	}
	c.Set(1, 0, []byte("replaced"))
	if v, _ := c.Get(1, 0); string(v) != "replaced" {
		t.Fatalf("after replace got %q", v)
	}
	m := c.Metrics()
	if m.Count != 3 || m.Hits != 4 || m.Misses != 1 {
		t.Fatalf("metrics %+v", m)
	}
	if want := int64(len("replaced")+len("b")+len("c")) + 3*entryOverhead; m.Size != want {
		t.Fatalf("size %d want %d", m.Size, want)
	}
}

func TestLRUEviction(t *testing.T) {
	// Each shard holds 1000 bytes: three 300-byte values (364 charged) do
	// not fit, two do.
	c := New(1000 * numShards)
	offs := sameShardKeys(c, 3)
	val := bytes.Repeat([]byte("x"), 300)
	c.Set(1, offs[0], val)
	c.Set(1, offs[1], val)
	c.Get(1, offs[0]) // offs[1] is now least recently used
	c.Set(1, offs[2], val)
	if _, ok := c.Get(1, offs[1]); ok {
		t.Fatal("least recently used entry survived")
	}
	for _, off := range []uint64{offs[0], offs[2]} {
		if _, ok := c.Get(1, off); !ok {
			t.Fatalf("offset %d evicted too early", off)
		}
	}
	if m := c.Metrics(); m.Size > m.Capacity {
		t.Fatalf("size %d over capacity %d", m.Size, m.Capacity)
	}
}

func TestTooLargeNotCached(t *testing.T) {
	c := New(1000 * numShards)
	c.Set(1, 0, make([]byte, 2000))
	if _, ok := c.Get(1, 0); ok {
		t.Fatal("value over a shard's capacity was cached")
	}
	if m := c.Metrics(); m.Size != 0 || m.Count != 0 {
		t.Fatalf("metrics %+v", m)
	}
	z := New(0)
	z.Set(1, 0, []byte("a"))
	if _, ok := z.Get(1, 0); ok {
		t.Fatal("zero-capacity cache kept a value")
	}
}

func TestEvictFile(t *testing.T) {
	c := New(1 << 20)
	for off := uint64(0); off < 100*4096; off += 4096 {
		c.Set(7, off, []byte("seven"))
		c.Set(8, off, []byte("eight"))
	}
	c.EvictFile(7)
	for off := uint64(0); off < 100*4096; off += 4096 {
		if _, ok := c.Get(7, off); ok {
			t.Fatalf("file 7 offset %d survived EvictFile", off)
		}
		if v, ok := c.Get(8, off); !ok || string(v) != "eight" {
			t.Fatalf("file 8 offset %d lost", off)
		}
	}
	if m := c.Metrics(); m.Count != 100 || m.Size != 100*(5+entryOverhead) {
		t.Fatalf("metrics after EvictFile %+v", m)
	}
}

func TestNilCache(t *testing.T) {
	var c *Cache
	c.Set(1, 0, []byte("a"))
	if _, ok := c.Get(1, 0); ok {
		t.Fatal("nil cache hit")
	}
	c.EvictFile(1)
	if m := c.Metrics(); m != (Metrics{}) {
		t.Fatalf("nil metrics %+v", m)
	}
}

func TestConcurrent(t *testing.T) {
	c := New(64 << 10)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				file, off := uint64(i%5), uint64(i%97)*4096
				want := fmt.Sprintf("%d/%d", file, off)
				if v, ok := c.Get(file, off); ok && string(v) != want {
					t.Errorf("Get(%d,%d) = %q", file, off, v)
					return
				}
				c.Set(file, off, []byte(want))
				if i%500 == g {
					c.EvictFile(file)
				}
			}
		}(g)
	}
	wg.Wait()
	if m := c.Metrics(); m.Size > m.Capacity {
		t.Fatalf("size %d over capacity %d", m.Size, m.Capacity)
	}
}
