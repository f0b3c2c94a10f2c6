package shale

import (
	"bytes"
	stderrors "errors"
	"io/fs"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/errors"
	"github.com/shale-db/shale/internal/dbiter"
	"github.com/shale-db/shale/internal/ikey"
	"github.com/shale-db/shale/internal/iterator"
	"github.com/shale-db/shale/internal/keyfilter"
	"github.com/shale-db/shale/internal/leveliter"
	"github.com/shale-db/shale/internal/manifest"
	"github.com/shale-db/shale/internal/merging"
	"github.com/shale-db/shale/internal/rangedel"
	"github.com/shale-db/shale/memtable"
	"github.com/shale-db/shale/sstable"
)

// readState is what a read needs: the memtables, a referenced version, and
// the sequence number visible when they were taken.
type readState struct {
	// mems[:n] are the memtable, then the immutable ones, newest first.
	mems [1 + maxImmutables]*memtable.Memtable
	n    int
	v    *manifest.Version
	seq  uint64
}

// memtables returns the memtables to read, newest first.
func (rs *readState) memtables() []*memtable.Memtable { return rs.mems[:rs.n] }

// beforeAcquire, if set (by tests only), runs as acquire begins.
var beforeAcquire func()

// acquire returns the current read state with a reference on its version,
// its memtables and the table cache; release gives them back. The memtables, the
// version and the sequence number are taken under one lock: a flush
// finishing in between cannot hide the immutable memtable's entries, and a
// compaction, which computes the oldest sequence number it must keep under
// the same lock, keeps what a read at this sequence number needs.
//
// A read of snapshot snap (nil for the latest state) reads at snap's
// sequence number, and snap must still be open: it is checked under the
// same lock, so that a snapshot closed meanwhile fails the read with
// ErrClosed rather than letting a compaction that starts after the Close
// drop versions the read then looks for.
func (db *DB) acquire(snap *Snapshot) (readState, error) {
	if beforeAcquire != nil {
		beforeAcquire()
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.mu.closed || snap != nil && !db.mu.snapshots.has(snap) {
		return readState{}, ErrClosed
	}
	db.tableRefs.Add(1)
	rs := readState{v: db.vs.Current(), seq: db.visibleSeq.Load()}
	if snap != nil {
		rs.seq = snap.seq
	}
	rs.mems[0], rs.n = db.mu.mem, 1
	for i := len(db.mu.imm) - 1; i >= 0; i-- {
		rs.mems[rs.n] = db.mu.imm[i].mem
		rs.n++
	}
	for _, m := range rs.memtables() {
		m.Ref()
	}
	return rs, nil
}

// release gives back what acquire took. A read that held a version no
// longer current may have held the last reference to tables a compaction
// replaced: they are deleted now, not at the next flush.
func (db *DB) release(rs readState) {
	for _, m := range rs.memtables() {
		m.Unref()
	}
	stale := !db.vs.IsCurrent(rs.v)
	rs.v.Unref()
	db.releaseTables()
	if stale {
		db.cleanupSoon()
	}
}

// cleanupSoon deletes obsolete files in the background, unless a cleanup
// is already on its way or the DB is closed or read-only.
func (db *DB) cleanupSoon() {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.mu.closed || db.opts.ReadOnly || db.mu.cleanupPending {
		return
	}
	db.mu.cleanupPending = true
	db.bgWG.Add(1)
	go func() {
		defer db.bgWG.Done()
		db.mu.Lock()
		db.mu.cleanupPending = false
		db.mu.Unlock()
		db.deleteObsoleteFiles()
	}()
}

// get appends to dst the newest value of key that snap sees (nil: the
// newest visible) and returns the result; a nil dst gets a new slice of
// the value's length, as Get promises. On an error it returns dst as it was.
func (db *DB) get(dst, key []byte, snap *Snapshot) ([]byte, error) {
	rs, err := db.acquire(snap)
	if err != nil {
		return dst, err
	}
	defer db.release(rs)
	seq := rs.seq
	// del is the newest range deletion seen so far that covers key and
	// is visible at seq: a version below it, in this source or a later
	// one, is deleted. Every version in a later source is older than it
	// (the LSM's order: memtables over level 0 over level 1 and so on,
	// a table's bounds covering its range deletions), so once a source
	// has none above it, the search is over.
	var del uint64
	for _, m := range rs.memtables() {
		if rd := m.RangeDels(); rd != nil {
			del = max(del, rd.DeletedAt(key, seq))
		}
		v, vseq, found, deleted := m.GetEntry(key, seq)
		switch {
		case (found || deleted) && vseq < del, deleted:
			return dst, ErrNotFound
		case found:
			return appendValue(dst, v), nil
		case del > 0:
			return dst, ErrNotFound
		}
	}
	var buf [8]*manifest.FileMeta
	kh := keyHash{key: key}
	for _, f := range rs.v.AppendL0Candidates(buf[:0], key) {
		if v, done, err := db.getFromTable(dst, f, &kh, seq, &del); done {
			return v, err
		}
	}
	var sb [64]byte // keeps a short key's seek key off the heap
	seek := ikey.Append(sb[:0], key, seq, ikey.KindSeek)
	for level := 1; level < manifest.NumLevels; level++ {
		f := rs.v.FindFile(level, seek)
		if f == nil {
			continue
		}
		if v, done, err := db.getFromTable(dst, f, &kh, seq, &del); done {
			return v, err
		}
	}
	return dst, ErrNotFound
}

// keyHash is a Get's key and its keyfilter.Hash, computed once, at the
// first table whose key filter asks.
type keyHash struct {
	key    []byte
	hash   uint64
	hashed bool
}

func (k *keyHash) get() uint64 {
	if !k.hashed {
		k.hash, k.hashed = keyfilter.Hash(k.key), true
	}
	return k.hash
}

// testHookGetFromTable, if set, is called with every table a Get reads
// (not those its key filter skips).
var testHookGetFromTable atomic.Pointer[func(*manifest.FileMeta)]

// valueBufs holds the buffers Has reads values into; one grown past
// maxValueBuf is dropped rather than kept.
var valueBufs = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}

