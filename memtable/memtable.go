// Package memtable holds the newest writes in memory, ordered by internal
// key (user key ascending, sequence number descending: ikey.Compare), until
// they are flushed to a table. It is a github.com/google/btree BTreeG of
// sorted leaves of entries (index.go), whose bytes are carved from an
// arena of 64 KiB chunks (arena.go), on the Go heap or outside it; outside
// it, the leaves' arrays are carved from the chunks too.
//
// Use: the engine creates a Memtable with New, applies each batch after its
// WAL write with Apply (or single entries with Add), answers point reads
// with Get at a sequence number, and scans for reads and flushes with
// NewIter. When ApproximateSize passes the write buffer size the engine
// stops writing to it and flushes it.
//
// Concurrency: every method is safe for concurrent use. Writes (Add, Apply)
// are serialized by an internal mutex: one writer at a time, which the
// engine ensures anyway. Any number of Get calls and iterators run
// alongside the writer. Apply inserts a batch a chunk of entries at a time,
// so a reader may see part of one: the engine reads at a sequence number
// below a batch's until the batch is committed. An Iterator is
// for one goroutine; many may run at once. An iterator sees every entry
// that existed when it was created exactly once per pass, in order; entries
// added later may or may not appear (always in order, and possibly only
// part of a batch), so the engine filters them out by sequence number.
//
// Scope: the package is a part of the engine, usable only from inside the
// module github.com/shale-db/shale. Its API speaks the engine's internal
// vocabulary, defined in packages under internal/ that Go lets no other
// module import: Add takes an ikey.Kind, Apply a batch in batchrepr's
// encoding, and Iterator.Key returns an internal key in ikey's encoding. It
// sits at the top of the module, not under internal/, because the design
// lays the engine's stages out there; it makes no promise of stability. An
// ordered map for programs is package shale itself.
//
// Immutability and lifetime: the memtable never modifies or reuses bytes it
// has stored while it lives. Slices returned by Get, Iterator.Key and
// Iterator.Value must not be modified. For a memtable from New they stay
// valid for as long as the caller keeps them (keeping one pins the 64 KiB
// chunk it lives in on the Go heap). A memtable from NewIn keeps its bytes
// outside the Go heap, in chunks it gives back to its Chunks pool when its
// last reference goes (Ref, Unref): its slices are valid while the caller
// holds a reference, so the engine references every memtable a read uses
// for as long as the read lasts, and copies the values it hands to users.
//
// Design, as measured by the package benchmarks (20,000 entries of 16-byte
// keys and 100-byte values; process CPU time, on a shared 2-core machine):
//
//   - Iteration. The index iterates only by callback, and its reads are
//     unsafe alongside a write. An Iterator copies a run of entry headers
//     (never their bytes) out of it under the read lock, releases it,
//     serves the run, and re-seeks strictly after the last entry it served
//     for the next run: 8 entries after a seek, doubling to 256. Entries
//     are never removed, which makes this exact. The alternative, cloning
//     a B-tree of entries at NewIter and reading the clone through
//     iter.Pull, scanned at 222 ns per entry against 36 (the bare
//     callback: 11), sought at 6.2 us against 0.8, and, because Clone
//     makes the writer copy every node it then touches, slowed Adds beside
//     an iterator-opening reader from about 4 us to 6-12 us.
//   - Arena. Carving entries from 64 KiB chunks makes Add allocation-free
//     in the steady state, costs the same CPU, and cuts what each garbage
//     collection spends on a 200,000-entry memtable by 30%.
//   - Comparison. Each entry caches its user key's first 16 bytes and its
//     trailer, so most comparisons touch no key bytes: Get fell from about
//     970 to 370 ns on random keys with 8 bytes cached. Caching 16 bytes
//     took sequential Adds of keys that share their first 8 (db_bench's
//     keys) from about 460 to 365 ns.
//   - Leaves. A B-tree of single entries (degree 64, the best of 16, 64
//     and 128) descended from the root for every insert: about 276 ns
//     per sequential Add. Keyed by leaves of up to 128 entries, an insert
//     that lands in the leaf of the insert before appends to it: 119 ns;
//     random Adds went from 341 to 318 ns and Gets from 200 to 215.
//   - Filter. A Get of a key the memtable does not hold (most Gets, once
//     the database is larger than its write buffer) searched the index
//     all the same, under its read lock, which a writer's insert holds
//     readers back from: 390 ns at 60,000 entries (BenchmarkGetAbsent). A
//     memtable made by NewSized keeps a Bloom filter of its user keys
//     (package keyfilter), which answers such a Get in 8 ns, and costs an Add
//     one hash and one atomic store; one made by NewLazy builds it once Gets
//     read it often.
package memtable

