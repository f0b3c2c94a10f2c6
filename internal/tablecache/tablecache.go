// Package tablecache keeps a bounded number of table files open: an LRU of
// open *sstable.Reader values, each with a reference count so that a table
// in use is never closed under its user.
//
// Use one Cache per database: Get returns a table's Reader and a release
// function to call when done with it; NewIter returns an iterator whose
// Close releases the table; Evict drops a table that is being deleted, and
// its blocks from the block cache.
//
// The bound is on the tables the cache holds, and so on the files open: a
// table the bound evicts while in use has its file closed at once, and its
// users read on through a file opened for each read (see tableFile), so an
// iterator over more tables than the bound does not need more files. A
// table Evict drops (it is being deleted) stays open until its last user
// releases it.
//
// A Cache is safe for concurrent use. Concurrent Gets of one table that is
// not open share a single open. A Get of a table that is open takes no
// lock: it finds the table in a sync.Map and takes a reference with a
// compare-and-swap, and the LRU gives such a table a second chance in
// place of moving it to the front (see acquire).
package tablecache

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/errors"
	"github.com/shale-db/shale/internal/cache"
	"github.com/shale-db/shale/internal/filename"
	"github.com/shale-db/shale/internal/iterator"
	"github.com/shale-db/shale/internal/vfs"
	"github.com/shale-db/shale/sstable"
)

// DefaultMaxOpen is the bound used when New is given maxOpen <= 0.
const DefaultMaxOpen = 1000

// ErrClosed is returned by Get and NewIter after Close.
var ErrClosed = errors.New("tablecache: closed")

// Cache is a bounded set of open tables. Create it with New.
type Cache struct {
	fs         vfs.FS
	dir        string
	blockCache *cache.Cache
	maxOpen    int

	// opened holds the tables of mu.tables that are open, by file number,
	// for Acquire's lock-free path. A table leaves it, under mu, before
	// it leaves mu.tables.
	opened sync.Map

	mu struct {
		sync.Mutex
		tables map[uint64]*table
		lru    table // sentinel: lru.next is the most recently used
		closed bool
	}
}

// table is one table file, open or being opened. refs counts the cache's
// own hold (while the table is in tables) plus one per user; the file is
// closed when refs drops to zero, and a table at zero is never referenced
// again (tryRef). used marks a table referenced through Cache.opened since
// the LRU last passed it. Fields other than refs, used, reader, file and
// err are guarded by Cache.mu; reader, file and err are written once
// before ready is closed and read only after.
type table struct {
	fileNum    uint64
	refs       atomic.Int32
	used       atomic.Bool
	deleted    bool // Evict was called: drop its blocks when it closes
	prev, next *table

	ready  chan struct{}
	reader *sstable.Reader
	file   *tableFile
	err    error
}

// New returns a cache of at most maxOpen tables (DefaultMaxOpen if
// maxOpen <= 0) of the database in dir on fs, whose readers share
// blockCache (which may be nil).
func New(fs vfs.FS, dir string, blockCache *cache.Cache, maxOpen int) *Cache {
	if maxOpen <= 0 {
		maxOpen = DefaultMaxOpen
	}
	c := &Cache{fs: fs, dir: dir, blockCache: blockCache, maxOpen: maxOpen}
	c.mu.tables = make(map[uint64]*table)
	c.mu.lru.prev, c.mu.lru.next = &c.mu.lru, &c.mu.lru
	return c
}

// Get returns the reader of table fileNum, whose size in bytes is size (as
// the MANIFEST records it), opening the file (NNNNNN.ldb, else
// NNNNNN.sst) if needed. The reader stays open until release is called;
// release may be called more than once, and only the first call counts.
// An error opening the table is returned, not cached: the next Get tries
// again.
func (c *Cache) Get(fileNum uint64, size int64) (r *sstable.Reader, release func(), err error) {
	r, ref, err := c.Acquire(fileNum, size)
	if err != nil {
		return nil, nil, err
	}
	var once sync.Once
	return r, func() { once.Do(ref.Release) }, nil
}

// Ref is a reference to an open table, from Acquire.
type Ref struct {
	c *Cache
	t *table
}

// Release gives the reference back. Call it once.
func (r Ref) Release() { r.c.unref(r.t) }