const maxValueBuf = 64 << 10

// withValueBuf runs read with a pooled buffer and returns its error; the
// value read is discarded.
func withValueBuf(read func(buf []byte) ([]byte, error)) error {
	bp := valueBufs.Get().(*[]byte)
	v, err := read((*bp)[:0])
	if cap(v) <= maxValueBuf {
		*bp = v[:0]
	}
	valueBufs.Put(bp)
	return err
}

// found turns a read's error into Has's answer: ErrNotFound is false.
func found(err error) (bool, error) {
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, ErrNotFound):
		return false, nil
	}
	return false, err
}

// appendValue is append(dst, v...), but a nil dst gets a slice of exactly
// v's length and never nil: Get's caller owns a value as long as it is,
// and an empty value is not a missing one.
func appendValue(dst, v []byte) []byte {
	if dst == nil {
		return append(make([]byte, 0, len(v)), v...)
	}
	return append(dst, v...)
}

// getFromTable looks key up in one table. done reports whether the search
// is over: the table held a version of key (a value, or ErrNotFound for a
// deletion or a version below a range deletion), or reading failed. del
// is the newest range deletion covering key seen so far, raised by the
// table's own.
//
// A table flushed from a memtable that kept a filter of its keys (level 0's,
// see FileMeta.KeyFilter) is skipped, unread, when the filter rules key
// out: then it holds no version of key, and no range deletion either.
func (db *DB) getFromTable(dst []byte, f *manifest.FileMeta, kh *keyHash, seq uint64, del *uint64) (v []byte, done bool, err error) {
	if kf := f.KeyFilter(); kf != nil && !f.RangeDels && !kf.MayContainHash(kh.get()) {
		return notInTable(dst, *del)
	}
	if hook := testHookGetFromTable.Load(); hook != nil {
		(*hook)(f)
	}
	key := kh.key
	r, ref, err := db.tables.Acquire(f.Num, f.Size)
	if err != nil {
		return dst, true, db.tableOpenError(f, err)
	}
	defer ref.Release()
	if f.RangeDels {
		*del = max(*del, r.RangeDels().DeletedAt(key, seq))
	}
	// GetEntry writes the value over its dst: give it dst's spare room.
	val, vseq, kind, found, err := r.GetEntry(key, seq, dst[len(dst):])
	switch {
	case err != nil:
		return dst, true, markCorruption(err)
	case !found:
		return notInTable(dst, *del)
	case kind == ikey.KindDelete || vseq < *del:
		return dst, true, ErrNotFound
	case dst == nil && val == nil:
		return []byte{}, true, nil // an empty value, found: not nil
	case len(dst) == 0:
		return val, true, nil
	case len(val) <= cap(dst)-len(dst):
		return dst[:len(dst)+len(val)], true, nil // written in dst's room
	}
	return append(dst, val...), true, nil
}

// notInTable is getFromTable's answer for a table without a version of
// the key: the search goes on below, unless a range deletion seen so far
// (del) covers the key, since what lies below is older than it.
func notInTable(dst []byte, del uint64) ([]byte, bool, error) {
	if del > 0 {
		return dst, true, ErrNotFound
	}
	return dst, false, nil
}