import (
	"bytes"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/errors"
	"github.com/shale-db/shale/internal/batchrepr"
	"github.com/shale-db/shale/internal/ikey"
	"github.com/shale-db/shale/internal/keyfilter"
	"github.com/shale-db/shale/internal/rangedel"
)

// entryOverhead is what ApproximateSize charges per entry on top of its
// key, trailer and value bytes: the 48-byte entry in a leaf, over the
// leaves' fill. TestEntryOverhead measures about 53 bytes for keys added
// in order (leaves full) and about 68 in random order (arrays sized as
// leaves fill) on the Go heap, where the collector lets the heap grow to
// twice that; TestLeavesOutsideHeap measures 53 and 86 for a memtable
// whose leaves are in its chunks (arrays of leafCap, 50% to 100% full).
// Charging 88 there, to keep even random inserts within the write buffer
// size, made memtables 8% smaller: fillrandom flushed and compacted more,
// and took 12% longer (four A/B pairs).
const entryOverhead = 72

// entry is one version of a user key. Its bytes live in one allocation,
// laid out as the internal key then the value; kv is that allocation cut to
// the user key: len(kv) is the user key's length and cap(kv) the whole.
//
//	+-------------------------+----------------------+-------+
//	| ukey (len(kv) bytes)    | trailer (fixed64 LE) | value |
//	+-------------------------+----------------------+-------+
//	                                                         cap(kv)
//
// p0, p1 and trailer are copies that make most comparisons read only the
// entry itself, not the key bytes it points to (a cache miss each): p0 and
// p1 hold the user key's first 16 bytes, so keys of up to 16 bytes compare
// without their bytes. Pivot entries built for searches hold a caller's
// user key as kv, whose capacity means nothing; they never enter the tree.
type entry struct {
	p0, p1  uint64 // bytes 0-7 and 8-15 of ukey, big-endian, zero-padded
	trailer uint64
	kv      []byte
}

func (e *entry) ukey() []byte { n := len(e.kv); return e.kv[:n:n] }
func (e *entry) key() []byte  { n := len(e.kv) + ikey.TrailerLen; return e.kv[:n:n] }
func (e *entry) value() []byte {
	return e.kv[len(e.kv)+ikey.TrailerLen : cap(e.kv) : cap(e.kv)]
}

// less is ikey.Compare on entries: user key ascending, trailer descending.
func less(a, b entry) bool {
	if a.p0 != b.p0 {
		return a.p0 < b.p0
	}
	if a.p1 != b.p1 {
		return a.p1 < b.p1
	}
	// The first 16 bytes agree, zero padding included.
	la, lb := len(a.kv), len(b.kv)
	if la > 16 && lb > 16 {
		if c := bytes.Compare(a.kv[16:], b.kv[16:]); c != 0 {
			return c < 0
		}
	} else if la != lb {
		// The shorter key is all of the longer one's first bytes, and
		// the longer one has only zeros after them: the shorter sorts
		// first.
		return la < lb
	}
	return a.trailer > b.trailer
}

// compareEntries is less as a three-way comparison, for slices.SortFunc.
func compareEntries(a, b entry) int {
	switch {
	case less(a, b):
		return -1
	case less(b, a):
		return 1
	}
	return 0
}

