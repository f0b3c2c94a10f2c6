package memtable

import (
	"hash/maphash"
	"math/bits"
	"sync/atomic"
)

// keyFilter is a Bloom filter of the user keys a memtable holds, so that a
// Get of a key the memtable does not hold (most Gets, in a database larger
// than its write buffer) skips the index, its lock and the cache misses of
// its search.
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
// fills it to (see NewSized). Past filterFullAt entries a word, where its
// false positives would pass about one in eight, it stops answering and
// every Get searches the index, as without it: a memtable can take far
// more entries than its write buffer holds (one large batch, or keys and
// values much smaller than the engine expected).
//
// Measured (BenchmarkGetAbsent, 60,000 entries of 16-byte keys, the keys
// looked up hot in the processor's caches): a Get of an absent key took
// 393 ns through the index and 8 ns through the filter. TestKeyFilter
// measures 0.5% false positives at 4 keys a word.
type keyFilter struct {
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

// newKeyFilter returns a filter for a memtable filled to about bufferBytes
// (ApproximateSize), or nil if bufferBytes is 0 or less.
func newKeyFilter(bufferBytes int64) *keyFilter {
	if bufferBytes <= 0 {
		return nil
	}
	n := min(max(bufferBytes/filterBytesPerWord, minFilterWords), maxFilterWords)
	n = 1 << (63 - bits.LeadingZeros64(uint64(n))) // round down to a power of two
	return &keyFilter{
		words: make([]atomic.Uint64, n),
		mask:  uint64(n - 1),
		limit: n * filterFullAt,
	}
}

// filterHash hashes a user key for keyFilter.
func filterHash(ukey []byte) uint64 { return maphash.Bytes(filterSeed, ukey) }

// locate returns the index of h's word and the bits h sets in it. The
// word comes from the low bits of h, the probes from the high ones, six
// bits each.
func (f *keyFilter) locate(h uint64) (int, uint64) {
	var m uint64
	for i := range filterProbes {
		m |= 1 << ((h >> (58 - 6*i)) & 63)
	}
	return int(h & f.mask), m
}

// add records a user key. Called by the memtable's writer, under its
// wmu: the one goroutine that changes the words, so a load and a store
// suffice where an atomic OR would lock the bus.
func (f *keyFilter) add(ukey []byte) {
	if f.added >= f.limit {
		f.full.Store(true)
		return
	}
	f.added++
	i, m := f.locate(filterHash(ukey))
	if w := f.words[i].Load(); w&m != m {
		f.words[i].Store(w | m)
	}
}

// mayContain reports whether the memtable may hold ukey: false only if it
// holds no entry of it.
func (f *keyFilter) mayContain(ukey []byte) bool {
	if f.full.Load() {
		return true
	}
	i, m := f.locate(filterHash(ukey))
	return f.words[i].Load()&m == m
}