// Acquire is Get for callers that release once for certain: its Ref costs
// no allocation, where Get's function costs two (a point read in every
// table it looks in).
func (c *Cache) Acquire(fileNum uint64, size int64) (*sstable.Reader, Ref, error) {
	if v, ok := c.opened.Load(fileNum); ok {
		if t := v.(*table); t.tryRef() {
			if !t.used.Load() {
				t.used.Store(true)
			}
			return t.reader, Ref{c, t}, nil
		}
	}
	t, loader, err := c.acquire(fileNum)
	if err != nil {
		return nil, Ref{}, err
	}
	if loader {
		t.reader, t.file, t.err = c.open(fileNum, size)
		close(t.ready)
		if t.err == nil {
			c.mu.Lock()
			if c.mu.tables[fileNum] == t {
				c.opened.Store(fileNum, t)
			}
			c.mu.Unlock()
		}
	} else {
		<-t.ready
	}
	if t.err != nil {
		// Forget the failed open so that the next Get tries again.
		c.mu.Lock()
		if c.mu.tables[fileNum] == t {
			c.dropLocked(t)
		}
		c.deref(t) // nothing was opened: nothing to close
		c.mu.Unlock()
		return nil, Ref{}, t.err
	}
	return t.reader, Ref{c, t}, nil
}

// acquire finds or inserts the entry of fileNum and takes a reference on
// it; loader reports whether the caller inserted it and must open it.
func (c *Cache) acquire(fileNum uint64) (t *table, loader bool, err error) {
	var evicted []*table
	c.mu.Lock()
	if c.mu.closed {
		c.mu.Unlock()
		return nil, false, ErrClosed
	}
	t = c.mu.tables[fileNum]
	if t != nil {
		c.unlink(t)
	} else {
		t = &table{fileNum: fileNum, ready: make(chan struct{})}
		t.refs.Store(1)
		c.mu.tables[fileNum] = t
		loader = true
	}
	c.pushFront(t)
	t.refs.Add(1)
	var inUse []*table
	for passes := 0; len(c.mu.tables) > c.maxOpen; {
		v := c.mu.lru.prev
		if passes < len(c.mu.tables) && v.used.Swap(false) {
			// Used through opened since the LRU last passed it: a
			// second chance, as a move to the front would have been.
			c.unlink(v)
			c.pushFront(v)
			passes++
			continue
		}
		if c.dropLocked(v) != nil {
			evicted = append(evicted, v)
		} else {
			inUse = append(inUse, v)
		}
	}
	c.mu.Unlock()
	for _, v := range evicted {
		c.closeTable(v)
	}
	for _, v := range inUse {
		closeFileInUse(v)
	}
	return t, loader, nil
}

// closeFileInUse closes the file of a table evicted while in use, so that
// the bound holds however many tables are in use; its users read on
// through files opened for each read (see tableFile). A table still being
// opened is left alone: its loader's file is then open until released.
func closeFileInUse(t *table) {
	select {
	case <-t.ready:
	default:
		return
	}
	if t.file != nil {
		_ = t.file.Close()
	}
}

// open opens the file of table fileNum and reads its footer and index.
func (c *Cache) open(fileNum uint64, size int64) (*sstable.Reader, *tableFile, error) {
	name := filename.Make(c.dir, filename.Table, fileNum)
	f, err := c.fs.Open(name)
	if errors.Is(err, os.ErrNotExist) {
		// LevelDB before 1.14 named tables .sst.
		sst := filepath.Join(c.dir, fmt.Sprintf("%06d.sst", fileNum))
		if f2, err2 := c.fs.Open(sst); err2 == nil {
			f, err, name = f2, nil, sst
		}
	}
	if err != nil {
		return nil, nil, errors.Wrapf(err, "tablecache: open table %06d", fileNum)
	}
	tf := &tableFile{fs: c.fs, name: name, f: f}
	r, err := sstable.Open(tf, size, sstable.ReaderOptions{
		FileName: filepath.Base(name), FileNum: fileNum, Cache: c.blockCache,
	})
	if err != nil {
		_ = f.Close() // the open error is the one that matters
		return nil, nil, err
	}
	return r, tf, nil
}

// NewIter returns an iterator over table fileNum (see Get); its Close
// releases the table.
func (c *Cache) NewIter(fileNum uint64, size int64) (iterator.Iterator, error) {
	return c.NewIterIn(fileNum, size, nil)
}

// NewIterIn is NewIter for an iterator of scan group g (see
// sstable.ScanGroup); a nil g is none.
func (c *Cache) NewIterIn(fileNum uint64, size int64, g *sstable.ScanGroup) (iterator.Iterator, error) {
	r, ref, err := c.Acquire(fileNum, size)
	if err != nil {
		return nil, err
	}
	return &releasingIter{Iterator: r.NewIterIn(g), ref: ref}, nil
}