// sameKey reports whether a and b have the same user key and trailer.
func sameKey(a, b *entry) bool {
	return a.trailer == b.trailer && a.p0 == b.p0 && a.p1 == b.p1 && bytes.Equal(a.kv, b.kv)
}

// makePivot returns a search entry for (ukey, trailer). It aliases ukey.
func makePivot(ukey []byte, trailer uint64) entry {
	p0, p1 := ikey.Prefixes(ukey)
	return entry{p0: p0, p1: p1, trailer: trailer, kv: ukey}
}

// pivot returns a search entry for the encoded internal key k. A k too short
// to be an internal key is taken as a whole user key with the largest
// trailer, which sorts before every version of that user key.
func pivot(k []byte) entry {
	if !ikey.Valid(k) {
		return makePivot(k, math.MaxUint64)
	}
	return makePivot(ikey.UserKey(k), ikey.Trailer(k))
}

// Memtable is an ordered in-memory set of entries. Create one with New.
type Memtable struct {
	// wmu serializes writers; it guards arena and scratch.
	wmu     sync.Mutex
	arena   arena
	scratch []entry // entries of the batch being applied

	mu struct {
		sync.RWMutex
		idx index
	}
	// rdels holds the range deletions applied, fragmented, apart from
	// the point entries; each batch with one replaces it (see
	// RangeDels).
	rdels atomic.Pointer[rangedel.Spans]
	size  atomic.Int64
	n     atomic.Int64
	dels  atomic.Int64 // entries that are deletions
	refs  atomic.Int32 // see Ref
	// filter holds the user keys of every entry, for Gets (nil: no
	// filter, or not yet; see NewSized and NewLazy).
	filter atomic.Pointer[keyfilter.Filter]
	// wfilter is the filter writers add their keys to: filter's, or the
	// one buildFilter is filling before it answers. Guarded by wmu.
	wfilter *keyfilter.Filter
	// lazyBytes, if > 0, is the write buffer a filter built once Gets
	// read the memtable often is sized for (NewLazy).
	lazyBytes int64
	// gets counts the Gets served, up to readOftenGets (see ReadOften).
	gets atomic.Int64
}

// readOftenGets is the Gets after which ReadOften reports true. A filter
// costs each write one hash and one atomic store: 35 to 70 ns in the
// engine's fillbatch (a cache miss on its word), 12% of its time. It
// saves a Get of a key the memtable does not hold about 400 ns: a
// memtable of 8 MiB of db_bench's entries (about 50,000) pays for its
// filter with about 4,000 such Gets.
const readOftenGets = 4096

// ReadOften reports whether Gets have read m often enough that the
// memtable after it should keep a filter (NewSized). The count stops at
// readOftenGets, so that Gets from many goroutines stop writing to it.
func (m *Memtable) ReadOften() bool { return m.gets.Load() >= readOftenGets }

// Filtered reports whether m keeps a filter of its keys that Gets consult
// (see NewSized and NewLazy).
func (m *Memtable) Filtered() bool { return m.filter.Load() != nil }

// KeyFilter returns m's filter of its keys, for the level-0 table a flush
// writes from m to keep (see manifest.FileMeta.KeyFilter), or nil if m
// keeps none or it has stopped answering. Call it once m takes no more
// writes (a memtable being flushed): the nil it returns for a full filter
// holds only for the keys added before.
func (m *Memtable) KeyFilter() *keyfilter.Filter {
	if f := m.filter.Load(); f != nil && !f.Full() {
		return f
	}
	return nil
}

// New returns an empty Memtable whose bytes live on the Go heap.
func New() *Memtable { return NewIn(nil) }

// NewIn returns an empty Memtable whose arena takes its chunks from c
// (nil: the Go heap), with one reference, its creator's (see Ref).
func NewIn(c *Chunks) *Memtable { return NewSized(c, 0) }

