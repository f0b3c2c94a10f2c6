// Package keyfilter is a Bloom filter of user keys kept in memory, never
// stored: a memtable keeps one of the keys written to it, and the level-0
// table a flush writes from the memtable keeps it on while the table is in
// level 0, so that a Get of a key neither holds skips each in a few
// nanoseconds.
package keyfilter

import (
	"hash/maphash"
	"math/bits"
	"sync/atomic"
)

// Filter is a Bloom filter of the user keys a memtable holds, so that a
// Get of a key the memtable does not hold (most Gets, in a database larger
// than its write buffer) skips the index, its lock and the cache misses of
// its search; and, once the memtable is flushed, the level-0 table's index
// and filter blocks.
//
// It is blocked by register: each key sets filterProbes bits of one 64-bit
// word, chosen by its hash, so that an insert is one load and, if it adds
// bits, one store, and a lookup one load. Writers set a key's bits before
// the entry goes into the index, and long before a reader may see its
// sequence number, so a reader that finds the bits clear may skip the
// memtable: the filter has no false negatives. The bits are never
// cleared.
//
// It is sized when the memtable is made, from the write buffer the engine
// fills it to (see New). Past filterFullAt entries a word, where its
// false positives would pass about one in eight, it stops answering and
// every Get searches the index, as without it: a memtable can take far
// more entries than its write buffer holds (one large batch, or keys and
// values much smaller than the engine expected).
//
// Measured (BenchmarkGetAbsent, 60,000 entries of 16-byte keys, the keys
// looked up hot in the processor's caches): a Get of an absent key took
// 393 ns through the index and 8 ns through the filter. TestKeyFilter
// measures 0.5% false positives at 4 keys a word.
type Filter struct {
	words []atomic.Uint64 // a power of two of them
	mask  uint64          // len(words)-1
	limit int64           // entries past which it stops answering
	full  atomic.Bool
	// added counts the entries added. Only the writer uses it; it sits
	// on a cache line of its own, away from what every Get reads.
	_     [64]byte
	added int64
}

const (
	// filterProbes is the bits a key sets in its word. At the usual load
	// (about 4 keys a word, see filterBytesPerWord) four bits keep false
	// positives near 1%.
	filterProbes = 4
	// filterBytesPerWord is the write buffer's bytes per word of filter:
	// a 8 MiB write buffer gets a 256 KiB filter. Entries of db_bench's
	// size (16-byte keys, 100-byte values) come to about 1.3 a word;
	// entries of 64 bytes with their overhead, 4.
	filterBytesPerWord = 256
	// filterFullAt is the average entries a word past which the filter
	// stops answering: with 4 probes in a 64-bit word, about 12% false
	// positives.
	filterFullAt = 16
	// minFilterWords and maxFilterWords bound the filter's size: 8 KiB
	// and 4 MiB.
	minFilterWords = 1 << 10
	maxFilterWords = 1 << 19
)

// filterSeed is the hash seed of every filter in the process: a filter is
// never stored, so its hash need not be stable across processes.
var filterSeed = maphash.MakeSeed()

// New returns a filter for a memtable filled to about bufferBytes of
// entries (memtable's ApproximateSize), or nil if bufferBytes is 0 or
// less.
func New(bufferBytes int64) *Filter {
	if bufferBytes <= 0 {
		return nil
	}
	n := min(max(bufferBytes/filterBytesPerWord, minFilterWords), maxFilterWords)
	n = 1 << (63 - bits.LeadingZeros64(uint64(n))) // round down to a power of two
	return &Filter{
		words: make([]atomic.Uint64, n),
		mask:  uint64(n - 1),
		limit: n * filterFullAt,
	}
}

// Hash hashes a user key for MayContainHash: one hash serves every filter
// a lookup asks.
func Hash(ukey []byte) uint64 { return maphash.Bytes(filterSeed, ukey) }

// locate returns the index of h's word and the bits h sets in it. The
// word comes from the low bits of h, the probes from the high ones, six
// bits each.
func (f *Filter) locate(h uint64) (int, uint64) {
	var m uint64
	for i := range filterProbes {
		m |= 1 << ((h >> (58 - 6*i)) & 63)
	}
	return int(h & f.mask), m
}

// Add records a user key. Only one goroutine may add (the memtable's
// writer, under its wmu): it alone changes the words, so a load and a store
// suffice where an atomic OR would lock the bus. Lookups may run beside it.
func (f *Filter) Add(ukey []byte) {
	if f.added >= f.limit {
		f.full.Store(true)
		return
	}
	f.added++
	i, m := f.locate(Hash(ukey))
	if w := f.words[i].Load(); w&m != m {
		f.words[i].Store(w | m)
	}
}

// MayContain reports whether ukey may have been added: false only if it
// was not.
func (f *Filter) MayContain(ukey []byte) bool { return f.MayContainHash(Hash(ukey)) }

// MayContainHash is MayContain of the key whose Hash is h.
func (f *Filter) MayContainHash(h uint64) bool {
	if f.full.Load() {
		return true
	}
	i, m := f.locate(h)
	return f.words[i].Load()&m == m
}

// Full reports whether the filter has stopped answering: past its limit
// of entries, MayContain is true of every key.
func (f *Filter) Full() bool { return f.full.Load() }

// Limit is the number of entries past which the filter stops answering.
func (f *Filter) Limit() int64 { return f.limit }