// NewScanIter is NewIter for a compaction's one pass over the table: the
// blocks it reads are not added to the block cache.
func (c *Cache) NewScanIter(fileNum uint64, size int64) (iterator.Iterator, error) {
	r, ref, err := c.Acquire(fileNum, size)
	if err != nil {
		return nil, err
	}
	return &releasingIter{Iterator: r.NewScanIter(), ref: ref}, nil
}

// Evict drops table fileNum from the cache and its blocks from the block
// cache; call it when the file is deleted. A reader in use stays open
// until released (and its blocks are dropped again then).
func (c *Cache) Evict(fileNum uint64) {
	var toClose *table
	c.mu.Lock()
	if t := c.mu.tables[fileNum]; t != nil {
		t.deleted = true
		toClose = c.dropLocked(t)
	}
	c.mu.Unlock()
	c.closeTable(toClose)
	c.blockCache.EvictFile(fileNum)
}

// Close drops every table the cache holds; tables in use close when they
// are released. Get and NewIter fail afterwards. Close returns the first
// error from closing a file; calling it again returns nil.
func (c *Cache) Close() error {
	var toClose []*table
	c.mu.Lock()
	if c.mu.closed {
		c.mu.Unlock()
		return nil
	}
	c.mu.closed = true
	for _, t := range c.mu.tables {
		if v := c.dropLocked(t); v != nil {
			toClose = append(toClose, v)
		}
	}
	c.mu.Unlock()
	var err error
	for _, t := range toClose {
		err = errors.CombineErrors(err, c.closeTable(t))
	}
	return err
}

// unref drops one reference to t, closing it if that was the last.
func (c *Cache) unref(t *table) {
	c.closeTable(c.deref(t))
}

// deref drops one reference to t and returns t if it must now be
// closed (by closeTable, outside the lock), else nil. The count is atomic:
// callers need not hold mu.
func (c *Cache) deref(t *table) *table {
	if t.refs.Add(-1) > 0 {
		return nil
	}
	return t
}

// tryRef takes a reference to t unless its count has reached zero (it is
// closed, or being closed), and reports whether it did.
func (t *table) tryRef() bool { return cache.TryIncrement(&t.refs) }

// closeTable closes the file of a table nobody references. t may be nil.
func (c *Cache) closeTable(t *table) error {
	if t == nil {
		return nil
	}
	var err error
	if t.file != nil {
		_ = t.reader.Close()
		err = t.file.Close()
	}
	if t.deleted {
		c.blockCache.EvictFile(t.fileNum)
	}
	return err
}

// dropLocked takes t out of the map and the LRU list and drops the
// cache's reference; it returns t if t must now be closed, else nil.
func (c *Cache) dropLocked(t *table) *table {
	c.opened.CompareAndDelete(t.fileNum, t)
	delete(c.mu.tables, t.fileNum)
	c.unlink(t)
	return c.deref(t)
}

func (c *Cache) unlink(t *table) {
	t.prev.next = t.next
	t.next.prev = t.prev
	t.prev, t.next = nil, nil
}

func (c *Cache) pushFront(t *table) {
	t.prev = &c.mu.lru
	t.next = c.mu.lru.next
	c.mu.lru.next.prev = t
	c.mu.lru.next = t
}

// releasingIter releases its table when closed, and gives its table
// iterator back for reuse (sstable.Recycle).
type releasingIter struct {
	iterator.Iterator
	ref    Ref
	closed bool
	err    error // Close's
}

// closedIter stands for a table iterator given back for reuse: a call
// after Close finds nothing rather than another reader's iterator.
var closedIter = iterator.Empty(nil)

var (
	_ iterator.Iterator = (*releasingIter)(nil)
	_ iterator.Scanner  = (*releasingIter)(nil)
)

// ScanRun implements iterator.Scanner for the table iterator.
func (it *releasingIter) ScanRun() int {
	if s, ok := it.Iterator.(iterator.Scanner); ok {
		return s.ScanRun()
	}
	return 0
}

// ContinueScan implements iterator.Scanner for the table iterator.
func (it *releasingIter) ContinueScan(n int) {
	if s, ok := it.Iterator.(iterator.Scanner); ok {
		s.ContinueScan(n)
	}
}

// Close closes the table iterator and releases the table; safe twice.
func (it *releasingIter) Close() error {
	if it.closed {
		return it.err
	}
	it.closed = true
	it.err = it.Iterator.Close()
	it.ref.Release()
	sstable.Recycle(it.Iterator)
	it.Iterator = closedIter
	return it.err
}
