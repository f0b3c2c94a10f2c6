package cache

import (
	"sync"
	"testing"
)

// The blocks a Cache hands out live outside the Go heap where the platform
// allows (anonymous memory maps on Unix). On the Go heap, a cache of 8 MiB
// costs about twice that in resident memory, because the collector lets the
// heap grow to twice what is live before it collects, and every block the
// cache evicts is garbage that brings the next collection nearer. Outside
// it, the cache's bytes are resident once and are reused block by block.
// The price is manual lifetimes: every Value is reference-counted and its
// memory is reused when the last reference is released.

const (
	// classStep is the granularity of the size classes: a buffer of n
	// bytes takes n rounded up to a multiple of it. A data block written
	// with the default 4 KiB block size decodes to a little over 4 KiB,
	// so it takes 4.5 KiB.
	classStep = 512
	// maxManual is the largest buffer taken from the maps; larger ones
	// come from the Go heap.
	maxManual  = 64 << 10
	numClasses = maxManual / classStep
	// chunkSize is the size of each anonymous map that buffers are carved
	// from.
	chunkSize = 1 << 20
)

// poison makes freed buffers hold 0xdd in test binaries, so that a reader
// that keeps a block past its release reads garbage that a test notices
// instead of whatever block reuses the memory.
var poison = testing.Testing()

// allocator carves buffers of size classes out of chunks mapped outside
// the Go heap and keeps freed ones on a list per class for reuse. It never
// returns a chunk to the system until it is closed and every buffer is
// free: a cache under steady use needs the same memory again at once.
type allocator struct {
	mu     sync.Mutex
	free   [numClasses][][]byte // freed buffers by class; index = size/classStep - 1
	rest   []byte               // the uncarved rest of the newest chunk
	chunks [][]byte
	mapped int64
	// limit bounds mapped: past it, buffers come from the Go heap. It
	// covers the cache's capacity, the blocks that iterators hold beyond
	// it, and free buffers of classes that went out of use.
	limit  int64
	live   int // buffers handed out and not freed
	closed bool
}

// alloc returns a buffer of length n and whether it came from the maps
// (then it must be given back with release).
func (a *allocator) alloc(n int) ([]byte, bool) {
	if n <= 0 || n > maxManual {
		return make([]byte, n), false
	}
	class := (n + classStep - 1) / classStep
	size := class * classStep
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return make([]byte, n), false
	}
	if l := a.free[class-1]; len(l) > 0 {
		b := l[len(l)-1]
		a.free[class-1] = l[:len(l)-1]
		a.live++
		return b[:n], true
	}
	if len(a.rest) < size {
		if a.mapped+chunkSize > a.limit {
			return make([]byte, n), false
		}
		m, err := mapAnon(chunkSize)
		if err != nil {
			return make([]byte, n), false
		}
		a.keepRest()
		a.chunks = append(a.chunks, m)
		a.mapped += chunkSize
		a.rest = m
	}
	b := a.rest[:size:size]
	a.rest = a.rest[size:]
	a.live++
	return b[:n], true
}

// keepRest files what is left of the current chunk under the largest class
// it holds, before a new chunk replaces it.
func (a *allocator) keepRest() {
	if c := len(a.rest) / classStep; c > 0 {
		size := c * classStep
		a.free[c-1] = append(a.free[c-1], a.rest[:0:size])
	}
	a.rest = nil
}

// release gives back a buffer that alloc took from the maps.
func (a *allocator) release(b []byte) {
	if poison {
		b = b[:cap(b)]
		for i := range b {
			b[i] = 0xdd
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.releaseLocked(b)
}

func (a *allocator) releaseLocked(b []byte) {
	if a.live <= 0 {
		panic("cache: buffer released twice")
	}
	a.live--
	if a.closed {
		if a.live == 0 {
			a.unmapAll()
		}
		return
	}
	c := cap(b) / classStep
	a.free[c-1] = append(a.free[c-1], b[:0])
}

// close stops handing out mapped buffers and unmaps every chunk once the
// last buffer handed out is released (at once if none is out).
func (a *allocator) close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return
	}
	a.closed = true
	a.free = [numClasses][][]byte{}
	a.rest = nil
	if a.live == 0 {
		a.unmapAll()
	}
}

func (a *allocator) unmapAll() {
	for _, m := range a.chunks {
		unmapAnon(m)
	}
	a.chunks, a.mapped = nil, 0
}
