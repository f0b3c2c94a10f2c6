// Package cache is the block cache: an LRU cache of decoded table blocks,
// bounded by bytes and keyed by (file number, block offset).
//
// Use one Cache for the whole database. sstable.Reader looks a block up with
// Get before reading it from its file, decodes what it read into a buffer
// from Alloc and stores it with Set; the engine calls EvictFile when it
// deletes a table so that its blocks stop taking room, and Close when the
// database closes.
//
// A Cache is safe for concurrent use. It is split into shards (each an LRU
// list behind its own mutex) so that readers of different blocks rarely
// contend. A cached block is a *Value, reference-counted: Get and Alloc
// return one holding a reference, which the caller gives back with Release
// once it no longer reads the bytes; the cache holds its own while the
// block is cached. The bytes live outside the Go heap (package manual) and
// are reused after the last Release, so reading them after it is a bug.
//
// The tables' index and filter blocks are cached here too, beside the data
// blocks and under the same capacity: a Value with Aux set is one, and
// Metrics counts them apart. A table keeps a pointer to its cached index
// and filter and takes a reference with TryRef, without the shard's lock.
//
// Eviction is a second-chance variant of LRU (CLOCK): a hit, through Get or
// TryRef, marks the Value used and does not move it; eviction passes over a
// marked Value once (clearing the mark and moving it to the front) instead
// of dropping it. So blocks in constant use through a table's pointer stay
// cached, and a hit writes to nothing but its own Value. The price is paid
// by the first eviction after every block of a shard was hit: it passes
// over them all, once (0.2 ms for a 16 MiB shard of 4 KiB blocks, a 256
// MiB cache; a few microseconds at the default size).
package cache

import (
	"sync"
	"sync/atomic"

	"github.com/shale-db/shale/internal/manual"
)

// numShards is the number of independent LRU lists. A power of two.
const numShards = 16

// entryOverhead approximates the bytes an entry costs beyond its buffer
// (the Value and its map slot), so that a cache of tiny values stays
// bounded too.
const entryOverhead = 64

// Cache is a sharded LRU cache of immutable byte slices by total size.
// The zero value is not usable; call New. A nil *Cache is valid and caches
// nothing: Get always misses and Set does nothing.
type Cache struct {
	shards [numShards]shard
	alloc  manual.Allocator
	// kept is what Keep counted and Unkeep did not give back.
	kept atomic.Int64
}

// Value is a block's bytes with a reference count. The zero value is not
// usable; a nil *Value is, and Release on it does nothing.
type Value struct {
	buf  []byte
	refs atomic.Int32
	a    *manual.Allocator // nil: buf is on the Go heap
	// used marks a Value referenced (Get or TryRef) since eviction last
	// looked at it.
	used atomic.Bool
	// resident is set while the Value is cached or its user keeps it
	// (Cache.Keep): TryRef's callers let go of a Value that is neither,
	// which only readers still hold, rather than use it uncounted.
	resident atomic.Bool
	// Aux is what the block's reader made of the bytes (a parsed index
	// or filter), set before the Value is cached and not changed after.
	// A Value with Aux is counted as an index or filter block.
	Aux any

	// A cached Value is its own entry in its shard: linked is set while it
	// is, and key, prev and next, guarded by the shard's lock, place it in
	// the shard's map and LRU list. So a block is cached with no
	// allocation but its Value's.
	linked     atomic.Bool
	key        blockKey
	prev, next *Value
}

// Bytes returns the value's bytes, valid until the caller's Release.
func (v *Value) Bytes() []byte { return v.buf }

// TryRef takes a reference to v if it still holds one (it is cached, or
// someone uses it), and reports whether it did. It is how a holder of a
// pointer to a cached Value that the cache may have evicted (and freed)
// since takes it back without the cache's lock: a freed Value's count is
// zero for good, as Values are never reused. It marks v as used, for
// eviction.
func (v *Value) TryRef() bool {
	if !TryIncrement(&v.refs) {
		return false
	}
	v.markUsed()
	return true
}

