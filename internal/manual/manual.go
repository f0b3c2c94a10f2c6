// Package manual hands out memory outside the Go heap (anonymous maps on
// Unix): Allocator for the block cache's blocks, Pool for table iterators'
// readahead buffers and the memtables' arena chunks.
//
// On the Go heap, 8 MiB of cached blocks cost about twice that in resident
// memory: the collector lets the heap grow to twice what is live before it
// collects, and every evicted block is garbage that brings the next
// collection nearer. Outside it, the bytes are resident once and reused.
// The price is manual lifetimes: whoever hands out such memory counts
// references to it and frees it after the last one, and a read after that
// is a bug (test binaries poison freed memory so that tests see it).
//
// The memtables' arena chunks come from a Pool too, one per database,
// given back when a memtable's last reference goes: a flushed memtable on
// the Go heap was garbage the runtime kept resident long after collecting
// it (heap free spans it had not yet returned to the system), and the live
// memtables counted twice toward the heap's growth. Peak anonymous memory
// of db_bench's fills at n = 1,000,000 went from 23, 34, 32 and 31 MB to
// 18, 24, 25 and 23 MB (fillseq, fillrandom, overwrite, fillbatch; two
// passes each, alternating). The Pool keeps one write buffer's worth of
// free chunks, which the next memtable takes at once.
package manual

import (
	"runtime/debug"
	"sync"
	"testing"
)

const (
	// classStep is the granularity of the size classes: a buffer of n
	// bytes takes n rounded up to a multiple of it. A data block written
	// with the default 4 KiB block size decodes to a little over 4 KiB,
	// so it takes 4.5 KiB.
	classStep = 512
	// MaxSize is the largest buffer taken from the maps; larger ones
	// come from the Go heap. A 2 MiB table's index block with its entry
	// table (sstable's) takes about 70 KB.
	MaxSize    = 128 << 10
	numClasses = MaxSize / classStep
	// ChunkSize is the size of each anonymous map that buffers are carved
	// from.
	ChunkSize = 1 << 20
)

// poison makes freed buffers hold 0xdd in shale's own test binaries, so
// that a reader that keeps a block past its release reads garbage that a
// test notices instead of whatever block reuses the memory.
//
// Only shale's: every module that imports shale has test binaries too,
// and their benchmarks measure shale. Poisoning there had go-ethereum's
// benchmark suite over the geth adapter spend 16% of its random Gets
// filling evicted blocks, and a Close of a small database half a
// millisecond filling its memtable's chunks.
var poison = testing.Testing() && mainModule() == "github.com/shale-db/shale"

// mainModule returns the path of the main module the binary was built
// from: for a test binary, the module of the package under test.
func mainModule() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	return bi.Main.Path
}

// fill sets every byte of b to c, a copy at a time.
func fill(b []byte, c byte) {
	if len(b) == 0 {
		return
	}
	b[0] = c
	for n := 1; n < len(b); n *= 2 {
		copy(b[n:], b[:n])
	}
}

// Allocator carves buffers of size classes out of chunks mapped outside
// the Go heap and keeps freed ones on a list per class for reuse. It never
// returns a chunk to the system until it is closed and every buffer is
// free: a cache or memtable under steady use needs the same memory again
// at once. Set Limit before first use; an Allocator is safe for concurrent
// use.
type Allocator struct {
	mu     sync.Mutex
	free   [numClasses][][]byte // freed buffers by class; index = size/classStep - 1
	rest   []byte               // the uncarved rest of the newest chunk
	chunks [][]byte
	mapped int64
	// Limit bounds the memory mapped: past it, buffers come from the Go
	// heap. It should cover what the user keeps (a cache's capacity), what
	// readers hold beyond it, and free buffers of classes out of use.
	Limit  int64
	live   int // buffers handed out and not freed
	closed bool
}

