package cache

import (
	"bytes"
	"fmt"
	"sync"
	"testing"

	"github.com/shale-db/shale/internal/manual"
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

// set caches a copy of s and releases the caller's reference.
func set(c *Cache, file, off uint64, s []byte) {
	v := c.Alloc(len(s))
	copy(v.Bytes(), s)
	c.Set(file, off, v)
	v.Release()
}

// get returns a copy of the cached bytes, or ok false.
func get(c *Cache, file, off uint64) (string, bool) {
	v := c.Get(file, off)
	if v == nil {
		return "", false
	}
	defer v.Release()
	return string(v.Bytes()), true
}

// live returns the buffers handed out and not released.
func live(c *Cache) int {
	_, n := c.alloc.Stats()
	return n
}

func TestGetSet(t *testing.T) {
	c := New(1 << 20)
	if _, ok := get(c, 1, 0); ok {
		t.Fatal("empty cache hit")
	}
	set(c, 1, 0, []byte("a"))
	set(c, 2, 0, []byte("b"))
	set(c, 1, 4096, []byte("c"))
	for _, tc := range []struct {
		file, off uint64
		want      string
	}{{1, 0, "a"}, {2, 0, "b"}, {1, 4096, "c"}} {
		v, ok := get(c, tc.file, tc.off)
		if !ok || v != tc.want {
			t.Fatalf("Get(%d,%d) = %q,%v want %q", tc.file, tc.off, v, ok, tc.want)
		}
	}
	set(c, 1, 0, []byte("replaced"))
	if v, _ := get(c, 1, 0); v != "replaced" {
		t.Fatalf("after replace got %q", v)
	}
	m := c.Metrics()
	if m.Count != 3 || m.Hits != 4 || m.Misses != 1 {
		t.Fatalf("metrics %+v", m)
	}
	// Each value is charged its whole size class.
	if want := int64(3 * (512 + entryOverhead)); m.Size != want {
		t.Fatalf("size %d want %d", m.Size, want)
	}
	if m.Mapped != manual.ChunkSize {
		t.Fatalf("mapped %d, want one chunk", m.Mapped)
	}
	if n := live(c); n != 3 {
		t.Fatalf("%d buffers out, want the 3 cached", n)
	}
}

func TestLRUEviction(t *testing.T) {
	// Each shard holds 1300 bytes: three 300-byte values (512+64 charged)
	// do not fit, two do.
	c := New(1300 * numShards)
	offs := sameShardKeys(c, 3)
	val := bytes.Repeat([]byte("x"), 300)
	set(c, 1, offs[0], val)
	set(c, 1, offs[1], val)
	get(c, 1, offs[0]) // offs[1] is now least recently used
	set(c, 1, offs[2], val)
	if _, ok := get(c, 1, offs[1]); ok {
		t.Fatal("least recently used entry survived")
	}
	for _, off := range []uint64{offs[0], offs[2]} {
		if _, ok := get(c, 1, off); !ok {
			t.Fatalf("offset %d evicted too early", off)
		}
	}
	if m := c.Metrics(); m.Size > m.Capacity {
		t.Fatalf("size %d over capacity %d", m.Size, m.Capacity)
	}
	if n := live(c); n != 2 {
		t.Fatalf("%d buffers out, want the 2 cached: the evicted one was not freed", n)
	}
}

// A Value used through TryRef (a table's index or filter block, reached
// through the table's own pointer rather than Get) is passed over once by
// eviction: the least recently used unmarked block goes instead. Once
// evicted and released by everyone, TryRef fails for good.
func TestTryRefSecondChance(t *testing.T) {
	const per = 8 * (512 + entryOverhead) // eight 300-byte values a shard
	c := New(per * numShards)
	offs := sameShardKeys(c, 10)
	val := bytes.Repeat([]byte("x"), 300)
	meta := c.Alloc(300)
	meta.Aux = "index"
	if !c.Set(1, offs[0], meta) {
		t.Fatal("Set refused a value that fits")
	}
	for _, off := range offs[1:8] {
		set(c, 1, off, val)
	}
	if m := c.Metrics(); m.Count != 8 || m.Meta != 512+entryOverhead {
		t.Fatalf("count %d, meta %d; want 8 and one block's charge", m.Count, m.Meta)
	}
	// meta is the least recently used. Used through TryRef, it survives
	// the next Set; offs[1] goes instead.
	if !meta.TryRef() {
		t.Fatal("TryRef failed on a cached value")
	}
	meta.Release()
	set(c, 1, offs[8], val)
	if _, ok := get(c, 1, offs[0]); !ok {
		t.Fatal("a value used through TryRef was evicted")
	}
	if _, ok := get(c, 1, offs[1]); ok {
		t.Fatal("the least recently used unmarked value stayed")
	}
	// The get marked it again, so it outlives one more pass; unused
	// after that, it ages out as any block.
	for range 2 {
		for _, off := range offs[1:9] {
			set(c, 1, off, val)
		}
	}
	if m := c.Metrics(); m.Meta != 0 {
		t.Fatalf("meta %d after the index block aged out", m.Meta)
	}
	if !meta.TryRef() {
		t.Fatal("TryRef failed while the caller still held a reference")
	}
	meta.Release()
	meta.Release() // the caller's last: freed
	if meta.TryRef() {
		t.Fatal("TryRef succeeded on a freed value")
	}
}

// A Set into a shard whose every block is in use (marked through TryRef)
// keeps the new block when the old ones are data blocks, or the new one is
// an index or filter block: the marks are spent, and the oldest block goes.
// A new data block among index and filter blocks in use goes itself, and
// Set says so. Resident follows a Value in and out of the cache.
func TestSetIntoBusyShard(t *testing.T) {
	const per = 8 * (512 + entryOverhead)
	for _, tc := range []struct {
		name       string
		oldMeta    bool // the blocks already cached are index or filter blocks
		newMeta    bool // so is the new one
		newStays   bool
		oldEvicted int
	}{
		{"data among data", false, false, true, 1},
		{"data among meta", true, false, false, 0},
		{"meta among meta", true, true, true, 1},
		{"meta among data", false, true, true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := New(per * numShards)
			offs := sameShardKeys(c, 9)
			var vals []*Value
			for _, off := range offs[:8] {
				v := c.Alloc(300)
				if tc.oldMeta {
					v.Aux = off
				}
				if !c.Set(1, off, v) || !v.Resident() {
					t.Fatalf("Set of offset %d: not cached", off)
				}
				vals = append(vals, v)
			}
			for _, v := range vals {
				if !v.TryRef() {
					t.Fatal("TryRef failed on a cached value")
				}
				v.Release()
			}
			nv := c.Alloc(300)
			if tc.newMeta {
				nv.Aux = "index"
			}
			if got := c.Set(1, offs[8], nv); got != tc.newStays || nv.Resident() != tc.newStays {
				t.Fatalf("Set of the new block reported %v, resident %v; want %v", got, nv.Resident(), tc.newStays)
			}
			if _, ok := get(c, 1, offs[8]); ok != tc.newStays {
				t.Fatalf("the new block cached: %v, want %v", ok, tc.newStays)
			}
			gone := 0
			for _, v := range vals {
				if !v.Resident() {
					gone++
				}
			}
			if gone != tc.oldEvicted {
				t.Fatalf("%d old blocks evicted, want %d", gone, tc.oldEvicted)
			}
			for _, v := range vals {
				v.Release()
			}
			nv.Release()
		})
	}
	c := New(per * numShards)
	nv := c.Alloc(300)
	big := c.Alloc(2 * per)
	if c.Fits(big) || !c.Fits(nv) {
		t.Fatal("Fits is wrong about a value larger than a shard, or one that fits")
	}
	c.Keep(big)
	if !big.Resident() {
		t.Fatal("a kept value is not resident")
	}
	c.Unkeep(big)
	if big.Resident() {
		t.Fatal("a value no longer kept is resident")
	}
	big.Release()
	nv.Release()
}