// TryIncrement adds one to the reference count refs unless it is zero or
// less, and reports whether it did: for counts that, once at zero, stay
// there (the object is freed or closed), so that a reference can be taken
// without the lock that frees it.
func TryIncrement(refs *atomic.Int32) bool {
	for {
		n := refs.Load()
		if n <= 0 {
			return false
		}
		if refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// markUsed marks v as used since eviction last looked at it, storing only
// when the mark is not already there (a hit on a marked block writes
// nothing).
func (v *Value) markUsed() {
	if !v.used.Load() {
		v.used.Store(true)
	}
}

// Trim shortens v's bytes to their first n, before v is shared (cached).
// The buffer keeps its size, and v is charged for it.
func (v *Value) Trim(n int) { v.buf = v.buf[:n] }

// Resident reports whether v is cached or kept by its user (Cache.Keep).
func (v *Value) Resident() bool { return v.resident.Load() }

// Ref takes another reference to v, which the caller holds one of.
func (v *Value) Ref() { v.refs.Add(1) }

// Release gives back one reference. The last one frees the bytes.
func (v *Value) Release() {
	if v == nil {
		return
	}
	switch n := v.refs.Add(-1); {
	case n < 0:
		panic("cache: Value released more often than acquired")
	case n == 0 && v.a != nil:
		v.a.Free(v.buf)
		v.buf, v.Aux = nil, nil
	}
}

// Metrics is a snapshot of a cache's counters.
type Metrics struct {
	// Capacity is the configured limit in bytes.
	Capacity int64
	// Size is the bytes currently charged (values plus per-entry overhead).
	Size int64
	// Count is the number of cached blocks.
	Count int
	// Meta is the part of Size charged for index and filter blocks
	// (Values with Aux).
	Meta int64
	// Hits and Misses count Get calls since New.
	Hits, Misses int64
	// Kept is the bytes of blocks kept outside the cache (see Keep).
	Kept int64
	// Mapped is the memory mapped for blocks outside the Go heap, which
	// Size's blocks occupy along with blocks readers still hold and
	// free buffers awaiting reuse.
	Mapped int64
	// Buffers counts the blocks in Mapped's memory not yet released by
	// everyone: the cached ones and those readers hold. Once every reader
	// is done, it equals Count (less blocks too large for the maps).
	Buffers int
}

// New returns a cache that holds at most capacity bytes of values (plus a
// small per-entry overhead). A capacity <= 0 gives a cache that keeps
// nothing. A value larger than what a shard may hold (its share of the
// capacity, capacity/16) is not cached.
func New(capacity int64) *Cache {
	c := &Cache{}
	per := capacity / numShards
	if per < 0 {
		per = 0
	}
	c.alloc.Limit = 2*max(capacity, 0) + 4*manual.ChunkSize
	for i := range c.shards {
		s := &c.shards[i]
		s.capacity = per
		s.entries = make(map[blockKey]*Value)
		s.lru.prev, s.lru.next = &s.lru, &s.lru
	}
	return c
}

// Get returns the value cached for block offset of file fileNum, holding
// a reference the caller must Release, or nil.
func (c *Cache) Get(fileNum, offset uint64) *Value {
	if c == nil {
		return nil
	}
	return c.shard(fileNum, offset).get(fileNum, offset)
}

// Alloc returns a new Value of n bytes holding one reference, for a block
// to be decoded into and then, perhaps, cached with Set. A nil Cache
// allocates on the Go heap.
func (c *Cache) Alloc(n int) *Value {
	v := &Value{}
	v.refs.Store(1)
	if c == nil {
		v.buf = make([]byte, n)
		return v
	}
	var manual bool
	if v.buf, manual = c.alloc.Alloc(n); manual {
		v.a = &c.alloc
	}
	return v
}

// Set caches v for block offset of file fileNum, replacing any value
// already there, and evicts least recently used blocks to stay within the
// capacity. The cache takes a reference of its own; the caller keeps its
// own and must not modify v's bytes or Aux afterwards. It reports whether
// v stayed cached: false if it is larger than a shard may hold (see Fits),
// if c is nil, if making room evicted v itself, or if v is cached already
// under another block's name (a Value is cached under one at a time).
func (c *Cache) Set(fileNum, offset uint64, v *Value) bool {
	if c == nil {
		return false
	}
	return c.shard(fileNum, offset).set(fileNum, offset, v)
}

// Fits reports whether c would cache v: whether it is no larger than a
// shard may hold. A Set of a Value that fits can still drop it at once
// (every other block in its shard in use), which is not a reason to keep
// it elsewhere.
func (c *Cache) Fits(v *Value) bool {
	return c != nil && int64(cap(v.buf))+entryOverhead <= c.shards[0].capacity
}

// Keep records that v's user keeps it outside the cache: an index or
// filter block too large for it (see Fits), which a table then keeps while
// it is open, or any such block of a nil Cache's user. v is Resident from
// then on, and its bytes count in Metrics.Kept, not charged to the
// capacity. Unkeep undoes it.
func (c *Cache) Keep(v *Value) {
	v.resident.Store(true)
	if c != nil {
		c.kept.Add(int64(cap(v.buf)))
	}
}

// Unkeep undoes Keep: v's user no longer keeps it.
func (c *Cache) Unkeep(v *Value) {
	v.resident.Store(false)
	if c != nil {
		c.kept.Add(-int64(cap(v.buf)))
	}
}

// EvictFile drops every block of file fileNum. Call it when the file is
// deleted (its number is never reused while the database is open, but its
// blocks would otherwise take room until they aged out).
func (c *Cache) EvictFile(fileNum uint64) {
	if c == nil {
		return
	}
	for i := range c.shards {
		c.shards[i].evictFile(fileNum)
	}
}

// Metrics returns the cache's current size and counters.
func (c *Cache) Metrics() Metrics {
	if c == nil {
		return Metrics{}
	}
	m := Metrics{Kept: c.kept.Load()}
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		m.Capacity += s.capacity
		m.Size += s.size
		m.Meta += s.meta
		m.Count += s.count
		m.Hits += s.hits
		m.Misses += s.misses
		s.mu.Unlock()
	}
	m.Mapped, m.Buffers = c.alloc.Stats()
	return m
}

// Close drops every cached block. The memory outside the Go heap is
// returned to the system once the blocks that readers still hold are
// released; Values allocated after Close come from the Go heap.
func (c *Cache) Close() {
	if c == nil {
		return
	}
	for i := range c.shards {
		s := &c.shards[i]
		var dropped []*Value
		s.mu.Lock()
		for _, e := range s.entries {
			dropped = append(dropped, s.removeLocked(e))
		}
		s.mu.Unlock()
		releaseAll(dropped)
	}
	c.alloc.Close()
}

// shard picks the shard of a key by mixing both numbers (a block offset
// alone is a poor hash: most are multiples of ~4 KiB).
func (c *Cache) shard(fileNum, offset uint64) *shard {
	h := fileNum*0x9e3779b97f4a7c15 ^ offset*0xff51afd7ed558ccd
	h ^= h >> 29
	return &c.shards[h%numShards]
}

// blockKey names a block: its table's file number and its offset there.
type blockKey struct{ fileNum, offset uint64 }

// charge is what a cached v costs its shard: its buffer's whole size
// class, and the overhead.
func (v *Value) charge() int64 { return int64(cap(v.buf)) + entryOverhead }

// shard is one LRU list of the Values it caches. lru is a sentinel:
// lru.next is the most recently used Value, lru.prev the least.
type shard struct {
	mu       sync.Mutex
	capacity int64
	size     int64
	meta     int64 // the part of size charged for Values with Aux
	count    int
	hits     int64
	misses   int64
	entries  map[blockKey]*Value
	lru      Value
	// The shards sit side by side: padding keeps one's lock and list off
	// the cache lines of the next.
	_ [64]byte
}

// get returns a reference to the block, or nil. A hit marks the block used
// rather than moving it to the front of the list: eviction passes over it
// once (see set). Moving it would write to its two neighbours, which a
// Get otherwise never touches: two more waits for memory on every hit of
// a cache larger than the processor's.
func (s *shard) get(fileNum, offset uint64) *Value {
	s.mu.Lock()
	v := s.entries[blockKey{fileNum, offset}]
	if v == nil {
		s.misses++
		s.mu.Unlock()
		return nil
	}
	s.hits++
	v.refs.Add(1)
	v.markUsed()
	s.mu.Unlock()
	return v
}

// set caches v, then evicts the least recently used blocks until the shard
// holds no more than its capacity. A block marked used (a hit) since it
// was last looked at is passed over once: its mark is cleared and it moves
// to the front; so is v itself, the newest. Past twice the shard's count
// of such passes (readers marking blocks as fast as they are passed over)
// the least recently used goes whatever its mark. Once every block has
// had its pass, a data block v goes before an index or filter block. It
// reports whether v stayed.
func (s *shard) set(fileNum, offset uint64, v *Value) bool {
	var buf [4]*Value
	s.mu.Lock()
	kept, dropped := s.setLocked(blockKey{fileNum, offset}, v, buf[:0])
	s.mu.Unlock()
	releaseAll(dropped)
	return kept
}

// setLocked is set's work under the shard's lock; it returns dropped with
// the Values it evicted added, for set to release once it has let the
// lock go.
func (s *shard) setLocked(k blockKey, v *Value, dropped []*Value) (bool, []*Value) {
	old := s.entries[k]
	if old != v && v.linked.Load() {
		return false, dropped // cached under another name: k's block stays
	}
	if old != nil {
		dropped = append(dropped, s.removeLocked(old))
	}
	if v.charge() > s.capacity || !v.linked.CompareAndSwap(false, true) {
		return false, dropped
	}
	v.key = k
	v.refs.Add(1)
	v.resident.Store(true)
	s.entries[k] = v
	s.pushFront(v)
	s.size += v.charge()
	if v.Aux != nil {
		s.meta += v.charge()
	}
	s.count++
	kept := true
	for passes := 0; s.size > s.capacity; {
		last := s.lru.prev
		if passes < 2*s.count && (last == v || last.used.Load()) {
			last.used.Store(false)
			s.unlink(last)
			s.pushFront(last)
			passes++
			continue
		}
		if kept && last != v && passes >= s.count && last.Aux != nil && v.Aux == nil {
			// Every block has had its pass, and the oldest is an index
			// or filter block: the new data block goes instead. Blocks
			// of a large table's index or filter can fill most of a
			// shard; given no more than a data block's due, they were
			// evicted and read again at every few inserts there.
			last = v
		}
		if last == v {
			kept = false
		}
		dropped = append(dropped, s.removeLocked(last))
	}
	return kept, dropped
}

func (s *shard) evictFile(fileNum uint64) {
	var dropped []*Value
	s.mu.Lock()
	for k, v := range s.entries {
		if k.fileNum == fileNum {
			dropped = append(dropped, s.removeLocked(v))
		}
	}
	s.mu.Unlock()
	releaseAll(dropped)
}

// removeLocked drops v from the list and the index, and returns it: the
// cache held a reference, which the caller releases once it has let the
// shard's lock go. The last reference frees the block's
// memory under the allocator's lock, which every miss takes too: a shard
// that waited for it while locked held up every reader of its blocks
// (eight goroutines' random Gets spent most of their blocked time there).
func (s *shard) removeLocked(v *Value) *Value {
	v.resident.Store(false)
	s.unlink(v)
	s.size -= v.charge()
	if v.Aux != nil {
		s.meta -= v.charge()
	}
	s.count--
	delete(s.entries, v.key)
	v.linked.Store(false)
	return v
}

// releaseAll gives back the cache's references to evicted Values.
func releaseAll(vs []*Value) {
	for _, v := range vs {
		v.Release()
	}
}

func (s *shard) unlink(v *Value) {
	v.prev.next = v.next
	v.next.prev = v.prev
	v.prev, v.next = nil, nil
}

func (s *shard) pushFront(v *Value) {
	v.prev = &s.lru
	v.next = s.lru.next
	s.lru.next.prev = v
	s.lru.next = v
}