// NewSized is NewIn for a memtable that will be filled to about
// bufferBytes (ApproximateSize): it keeps a filter of its keys, sized for
// that, which lets a Get of a key it does not hold skip its index (see
// keyfilter). With bufferBytes 0 it keeps none.
func NewSized(c *Chunks, bufferBytes int64) *Memtable {
	m := &Memtable{arena: arena{chunkSize: arenaChunkSize, pool: c}}
	if f := keyfilter.New(bufferBytes); f != nil {
		m.filter.Store(f)
		m.wfilter = f
	}
	m.mu.idx = newIndex()
	if m.arena.offHeap() {
		// Inserts run with wmu held, which guards the arena.
		m.mu.idx.spares.alloc = m.arena.entries
	}
	m.refs.Store(1)
	return m
}

// NewLazy is NewIn for a memtable that will be filled to about
// bufferBytes, which keeps no filter of its keys until Gets have read it
// often (ReadOften): the Get that finds it so starts building one, sized
// for bufferBytes, of the keys it holds then and those written after (see
// buildFilter). So a memtable filled with no Gets beside it (a load) pays
// nothing for a filter, and one read often after its writes stopped (the
// last one of a load, read until the next write fills it) still answers
// the Gets of keys it does not hold from the filter. With bufferBytes 0 it
// never keeps one.
func NewLazy(c *Chunks, bufferBytes int64) *Memtable {
	m := NewSized(c, 0)
	m.lazyBytes = bufferBytes
	return m
}

// buildFilterRun is how many entries buildFilter adds under the writers'
// lock at a time, which a write may wait for: 50 to 70 µs on average
// (70,000 and 140,000 entries of 16-byte keys, 4 to 8 ms in all).
const buildFilterRun = 1024

// buildFilter builds the filter of a memtable made by NewLazy, and drops
// the reference its caller took for it. Writers add their keys to the
// new filter from the start (wfilter), while it walks the index a run of
// entries at a time under their lock, so that no write waits for the
// whole walk; the filter answers Gets only once the walk has added every
// key the index held before. An entry the walk meets that a writer added
// too is added twice, which changes nothing but the count toward the
// filter's limit (keyfilter.Filter.Limit).
func (m *Memtable) buildFilter() {
	defer m.Unref()
	f := keyfilter.New(m.lazyBytes)
	m.wmu.Lock()
	m.wfilter = f
	m.wmu.Unlock()
	var from entry
	first := true
	for {
		n := 0
		m.wmu.Lock()
		m.mu.RLock()
		visit := func(e entry) bool {
			f.Add(e.ukey())
			from = e
			n++
			return n < buildFilterRun
		}
		if first {
			m.mu.idx.ascend(visit)
		} else {
			m.mu.idx.ascendGE(from, visit)
		}
		m.mu.RUnlock()
		done := n < buildFilterRun || f.Full()
		if done {
			m.filter.Store(f)
		}
		m.wmu.Unlock()
		if done {
			return
		}
		if testHookFilterRun != nil {
			testHookFilterRun(m)
		}
		first = false
	}
}

// testHookFilterRun, if set, is called by buildFilter between runs.
var testHookFilterRun func(*Memtable)

// Ref takes a reference on m: its bytes stay in place until every
// reference is given back with Unref. A memtable made by NewIn starts with
// one reference; whoever reads it (a Get, an iterator, or a slice that
// either returned) holds one for as long as it reads.
func (m *Memtable) Ref() { m.refs.Add(1) }

// Unref gives a reference back. After the last one, the chunks m took from
// its Chunks go back to the pool: nothing may use m, or any slice it
// returned, again. For a memtable on the Go heap it only counts.
func (m *Memtable) Unref() {
	switch n := m.refs.Add(-1); {
	case n == 0:
		m.wmu.Lock()
		m.arena.release()
		m.wmu.Unlock()
	case n < 0:
		panic("memtable: Unref without a reference")
	}
}

