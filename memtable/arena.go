package memtable

import (
	"unsafe"

	"github.com/shale-db/shale/internal/manual"
)

// arenaChunkSize is the size of the chunks the arena carves entries from.
// 64 KiB keeps the waste at the end of a chunk small against the default
// write buffer (8 MiB) while cutting allocations for 100-byte values about
// 500-fold.
const arenaChunkSize = 64 << 10

// arena hands out byte slices carved from large chunks, so that adding an
// entry usually allocates nothing. Slices are never reused or modified once
// handed out while the arena lives. Chunks come from the Go heap, where the
// garbage collector frees a chunk when no entry (nor any slice a reader
// kept) refers to it, or from a Chunks pool outside it, to which release
// gives them all back at once. An arena is used by the one writer only.
type arena struct {
	free      []byte // the unused tail of the current chunk
	chunkSize int    // 0 disables chunking (each slice is its own allocation)
	pool      *Chunks
	taken     []*manual.Buf // the chunks taken from pool

	// efree is the unused tail of the chunk that entry arrays (the
	// index's leaves) are carved from, when the arena is outside the
	// heap (see entries).
	efree []byte
	// big holds the values too large for a chunk, on the Go heap, when
	// the index's leaves are outside it: the collector does not see the
	// entries there that point at these values, so the arena keeps them
	// alive for as long as it lives.
	big [][]byte
}

// alloc returns a slice of length and capacity n with arbitrary contents.
// Requests above a quarter of a chunk get their own allocation on the Go
// heap, so that a large value neither wastes the rest of a chunk nor pins
// a chunk's neighbours.
func (a *arena) alloc(n int) []byte {
	if n > a.chunkSize/4 {
		b := make([]byte, n)
		if a.offHeap() {
			a.big = append(a.big, b)
		}
		return b
	}
	if n > len(a.free) {
		a.free = a.newChunk()
	}
	b := a.free[:n:n]
	a.free = a.free[n:]
	return b
}

// offHeap reports whether the arena's chunks come from a pool outside the
// Go heap.
func (a *arena) offHeap() bool { return a.pool != nil && a.chunkSize == arenaChunkSize }

func (a *arena) newChunk() []byte {
	if !a.offHeap() {
		return make([]byte, a.chunkSize)
	}
	c := a.pool.p.Get()
	a.taken = append(a.taken, c)
	return c.B
}

// release gives the chunks taken from the pool back to it. Nothing may
// read what the arena handed out after it.
func (a *arena) release() {
	for _, c := range a.taken {
		c.Put()
	}
	a.taken, a.free, a.efree, a.big = nil, nil, nil, nil
}

// entryBytes is the size of an entry; arrays of entries carved from a
// chunk start at multiples of it, which keeps them 8-byte aligned.
const entryBytes = int(unsafe.Sizeof(entry{}))

// entries returns an empty array of entries of capacity c: carved from
// the arena's chunks if they are outside the Go heap, where the index's
// leaves then live too (about a third of a memtable's memory, which on the
// heap the collector let grow to twice its size before collecting), and
// from the Go heap otherwise. Arrays the index gives up stay in their
// chunk until the arena is released; the index keeps them for reuse
// (index.spares).
func (a *arena) entries(c int) []entry {
	size := c * entryBytes
	if !a.offHeap() || size > arenaChunkSize {
		return make([]entry, 0, c)
	}
	if size > len(a.efree) {
		a.efree = a.newChunk()
	}
	b := a.efree[:size:size]
	a.efree = a.efree[size:]
	return unsafe.Slice((*entry)(unsafe.Pointer(unsafe.SliceData(b))), c)[:0]
}

// Chunks is a pool of arena chunks outside the Go heap, shared by the
// memtables of one database (NewIn). Outside the heap, a memtable's bytes
// are resident once: on it, the collector let the heap grow to twice what
// the memtables held before collecting, and a flushed memtable was garbage
// that the runtime kept resident for a while after collecting it (see
// internal/manual). A Chunks keeps one memtable's worth of free chunks
// mapped for the next memtable and unmaps the rest. It is safe for
// concurrent use.
type Chunks struct{ p manual.Pool }

// NewChunks returns a pool that keeps up to keepBytes of free chunks.
func NewChunks(keepBytes int64) *Chunks {
	return &Chunks{p: manual.Pool{Size: arenaChunkSize, Keep: int(keepBytes / arenaChunkSize)}}
}

// ChunkSize is the size of the chunks a Chunks hands out.
const ChunkSize = arenaChunkSize

// Get takes a chunk from the pool for other use than a memtable's (Open
// keeps the records it carries forward in chunks); Put gives it back.
func (c *Chunks) Get() *manual.Buf { return c.p.Get() }

// Trim unmaps the free chunks kept so far, such as those of the memtables
// that Open's replay wrote to tables: the next memtable may never come.
func (c *Chunks) Trim() { c.p.Trim() }

// Close unmaps the free chunks; chunks that memtables still hold are
// unmapped when their last reference goes.
func (c *Chunks) Close() { c.p.Close() }

// Stats returns the chunks memtables hold and the free ones kept mapped.
func (c *Chunks) Stats() (held, free int) { return c.p.Stats() }
