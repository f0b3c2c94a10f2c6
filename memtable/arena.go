package memtable

// arenaChunkSize is the size of the chunks the arena carves entries from.
// 64 KiB keeps the waste at the end of a chunk small against the default
// write buffer (4 MiB) while cutting allocations for 100-byte values about
// 500-fold.
const arenaChunkSize = 64 << 10

// arena hands out byte slices carved from large chunks, so that adding an
// entry usually allocates nothing. Slices are never reused or modified once
// handed out: the garbage collector frees a chunk when no entry (nor any
// slice a reader kept) refers to it. An arena is used by the one writer
// only.
type arena struct {
	free      []byte // the unused tail of the current chunk
	chunkSize int    // 0 disables chunking (each slice is its own allocation)
}

// alloc returns a zeroed slice of length and capacity n. Requests above a
// quarter of a chunk get their own allocation, so that a large value
// neither wastes the rest of a chunk nor pins a chunk's neighbours.
func (a *arena) alloc(n int) []byte {
	if n > a.chunkSize/4 {
		return make([]byte, n)
	}
	if n > len(a.free) {
		a.free = make([]byte, a.chunkSize)
	}
	b := a.free[:n:n]
	a.free = a.free[n:]
	return b
}