// makeEntry copies (ukey, seq, kind, value) into one arena slice, and
// records ukey in the filter.
// Called with wmu held.
func (m *Memtable) makeEntry(seq uint64, kind ikey.Kind, ukey, value []byte) entry {
	if m.wfilter != nil {
		m.wfilter.Add(ukey)
	}
	kl := len(ukey) + ikey.TrailerLen
	b := m.arena.alloc(kl + len(value))
	ikey.Append(b[:0], ukey, seq, kind)
	copy(b[kl:], value)
	p0, p1 := ikey.Prefixes(ukey)
	return entry{p0: p0, p1: p1, trailer: ikey.MakeTrailer(seq, kind), kv: b[:len(ukey)]}
}

func entrySize(e *entry) int64 {
	return int64(cap(e.kv) + entryOverhead)
}

// Add inserts one entry, copying ukey and value (into one allocation,
// usually shared with neighbouring entries). seq must be <= ikey.MaxSeq
// and kind ikey.KindSet or ikey.KindDelete. An entry whose user key, seq
// and kind equal an existing one's replaces it; the engine never adds one,
// since it uses each sequence number once.
func (m *Memtable) Add(seq uint64, kind ikey.Kind, ukey, value []byte) {
	m.wmu.Lock()
	defer m.wmu.Unlock()
	e := m.makeEntry(seq, kind, ukey, value)
	var d delta
	m.mu.Lock()
	m.insertLocked(e, &d)
	m.mu.Unlock()
	d.apply(m)
}

// delta is what inserts changed in a memtable's counts, applied to its
// atomic counters once per batch rather than three times per entry.
type delta struct{ size, n, dels int64 }

// add accounts for a new entry.
func (d *delta) add(e *entry) {
	d.size += entrySize(e)
	d.n++
	if ikey.Kind(e.trailer&0xff) == ikey.KindDelete {
		d.dels++
	}
}

func (d *delta) apply(m *Memtable) {
	m.size.Add(d.size)
	m.n.Add(d.n)
	if d.dels != 0 {
		m.dels.Add(d.dels)
	}
}

// insertLocked inserts e and accounts for it in d. Called with wmu and mu
// held.
func (m *Memtable) insertLocked(e entry, d *delta) {
	old, replaced := m.mu.idx.insert(e)
	if replaced {
		d.size -= entrySize(&old)
		d.n--
		if ikey.Kind(old.trailer&0xff) == ikey.KindDelete {
			d.dels--
		}
	}
	d.add(&e)
}

// Apply inserts every entry of the batch repr (see package batchrepr),
// giving entry i the sequence number seq+i; the sequence number in repr's
// header is ignored. It checks the whole batch before it inserts any of
// it: if repr is corrupt (the error matches batchrepr.ErrCorrupt), holds a
// range deletion with no end, or its sequence numbers would pass
// ikey.MaxSeq, nothing is applied (the arena space of the entries decoded
// before the damage may stay spent). A batch of inOrderMin entries or
// more whose keys already ascend from above the largest entry held (a bulk
// load in key order) is appended as it is decoded (applyInOrder). Any
// other batch of sortApplyMin entries or more is sorted first, and
// appended a leaf at a time (index.appendAbove) if its entries then ascend
// from above the largest entry held. A large batch goes in a chunk at a
// time (applyChunk), so a Get or an iterator may see part of it: readers
// must read at a sequence number below seq until Apply has returned.
func (m *Memtable) Apply(repr []byte, seq uint64) error {
	r := batchrepr.NewReader(repr)
	if err := r.Err(); err != nil {
		return err
	}
	count := r.Count() // the header's: the entries have not been checked yet
	if count > 0 && seq > ikey.MaxSeq-uint64(count-1) {
		return errors.Newf("memtable: sequence numbers %d+%d pass the maximum", seq, count)
	}
	m.wmu.Lock()
	defer m.wmu.Unlock()
	var d delta
	var tombs []rangedel.Tombstone
	inOrder, err := m.ascendsAbove(repr, seq, count)
	if err == nil {
		if inOrder {
			tombs = m.applyInOrder(repr, seq, &d)
		} else {
			tombs, err = m.applySorted(repr, seq, count, &d)
		}
	}
	m.dropScratch()
	if err != nil {
		return err
	}
	if len(tombs) > 0 {
		// Applied in sequence order: each is newer than every one before,
		// and only the spans it overlaps are rebuilt.
		m.mu.Lock()
		spans := m.RangeDels()
		for _, t := range tombs {
			spans = spans.AddNewest(t)
			d.size += int64(len(t.Start) + len(t.End) + entryOverhead)
			d.n++
			d.dels++
		}
		m.rdels.Store(&spans)
		m.mu.Unlock()
	}
	d.apply(m)
	return nil
}