// newIterator builds the iterator stack for snap (nil: the newest visible
// state): a merging iterator over
// the memtables, each level-0 table and one level iterator per deeper
// level, under a dbiter that hides sequence numbers and deletions. The
// stack comes from iterAllocPool and goes back to it at Close.
func (db *DB) newIterator(o *IterOptions, snap *Snapshot) *Iterator {
	rs, err := db.acquire(snap)
	if err != nil {
		return &Iterator{err: err, closed: true}
	}
	seq := rs.seq
	var lower, upper []byte
	if o != nil {
		lower, upper = o.LowerBound, o.UpperBound
	}
	a := iterAllocPool.Get().(*iterAlloc)
	a.db, a.rs = db, rs
	iters := a.iters[:0]
	var rd rangeDelCollector
	for _, m := range rs.memtables() {
		// An empty memtable has nothing at seq: whatever a write adds
		// later has a larger sequence number than any the iterator sees.
		if !m.Empty() {
			iters = append(iters, m.NewIter())
			rd.add(m.RangeDels())
		}
	}
	rd.endClass(len(iters))
	l0 := rs.v.Overlaps(0, lower, upper)
	for _, run := range sortedRuns(l0) {
		iters = append(iters, runIter(run, a.open))
	}
	withDels := rs.v.HasRangeDels()
	if withDels {
		rd.addTables(db, l0)
	}
	rd.endClass(len(iters))
	for level := 1; level < manifest.NumLevels; level++ {
		files := rs.v.Overlaps(level, lower, upper)
		if len(files) > 0 {
			l := &a.levels[level]
			l.Init(files, fileBounds, a.open)
			iters = append(iters, l)
			if withDels {
				rd.addTables(db, files)
				rd.endClass(len(iters))
			}
		}
	}
	a.iters = iters
	a.merge.Init(iters...)
	a.dbi.Init(&a.merge, seq, lower, upper)
	if rd.err != nil {
		a.free()
		return &Iterator{err: rd.err, closed: true}
	}
	if all := rd.all(); all != nil {
		a.dbi.SetRangeDels(all, rd.classes, tablesFloor(rs.v, lower, upper))
	}
	return &Iterator{it: &a.dbi, alloc: a}
}

// tablesFloor returns the smallest user key of the tables an iterator
// within [lower, upper) reads (nil if none).
func tablesFloor(v *manifest.Version, lower, upper []byte) []byte {
	var floor []byte
	for level := range manifest.NumLevels {
		files := v.Overlaps(level, lower, upper)
		if level > 0 && len(files) > 0 {
			files = files[:1] // sorted: the first holds the level's smallest
		}
		for _, f := range files {
			if k := ikey.UserKey(f.Smallest); floor == nil || bytes.Compare(k, floor) < 0 {
				floor = k
			}
		}
	}
	return floor
}

// rangeDelCollector gathers an iterator's range deletions by source class
// (see dbiter.RangeDelClass): the spans added since the last endClass
// form a class whose deletions let the sources from index next on skip.
type rangeDelCollector struct {
	cur     []rangedel.Spans
	classes []dbiter.RangeDelClass
	err     error
}

func (c *rangeDelCollector) add(s rangedel.Spans) {
	if len(s) > 0 {
		c.cur = append(c.cur, s)
	}
}

// addTables adds the range deletions of the tables that have some.
func (c *rangeDelCollector) addTables(db *DB, files []*manifest.FileMeta) {
	for _, f := range files {
		if !f.RangeDels || c.err != nil {
			continue
		}
		r, ref, err := db.tables.Acquire(f.Num, f.Size)
		if err != nil {
			c.err = db.tableOpenError(f, err)
			return
		}
		c.add(r.RangeDels()) // on the Go heap: valid after the release
		ref.Release()
	}
}

// endClass closes the class under way: its deletions may skip the
// sources from index next on.
func (c *rangeDelCollector) endClass(next int) {
	if len(c.cur) > 0 {
		c.classes = append(c.classes, dbiter.RangeDelClass{Spans: rangedel.Merge(c.cur...), SkipFrom: next})
		c.cur = c.cur[:0]
	}
}

// all returns every class's deletions fragmented together (nil if none).
func (c *rangeDelCollector) all() rangedel.Spans {
	if len(c.classes) == 0 {
		return nil
	}
	lists := make([]rangedel.Spans, len(c.classes))
	for i, cl := range c.classes {
		lists[i] = cl.Spans
	}
	return rangedel.Merge(lists...)
}