// Alloc returns a buffer of length n and whether it came from the maps
// (then it must be given back with Free, once).
func (a *Allocator) Alloc(n int) ([]byte, bool) {
	if n <= 0 || n > MaxSize {
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
		if a.mapped+ChunkSize > a.Limit {
			return make([]byte, n), false
		}
		m, err := mapAnon(ChunkSize)
		if err != nil {
			return make([]byte, n), false
		}
		a.keepRest()
		a.chunks = append(a.chunks, m)
		a.mapped += ChunkSize
		a.rest = m
	}
	b := a.rest[:size:size]
	a.rest = a.rest[size:]
	a.live++
	return b[:n], true
}

// keepRest files what is left of the current chunk under the largest class
// it holds, before a new chunk replaces it.
func (a *Allocator) keepRest() {
	if c := len(a.rest) / classStep; c > 0 {
		size := c * classStep
		a.free[c-1] = append(a.free[c-1], a.rest[:0:size])
	}
	a.rest = nil
}

// Free gives back a buffer that Alloc took from the maps. Its bytes may be
// handed out again at once.
func (a *Allocator) Free(b []byte) {
	if poison {
		fill(b[:cap(b)], 0xdd)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.releaseLocked(b)
}

func (a *Allocator) releaseLocked(b []byte) {
	if a.live <= 0 {
		panic("manual: more buffers freed than allocated")
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

// Close stops handing out mapped buffers and unmaps every chunk once the
// last buffer handed out is freed (at once if none is out).
func (a *Allocator) Close() {
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

func (a *Allocator) unmapAll() {
	for _, m := range a.chunks {
		unmapAnon(m)
	}
	a.chunks, a.mapped = nil, 0
}

// Stats returns the bytes mapped and the buffers handed out and not freed.
func (a *Allocator) Stats() (mapped int64, live int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.mapped, a.live
}

// Pool is a free list of buffers of Size bytes outside the Go heap, for
// buffers taken and given back often, such as a table iterator's readahead.
// It keeps up to Keep free buffers mapped and unmaps the rest. The zero
// value with Size set is ready; a Pool is safe for concurrent use.
type Pool struct {
	Size, Keep int
	mu         sync.Mutex
	free       []*Buf
	out        int // buffers handed out and not given back
}

// Buf is a buffer from a Pool.
type Buf struct {
	B      []byte
	mapped bool // else from the Go heap, where mapping failed
	pool   *Pool
}

// Get returns a buffer of p.Size bytes with arbitrary contents.
func (p *Pool) Get() *Buf {
	p.mu.Lock()
	p.out++
	if n := len(p.free); n > 0 {
		b := p.free[n-1]
		p.free = p.free[:n-1]
		p.mu.Unlock()
		return b
	}
	p.mu.Unlock()
	if m, err := mapAnon(p.Size); err == nil {
		return &Buf{B: m, mapped: true, pool: p}
	}
	return &Buf{B: make([]byte, p.Size), pool: p}
}

// Put gives b back to its pool; b must not be used after it.
func (b *Buf) Put() {
	if poison {
		fill(b.B, 0xdd)
	}
	p := b.pool
	p.mu.Lock()
	p.out--
	if len(p.free) < p.Keep {
		p.free = append(p.free, b)
		b = nil
	}
	p.mu.Unlock()
	if b != nil && b.mapped {
		unmapAnon(b.B)
	}
}

// Trim unmaps the free buffers kept so far; later ones are kept as before.
func (p *Pool) Trim() { p.trim(false) }

// Close unmaps the free buffers and keeps none from then on: a buffer
// given back after Close is unmapped at once. Get still works.
func (p *Pool) Close() { p.trim(true) }

func (p *Pool) trim(close bool) {
	p.mu.Lock()
	free := p.free
	p.free = nil
	if close {
		p.Keep = 0
	}
	p.mu.Unlock()
	for _, b := range free {
		if b.mapped {
			unmapAnon(b.B)
		}
	}
}

// Stats returns the buffers handed out and the free ones kept.
func (p *Pool) Stats() (out, free int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out, len(p.free)
}