// applySorted is Apply's way for most batches: it decodes every entry into
// scratch, sorts a large batch, and inserts the entries (appending them,
// if they ascend from above the largest entry held). It returns the
// batch's range deletions, for the caller to add. On an error nothing has
// been inserted.
func (m *Memtable) applySorted(repr []byte, seq uint64, count uint32, d *delta) ([]rangedel.Tombstone, error) {
	r := batchrepr.NewReader(repr)
	// An entry takes at least two bytes (a tag and an empty key's length),
	// which bounds what a damaged header can make Apply allocate.
	m.scratch = slices.Grow(m.scratch, min(int(count), len(repr)/2))
	_, tombs, err := m.decode(r, seq, math.MaxInt, nil)
	if err != nil {
		return nil, err
	}
	if len(m.scratch) >= sortApplyMin {
		slices.SortFunc(m.scratch, compareEntries)
	}
	ents := m.scratch
	// The index changes under m.mu alone, and this writer holds wmu: it
	// may read the index without m.mu.
	appending := len(ents) >= minAppendRun && m.mu.idx.above(ents)
	for len(ents) > applyChunk {
		m.mu.Lock()
		m.insertChunkLocked(ents[:applyChunk], appending, d)
		m.mu.Unlock()
		ents = ents[applyChunk:]
		if testHookApplyChunk != nil {
			testHookApplyChunk()
		}
	}
	m.mu.Lock()
	m.insertChunkLocked(ents, appending, d)
	m.mu.Unlock()
	return tombs, nil
}

// errNoEnd is Apply's error for a range deletion without an end.
func errNoEnd(seq uint64) error {
	return errors.Newf("memtable: range deletion at sequence number %d has no end", seq)
}

// decode reads the entries of r, the first at sequence number seq, until
// it has added max point entries to m.scratch or r ends: a point entry is
// made (see makeEntry) and added to m.scratch, a range deletion appended
// to tombs. It returns the sequence number of the next entry, tombs, and
// r's damage or a range deletion's missing end, if it met either.
func (m *Memtable) decode(r *batchrepr.Reader, seq uint64, max int, tombs []rangedel.Tombstone) (uint64, []rangedel.Tombstone, error) {
	for len(m.scratch) < max {
		kind, k, v, ok := r.Next()
		if !ok {
			return seq, tombs, r.Err()
		}
		if kind == ikey.KindRangeDelete {
			if len(v) == 0 {
				return seq, tombs, errNoEnd(seq)
			}
			tombs = append(tombs, rangedel.Tombstone{Start: bytes.Clone(k), End: bytes.Clone(v), Seq: seq})
		} else {
			m.scratch = append(m.scratch, m.makeEntry(seq, kind, k, v))
		}
		seq++
	}
	return seq, tombs, nil
}

// inOrderMin is the fewest entries for which Apply looks whether a batch
// ascends as it stands (ascendsAbove). Smaller batches fit in the scratch
// the memtable keeps, and applySorted's sort of an ordered batch is one
// comparison an entry. (A variable so that tests can lower it.)
var inOrderMin uint32 = maxKeptScratch