// An index block that fills its shard, so that no data block fits beside
// it, stays cached while it is in use; the data blocks that fall in its
// shard are not cached. Unused, it ages out.
func TestLargeIndexBlockStays(t *testing.T) {
	const per = 64 << 10
	c := New(per * numShards)
	offs := sameShardKeys(c, 200)
	meta := c.Alloc(per - 2000) // no data block fits beside it
	meta.Aux = "index"
	if !c.Set(1, offs[0], meta) {
		t.Fatal("Set refused an index block that fits")
	}
	val := bytes.Repeat([]byte("d"), 4000)
	for i, off := range offs[1:] {
		if !meta.Resident() {
			t.Fatalf("insert %d: the index block was evicted while in use", i)
		}
		meta.TryRef() // a Get's use, as sstable's readers make it
		meta.Release()
		set(c, 1, off, val)
	}
	if !meta.Resident() {
		t.Fatal("the index block in use was evicted")
	}
	// Not used any more: the next inserts evict it.
	for _, off := range offs[1:20] {
		set(c, 1, off, val)
	}
	if meta.Resident() {
		t.Fatal("an index block no longer in use stayed")
	}
	meta.Release()
}

// Keep counts what users keep outside the cache without charging it.
func TestKeepCounted(t *testing.T) {
	c := New(1 << 20)
	v := c.Alloc(5000)
	c.Keep(v)
	if m := c.Metrics(); m.Kept != int64(cap(v.Bytes())) || m.Size != 0 {
		t.Fatalf("kept %d, size %d", m.Kept, m.Size)
	}
	c.Unkeep(v)
	if m := c.Metrics(); m.Kept != 0 {
		t.Fatalf("kept %d after Unkeep", m.Kept)
	}
	v.Release()
	var nilCache *Cache
	w := nilCache.Alloc(1)
	nilCache.Keep(w)
	if !w.Resident() {
		t.Fatal("a nil cache's user's kept value is not resident")
	}
	nilCache.Unkeep(w)
	if nilCache.Set(1, 0, nilCache.Alloc(10)) {
		t.Fatal("a nil cache took a value")
	}
}