// iterAlloc is the memory of one Iterator's stack, kept in a pool for the
// next: db_bench's seekrandom makes an iterator for every seek, and making
// each anew took 24 allocations (2.3 KB) and a sixth of its time with the
// collector's share.
type iterAlloc struct {
	db     *DB
	rs     readState
	dbi    dbiter.Iter
	merge  merging.Iter
	iters  []iterator.Iterator // the merging iterator's children
	levels [manifest.NumLevels]leveliter.Iter[*manifest.FileMeta]
	// The table iterators count the blocks they read in order as one
	// scan: a long scan over several tables at once stops filling the
	// block cache as soon as a scan of one table would.
	group sstable.ScanGroup
	open  func(*manifest.FileMeta) (iterator.Iterator, error) // openTable, bound once
}

var iterAllocPool = sync.Pool{New: func() any {
	a := new(iterAlloc)
	a.open = a.openTable
	return a
}}

// openTable opens an iterator over one table of the scan.
func (a *iterAlloc) openTable(f *manifest.FileMeta) (iterator.Iterator, error) {
	return a.db.openTableIn(f, &a.group)
}

// free releases what the stack read and returns it to the pool, once
// the stack is closed.
func (a *iterAlloc) free() {
	a.db.release(a.rs)
	a.merge.Clear()
	clear(a.iters)
	a.iters = a.iters[:0]
	clear(a.levels[:])
	a.db, a.rs = nil, readState{}
	a.group.Reset()
	iterAllocPool.Put(a)
}

// sortedRuns partitions level-0 files into runs whose files do not share a
// user key, each in key order, so that each run can be read one table at a
// time like a deeper level. The merging iterator orders entries by internal
// key whatever source they come from, so grouping changes no result; it
// saves seeking every table when level 0 holds disjoint ranges, as
// sequential writes leave it.
func sortedRuns(files []*manifest.FileMeta) [][]*manifest.FileMeta {
	sorted := slices.Clone(files)
	slices.SortFunc(sorted, func(a, b *manifest.FileMeta) int { return ikey.Compare(a.Smallest, b.Smallest) })
	var runs [][]*manifest.FileMeta
	for _, f := range sorted {
		placed := false
		for i, run := range runs {
			last := run[len(run)-1]
			if bytes.Compare(ikey.UserKey(last.Largest), ikey.UserKey(f.Smallest)) < 0 {
				runs[i] = append(run, f)
				placed = true
				break
			}
		}
		if !placed {
			runs = append(runs, []*manifest.FileMeta{f})
		}
	}
	return runs
}

func fileBounds(f *manifest.FileMeta) (smallest, largest []byte) { return f.Smallest, f.Largest }

// openTable opens an iterator over one table.
func (db *DB) openTable(f *manifest.FileMeta) (iterator.Iterator, error) {
	return db.openTableIn(f, nil)
}

// openTableIn opens an iterator over one table for a scan of group g.
func (db *DB) openTableIn(f *manifest.FileMeta, g *sstable.ScanGroup) (iterator.Iterator, error) {
	it, err := db.tables.NewIterIn(f.Num, f.Size, g)
	if err != nil {
		return nil, db.tableOpenError(f, err)
	}
	return it, nil
}

// tableOpenError marks a table the MANIFEST names but that is missing as
// corruption, as it marks damage inside one; after Close, as ErrClosed
// (see goneAfterClose).
func (db *DB) tableOpenError(f *manifest.FileMeta, err error) error {
	if gone := db.goneAfterClose(err); gone != nil {
		return gone
	}
	if stderrors.Is(err, fs.ErrNotExist) {
		return errors.Wrapf(ErrCorruption, "shale: table %06d is missing: %v", f.Num, err)
	}
	return markCorruption(err)
}

// goneAfterClose returns the error of an iterator left open across Close
// that finds a table it pins gone from disk (err matches fs.ErrNotExist),
// or nil if err is not that. Close released the directory, and a later
// Open of it deletes the tables its own MANIFEST does not name, those that
// compactions replaced under the iterator among them. That is no damage:
// the iterator reports ErrClosed, as any use of a closed DB does, not
// ErrCorruption, which would send the user to Repair a sound database.
func (db *DB) goneAfterClose(err error) error {
	if !db.closing.Load() || !stderrors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return errors.Wrapf(ErrClosed, "shale: iterator used after Close: a table it reads was deleted "+
		"(the database was opened again?): %v", err)
}

// runIter reads a run of disjoint tables in key order, with open, one
// table at a time; a run of one is that table's iterator. A failure to
// open a lone table becomes an iterator that reports it.
func runIter(run []*manifest.FileMeta, open func(*manifest.FileMeta) (iterator.Iterator, error)) iterator.Iterator {
	if len(run) > 1 {
		return leveliter.New(run, fileBounds, open)
	}
	it, err := open(run[0])
	if err != nil {
		return iterator.Empty(err)
	}
	return it
}