// ascendsAbove reports whether the batch repr, of count entries from
// sequence number seq, is one applyInOrder may take: large (inOrderMin
// entries or more), undamaged, and its point entries' user keys strictly
// ascending from above the largest entry held. It reads the batch as
// applySorted would, and returns the first damage it meets. It stops at
// the first entry out of order: applySorted, which then takes the batch,
// reads it all before it inserts any of it.
//
// Called with wmu held.
func (m *Memtable) ascendsAbove(repr []byte, seq uint64, count uint32) (bool, error) {
	if count < inOrderMin {
		return false, nil
	}
	r := batchrepr.NewReader(repr)
	var prev []byte
	points := 0
	for s := seq; ; s++ {
		kind, k, v, ok := r.Next()
		if !ok {
			break
		}
		if kind == ikey.KindRangeDelete {
			if len(v) == 0 {
				return false, errNoEnd(s)
			}
			continue
		}
		var next bool
		if points == 0 {
			next = m.mu.idx.precedes(entryFor(s, kind, k))
		} else {
			next = bytes.Compare(prev, k) < 0
		}
		if !next {
			return false, nil
		}
		prev = k
		points++
	}
	if err := r.Err(); err != nil {
		return false, err
	}
	return points > 0, nil
}

// entryFor is the entry for ukey at seq, of kind, its bytes not copied:
// for comparisons only.
func entryFor(seq uint64, kind ikey.Kind, ukey []byte) entry {
	p0, p1 := ikey.Prefixes(ukey)
	return entry{p0: p0, p1: p1, trailer: ikey.MakeTrailer(seq, kind), kv: ukey}
}

// applyInOrder inserts the batch repr, from sequence number seq, whose
// point entries ascend from above every entry held (ascendsAbove said so):
// it decodes applyChunk entries at a time into scratch, with only wmu
// held, and appends each chunk to the index (index.appendAbove) under the
// index's lock, so that readers wait for one chunk's appends at most.
// applySorted would decode the whole batch first, into a scratch of one
// entry (48 bytes) for each: a bulk load of 1,000,000 entries in key order
// made a 48 MB array, which the collector then scanned, and copied it into
// the index from memory no cache held. It returns the range deletions.
func (m *Memtable) applyInOrder(repr []byte, seq uint64, d *delta) []rangedel.Tombstone {
	r := batchrepr.NewReader(repr)
	var tombs []rangedel.Tombstone
	m.scratch = slices.Grow(m.scratch[:0], applyChunk)
	for chunks := 0; ; chunks++ {
		// ascendsAbove read the whole batch: decode meets no damage.
		seq, tombs, _ = m.decode(r, seq, applyChunk, tombs)
		if len(m.scratch) == 0 {
			return tombs
		}
		if chunks > 0 && testHookApplyChunk != nil {
			testHookApplyChunk()
		}
		m.mu.Lock()
		m.insertChunkLocked(m.scratch, true, d)
		m.mu.Unlock()
		clear(m.scratch)
		m.scratch = m.scratch[:0]
	}
}

// dropScratch empties the scratch entries of the batch Apply decoded, so
// that none of them reaches the next batch (a failed Apply's included).
func (m *Memtable) dropScratch() {
	clear(m.scratch)
	m.scratch = m.scratch[:0]
	if cap(m.scratch) > maxKeptScratch {
		m.scratch = nil // a rare huge batch's array goes with it
	}
}

// insertChunkLocked adds ents to the index and accounts for them in d: one
// at a time, or, if appending, all at once with appendAbove.
func (m *Memtable) insertChunkLocked(ents []entry, appending bool, d *delta) {
	if appending {
		if len(ents) > 0 {
			m.mu.idx.appendAbove(ents)
		}
		for i := range ents {
			d.add(&ents[i])
		}
		return
	}
	for _, e := range ents {
		m.insertLocked(e, d)
	}
}

// minAppendRun is the fewest entries for which Apply looks whether a batch
// can be appended (index.appendAbove): below it, the insert path's hint
// serves entries in order about as well.
const minAppendRun = 8