func TestTooLargeNotCached(t *testing.T) {
	c := New(1000 * numShards)
	v := c.Alloc(2000)
	if c.Set(1, 0, v) {
		t.Fatal("Set reported a value over a shard's capacity cached")
	}
	v.Release()
	if _, ok := get(c, 1, 0); ok {
		t.Fatal("value over a shard's capacity was cached")
	}
	if m := c.Metrics(); m.Size != 0 || m.Count != 0 {
		t.Fatalf("metrics %+v", m)
	}
	if n := live(c); n != 0 {
		t.Fatalf("%d buffers out after the uncached value's release", n)
	}
	z := New(0)
	set(z, 1, 0, []byte("a"))
	if _, ok := get(z, 1, 0); ok {
		t.Fatal("zero-capacity cache kept a value")
	}
}

func TestEvictFile(t *testing.T) {
	c := New(1 << 20)
	for off := uint64(0); off < 100*4096; off += 4096 {
		set(c, 7, off, []byte("seven"))
		set(c, 8, off, []byte("eight"))
	}
	c.EvictFile(7)
	for off := uint64(0); off < 100*4096; off += 4096 {
		if _, ok := get(c, 7, off); ok {
			t.Fatalf("file 7 offset %d survived EvictFile", off)
		}
		if v, ok := get(c, 8, off); !ok || v != "eight" {
			t.Fatalf("file 8 offset %d lost", off)
		}
	}
	if m := c.Metrics(); m.Count != 100 || m.Size != 100*(512+entryOverhead) {
		t.Fatalf("metrics after EvictFile %+v", m)
	}
	if n := live(c); n != 100 {
		t.Fatalf("%d buffers out, want file 8's 100", n)
	}
}

func TestNilCache(t *testing.T) {
	var c *Cache
	v := c.Alloc(3)
	copy(v.Bytes(), "abc")
	c.Set(1, 0, v)
	if string(v.Bytes()) != "abc" {
		t.Fatalf("nil cache's Alloc gave %q", v.Bytes())
	}
	v.Release()
	if c.Get(1, 0) != nil {
		t.Fatal("nil cache hit")
	}
	c.EvictFile(1)
	c.Close()
	if m := c.Metrics(); m != (Metrics{}) {
		t.Fatalf("nil metrics %+v", m)
	}
	var nv *Value
	nv.Release()
}

// A reader's reference keeps a block's bytes intact after the cache evicts
// it; the last Release frees them (test binaries poison freed bytes) and a
// later Alloc of the same class reuses them.
func TestReferenceOutlivesEviction(t *testing.T) {
	c := New(1300 * numShards)
	offs := sameShardKeys(c, 5)
	set(c, 1, offs[0], bytes.Repeat([]byte("a"), 300))
	held := c.Get(1, offs[0])
	// Two blocks fit. The Get marked offs[0], so the first eviction
	// passes over it and it moves to the front; the fourth Set after the
	// Get evicts it.
	for i, b := range []byte("bcde") {
		set(c, 1, offs[i+1], bytes.Repeat([]byte{b}, 300))
	}
	if c.Get(1, offs[0]) != nil {
		t.Fatal("offs[0] still cached")
	}
	if got := held.Bytes(); !bytes.Equal(got, bytes.Repeat([]byte("a"), 300)) {
		t.Fatalf("held block changed after eviction: %.20q", got)
	}
	buf := held.Bytes()
	held.Release()
	if buf[0] != 0xdd || buf[299] != 0xdd {
		t.Fatalf("released block not poisoned: %.20q", buf)
	}
	again := c.Alloc(300)
	if &again.Bytes()[0] != &buf[0] {
		t.Fatal("freed buffer not reused by the next Alloc of its class")
	}
	again.Release()
	if n := live(c); n != 2 {
		t.Fatalf("%d buffers out, want the 2 cached", n)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("a second Release of the last reference did not panic")
		}
	}()
	again.Release()
}