// sortApplyMin is the number of entries from which Apply sorts a batch
// before inserting it (a batch that applyInOrder takes is not sorted: its
// keys ascend already). Inserts in key order find their leaf through the
// index's last-insert hint and fill each leaf in one visit, where random
// ones descend the tree for each entry, missing the cache at every level
// once the tree outgrows it. Into a memtable that holds entries among
// the batch's, sorting costs more than it saves on small batches.
// BenchmarkApplyLarge, random 32-byte keys and values, ns an entry
// unsorted against sorted, into a memtable of 50,000 entries: 470 against
// 586 at 1,000 entries, 482 against 427 at 10,000, 806 against 496 at
// 1,000,000. Into an empty one, where the sorted batch is appended
// (index.appendAbove): 320 against 272, 413 against 312, 825 against 414.
// (A variable so that the benchmark can compare.)
var sortApplyMin = 4096

// maxKeptScratch is the most entries of scratch space a memtable keeps
// between batches.
const maxKeptScratch = 4096

// applyChunk is how many entries Apply inserts per hold of the index's
// lock. Readers wait for at most one chunk (about 80 us of inserts)
// rather than a whole batch: a batch of 100,000 entries held every Get and
// iterator on the memtable for about 30 ms. A reader sees the entries
// inserted so far, which the engine hides, as it hides a batch being
// inserted from iterators, by reading at a sequence number below the
// batch's until the batch is committed.
const applyChunk = 256

// testHookApplyChunk, if set, runs between Apply's chunks, with no lock on
// the index held.
var testHookApplyChunk func()

// Get returns the newest version of ukey whose sequence number is <= seq.
// found reports a put, whose value is returned; deleted reports a deletion,
// which hides every older version; if neither, the memtable holds no
// version of ukey at or below seq and the caller must look further. The
// value is never modified by the memtable (see the package doc).
func (m *Memtable) Get(ukey []byte, seq uint64) (value []byte, found, deleted bool) {
	value, _, found, deleted = m.GetEntry(ukey, seq)
	return value, found, deleted
}

// GetEntry is Get that also returns the sequence number of the version
// found, which a range deletion covering ukey may be above.
func (m *Memtable) GetEntry(ukey []byte, seq uint64) (value []byte, entrySeq uint64, found, deleted bool) {
	if m.gets.Load() < readOftenGets && m.gets.Add(1) == readOftenGets && m.lazyBytes > 0 {
		m.Ref() // the caller holds one: m is not released
		go m.buildFilter()
	}
	if f := m.filter.Load(); f != nil && !f.MayContain(ukey) {
		return nil, 0, false, false
	}
	if seq > ikey.MaxSeq {
		seq = ikey.MaxSeq
	}
	var g getter
	p := makePivot(ukey, ikey.MakeTrailer(seq, ikey.KindSeek))
	m.mu.RLock()
	m.mu.idx.ascendGE(p, g.visit)
	m.mu.RUnlock()
	if !g.ok || !bytes.Equal(g.e.ukey(), ukey) {
		return nil, 0, false, false
	}
	if ikey.Kind(g.e.trailer&0xff) == ikey.KindDelete {
		return nil, g.e.trailer >> 8, false, true
	}
	return g.e.value(), g.e.trailer >> 8, true, false
}

// getter receives the first entry at or after a Get's pivot.
type getter struct {
	e  entry
	ok bool
}

func (g *getter) visit(e entry) bool {
	g.e, g.ok = e, true
	return false
}

// RangeDels returns the memtable's range deletions, fragmented (nil if
// none). The spans are never modified: a later range deletion replaces
// them.
func (m *Memtable) RangeDels() rangedel.Spans {
	if p := m.rdels.Load(); p != nil {
		return *p
	}
	return nil
}

// Len returns the number of entries (versions, deletions and range
// deletions included).
func (m *Memtable) Len() int { return int(m.n.Load()) }

// Empty reports whether the memtable holds no entries.
func (m *Memtable) Empty() bool { return m.n.Load() == 0 }

// Deletions returns the number of entries that are deletions. Safe for
// concurrent use.
func (m *Memtable) Deletions() int { return int(m.dels.Load()) }

// ApproximateSize returns the memory the entries take: their keys,
// trailers and values, plus 72 bytes per entry for the index (which
// really takes 53 to 90, depending on insertion order).
func (m *Memtable) ApproximateSize() int64 { return m.size.Load() }