func TestLargeAndOverLimitFromHeap(t *testing.T) {
	c := New(0)
	big := c.Alloc(manual.MaxSize + 1)
	if big.a != nil || len(big.Bytes()) != manual.MaxSize+1 {
		t.Fatalf("a %d-byte buffer came from the maps", manual.MaxSize+1)
	}
	big.Release()
	// A zero-capacity cache may map up to its limit (4 chunks); further
	// buffers come from the Go heap and still work.
	var vs []*Value
	for i := 0; i < 5*manual.ChunkSize/(64<<10); i++ {
		v := c.Alloc(64 << 10)
		v.Bytes()[len(v.Bytes())-1] = byte(i)
		vs = append(vs, v)
	}
	if m := c.Metrics(); m.Mapped != c.alloc.Limit {
		t.Fatalf("mapped %d, want the limit %d", m.Mapped, c.alloc.Limit)
	}
	if vs[len(vs)-1].a != nil {
		t.Fatal("allocation past the limit came from the maps")
	}
	for i, v := range vs {
		if v.Bytes()[len(v.Bytes())-1] != byte(i) {
			t.Fatalf("buffer %d overwritten", i)
		}
		v.Release()
	}
}

// Close frees the cache's blocks but unmaps only once the blocks readers
// hold are released.
func TestCloseWaitsForReaders(t *testing.T) {
	c := New(1 << 20)
	set(c, 1, 0, []byte("kept"))
	held := c.Get(1, 0)
	c.Close()
	if c.Get(1, 0) != nil {
		t.Fatal("hit after Close")
	}
	if m := c.Metrics(); m.Mapped != manual.ChunkSize || string(held.Bytes()) != "kept" {
		t.Fatalf("after Close with a block held: mapped %d, block %q", m.Mapped, held.Bytes())
	}
	held.Release()
	if m := c.Metrics(); m.Mapped != 0 {
		t.Fatalf("mapped %d after the last release", m.Mapped)
	}
	after := c.Alloc(10)
	if after.a != nil {
		t.Fatal("Alloc after Close came from the maps")
	}
	after.Release()
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
				if v := c.Get(file, off); v != nil {
					got := string(v.Bytes())
					v.Release()
					if got != want {
						t.Errorf("Get(%d,%d) = %q", file, off, got)
						return
					}
				}
				set(c, file, off, []byte(want))
				if i%500 == g {
					c.EvictFile(file)
				}
			}
		}(g)
	}
	wg.Wait()
	m := c.Metrics()
	if m.Size > m.Capacity {
		t.Fatalf("size %d over capacity %d", m.Size, m.Capacity)
	}
	if n := live(c); n != m.Count {
		t.Fatalf("%d buffers out, %d cached: references leaked", n, m.Count)
	}
	c.Close()
	if m := c.Metrics(); m.Mapped != 0 {
		t.Fatalf("mapped %d after Close", m.Mapped)
	}
}

// TestSetOneKeyAtATime checks that a Value, which is its own entry, is
// cached under one block's name at a time: set again under its own name
// it stays cached once; under another name while cached it is refused,
// and the block cached under that name, if any, stays; and once evicted
// it may be cached anew.
func TestSetOneKeyAtATime(t *testing.T) {
	c := New(1 << 20)
	v := c.Alloc(100)
	copy(v.Bytes(), "v")
	if !c.Set(1, 0, v) || !c.Set(1, 0, v) {
		t.Fatal("Set of a new value, or again under its own name, refused")
	}
	if c.Set(2, 4096, v) {
		t.Fatal("a cached value was cached under a second name")
	}
	if _, ok := get(c, 2, 4096); ok {
		t.Fatal("the refused name hits")
	}
	if m := c.Metrics(); m.Count != 1 || m.Size != int64(cap(v.Bytes()))+entryOverhead {
		t.Fatalf("metrics %+v, want one entry", m)
	}
	// Refused under a name another block holds, it leaves that block be.
	set(c, 3, 0, []byte("w"))
	if c.Set(3, 0, v) {
		t.Fatal("a cached value was cached under an occupied second name")
	}
	if got, ok := get(c, 3, 0); !ok || got != "w" {
		t.Fatalf("the occupant of the refused name: %q, %v", got, ok)
	}
	c.EvictFile(3)
	c.EvictFile(1)
	if !c.Set(2, 4096, v) {
		t.Fatal("an evicted value could not be cached again")
	}
	if got, ok := get(c, 2, 4096); !ok || got[:1] != "v" {
		t.Fatalf("get after re-caching: %q, %v", got, ok)
	}
	v.Release()
	c.EvictFile(2)
	if n := live(c); n != 0 {
		t.Fatalf("%d buffers out after every reference went", n)
	}
}
