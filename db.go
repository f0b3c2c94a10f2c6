// Package shale is an embedded, persistent, ordered key-value store: a
// log-structured merge tree whose on-disk directory is LevelDB's, so that a
// database written by shale opens in goleveldb and LevelDB, and theirs open
// in shale.
//
// Writes go to a write-ahead log (package wal, LevelDB's record format)
// and then to an in-memory B-tree (the memtable); full memtables are
// flushed to sorted tables (package sstable) recorded in a MANIFEST, and
// Compact merges tables.
//
// A *DB and a *Snapshot are safe for concurrent use by many goroutines. A
// Batch, an Iterator or a Transaction is used by one goroutine at a time.
//
// # Range deletions and LevelDB
//
// A range deletion (DB.DeleteRange, Batch.DeleteRange) is a record LevelDB
// and goleveldb cannot read: they would show the keys it deletes. A
// directory whose logs or tables may hold one is marked (its MANIFEST
// names the comparator "shale.BytewiseComparator+RangeDeletions"), and both
// refuse to open it. The mark goes on, synced, before the first such WAL
// record is written, and comes off (a new MANIFEST without it) once
// compaction has dropped the last one; Metrics.Marked says which. A
// directory that never held a range deletion is LevelDB's byte for byte.
package shale

import (
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/shale-db/shale/internal/batchrepr"
	"github.com/shale-db/shale/internal/cache"
	"github.com/shale-db/shale/internal/manifest"
	"github.com/shale-db/shale/internal/tablecache"
	"github.com/shale-db/shale/internal/vfs"
	"github.com/shale-db/shale/memtable"
)

// DB is an open database. Open returns one; Close releases it.
type DB struct {
	dir  string
	opts Options
	fs   vfs.FS
	lock io.Closer
	// events delivers to Options.EventListener; nil without one.
	events *events
	// openEditMayBeDurable is set once Open's MANIFEST edit, which names
	// the tables and the log Open wrote, may be on disk: a failed Open
	// then keeps them.
	openEditMayBeDurable bool

	vs         *manifest.VersionSet
	blockCache *cache.Cache
	tables     *tablecache.Cache
	// tableRefs counts the DB's own reference to tables plus one per read
	// under way (a Get, or an open Iterator): the table cache closes when
	// it drops to zero, so that Close never pulls files from under a read.
	tableRefs atomic.Int32
	// memChunks holds the memtables' bytes outside the Go heap. The DB
	// holds a reference on mem and on each of imm (memtable.Ref), every
	// read one on each memtable it reads (acquire).
	memChunks *memtable.Chunks
	recovery  RecoveryReport
	// infoLog is the LOG file the default logger writes to, if any.
	infoLog io.Closer

	// visibleSeq is the sequence number of the newest write that readers
	// may see: every batch at or below it has been applied whole.
	visibleSeq atomic.Uint64
	commit     commitQueue
	// txns records, while transactions are open, what they are checked
	// against at Commit.
	txns *conflictLog

	mu struct {
		sync.Mutex
		// mem takes the writes; imm holds the full memtables waiting to
		// be flushed, oldest first (at most Options.MaxImmutableMemtables,
		// itself at most maxImmutables).
		mem *memtable.Memtable
		imm []*immMemtable
		// switched counts the memtables ever made immutable, flushedCount
		// those flushed since Open.
		switched, flushedCount int64
		// log is the WAL that mem's writes go to; nil when read-only.
		log    *logFile
		closed bool
		// bgErr, once set, fails every later write: a WAL write or sync,
		// a flush or a compaction failed, and the state on disk is not
		// what memory holds.
		bgErr error
		// bgCond is broadcast when background work makes progress (a
		// flush or compaction ends), when bgErr is set and on Close.
		bgCond sync.Cond
		// snapshots holds the sequence numbers of open snapshots.
		snapshots snapshotList
		// pendingOutputs holds the numbers of tables being written by a
		// flush or a compaction, not yet in a version, which
		// deleteObsoleteFiles must spare.
		pendingOutputs map[uint64]struct{}
		// flushes counts the flushes under way; compactions lists the
		// compactions under way; manual queues the manual compactions
		// waiting for their turn.
		flushes     int
		compactions []*compactionJob
		manual      []*manualCompaction
		// carryFlushing is set while the flush Open started for the
		// writes its logs carried runs: no compaction starts before it
		// ends (see Open).
		carryFlushing bool
		// cleanupPending is set while a cleanup started by cleanupSoon
		// has not begun.
		cleanupPending bool
		// slowdownDebt is the delay writes owe while level 0 is full
		// (see makeRoomLocked).
		slowdownDebt time.Duration
		// idle is set when the idle timer found no write since
		// writeGroups was idleSince (see idleDelay).
		idle      bool
		idleSince uint64
		// markedLogs holds the numbers of the WALs that may hold records
		// LevelDB cannot read (range deletions, compressed records): while
		// one is live (at or above the MANIFEST's log number), the
		// directory keeps its mark (see maybeUnmark).
		markedLogs map[uint64]struct{}
		// lsm is the picker's view of version lsmOf, the last one picked
		// from (compared by identity only).
		lsmOf *manifest.Version
		lsm   *versionLSM
		// stalls and counters feed Metrics.
		stalls   stallCounters
		counters bgCounters
	}
	// bgWG counts background goroutines: flushes, compactions, WAL
	// retirements. Close waits for it.
	bgWG sync.WaitGroup
	// closing is set by Close: a running manual compaction stops at its
	// next poll (compactionStop).
	closing atomic.Bool
	// subcompactions counts the parts of split compactions
	// (subcompactionBounds), for Metrics.
	subcompactions atomic.Uint64
	// l0Tables is the current version's level-0 table count, for flow
	// control on the write path without taking the version.
	l0Tables atomic.Int32
	// levelPressure is the deeper levels' share of the write slowdown
	// (see levelPressure); 0 for none.
	levelPressure atomic.Int32
	// writeGroups counts commit groups; idleArmed is set while the
	// idle timer runs (see idleDelay).
	writeGroups atomic.Uint64
	idleArmed   atomic.Bool
	// walBytes counts the batch bytes written to WALs since Open.
	walBytes atomic.Int64
	// walRecords and walSyncs count the WAL records commit groups wrote
	// and the syncs Sync writes made since Open.
	walRecords, walSyncs atomic.Int64
	// manifestSwitches counts the MANIFESTs replaced since Open.
	manifestSwitches atomic.Int64
	// deleteMu serializes deleteObsoleteFiles.
	deleteMu sync.Mutex
}

// MaxBatchSize is the largest encoded batch Write accepts: LevelDB's batch
// format gives keys and values 32-bit lengths, so a larger one could not be
// read back.
const MaxBatchSize uint64 = 1<<32 - 1

// Put sets key to value. Both are copied.
func (db *DB) Put(key, value []byte, d Durability) error {
	p := singles.Get().(*[]byte)
	b := Batch{repr: batchrepr.AppendPut((*p)[:0], key, value)}
	err := db.write(&b, d)
	keepSingle(p, b.repr)
	return err
}

// Delete removes key. Deleting a key that has no value is not an error.
func (db *DB) Delete(key []byte, d Durability) error {
	p := singles.Get().(*[]byte)
	b := Batch{repr: batchrepr.AppendDelete((*p)[:0], key)}
	err := db.write(&b, d)
	keepSingle(p, b.repr)
	return err
}

// DeleteRange deletes every key k with start <= k < end, as one small
// write however many keys that is: reads step over the range at once, and
// compaction drops the keys and gives their space back. A nil start is the
// smallest key; a nil end means no end. start >= end deletes nothing and
// returns nil. Snapshots taken before it still see the keys.
//
// The first range deletion marks the database so that LevelDB and
// goleveldb refuse to open it (they would show its deleted keys); the mark
// comes off once compaction has dropped every range deletion. See the
// package doc.
func (db *DB) DeleteRange(start, end []byte, d Durability) error {
	var b Batch
	b.DeleteRange(start, end)
	if b.Len() == 0 {
		if d != Sync && d != NoSync {
			return errors.Newf("shale: invalid durability %d", int(d))
		}
		return db.checkOpen()
	}
	return db.write(&b, d)
}

// Sync makes every write acknowledged so far durable, as if each had been
// written with Sync: it syncs the WAL that takes writes (each earlier one
// was synced before its successor took a write). It runs in the commit
// queue's turn, so no write is in flight meanwhile.
func (db *DB) Sync() error {
	if db.opts.ReadOnly {
		return db.readOnlyError()
	}
	return db.commit.exclusive(db, func() error {
		if err := db.checkOpen(); err != nil {
			return err
		}
		if err := db.bgErr(); err != nil {
			return err
		}
		db.mu.Lock()
		log := db.mu.log
		db.mu.Unlock()
		if err := log.sync(); err != nil {
			return db.setBackgroundError(err)
		}
		db.walSyncs.Add(1)
		return nil
	})
}

// singles holds the encodings of Put's and Delete's one-entry batches for
// reuse: when Write returns, the commit has copied the batch into the WAL
// and the memtable and keeps no reference to it. A new encoding per call
// was most of the garbage of a run of single puts (fillrandom: 137 of 267
// MB allocated, a collection every 8,000 puts).
var singles = sync.Pool{New: func() any { return new([]byte) }}

// maxSingleKept bounds the encodings kept, so that one large value does
// not stay allocated in the pool.
const maxSingleKept = 4 << 10

func keepSingle(p *[]byte, repr []byte) {
	if cap(repr) <= maxSingleKept {
		*p = repr
		singles.Put(p)
	}
}

// Write applies the batch atomically: after a crash the database holds all
// of it or none of it. An empty batch is a no-op. When Write returns nil the
// batch has reached the operating system (d == NoSync) or the disk
// (d == Sync), and it is visible to every read that starts afterwards.
func (db *DB) Write(b *Batch, d Durability) error {
	if b != nil {
		noteBatchSize(len(b.repr))
	}
	return db.write(b, d)
}

// write is Write, without teaching new batches its size: Put, Delete and
// DeleteRange go through it with batches of their own.
func (db *DB) write(b *Batch, d Durability) error {
	if d != Sync && d != NoSync {
		return errors.Newf("shale: invalid durability %d", int(d))
	}
	if db.opts.ReadOnly {
		return db.readOnlyError()
	}
	if b == nil || b.Len() == 0 {
		return db.checkOpen()
	}
	if uint64(len(b.repr)) > MaxBatchSize {
		return errors.Newf("shale: batch of %d bytes is over the limit of %d", len(b.repr), MaxBatchSize)
	}
	return markDiskFull(db.commit.write(db, b, d == Sync))
}

// Get returns a copy of the value of key, or an error matching ErrNotFound
// if it has none.
func (db *DB) Get(key []byte) ([]byte, error) {
	if err := db.checkOpen(); err != nil {
		return nil, err
	}
	return db.get(nil, key, nil)
}

// Has reports whether key has a value. It reads the value into a pooled
// buffer rather than returning a copy, so it allocates nothing for it.
func (db *DB) Has(key []byte) (bool, error) {
	if err := db.checkOpen(); err != nil {
		return false, err
	}
	return found(withValueBuf(func(buf []byte) ([]byte, error) { return db.get(buf, key, nil) }))
}

// GetAppend appends the value of key to dst and returns the extended
// slice, or dst and an error matching ErrNotFound if key has none. It is
// Get for a caller that keeps a buffer: with room in dst it allocates
// nothing (Get allocates the copy it returns).
func (db *DB) GetAppend(dst, key []byte) ([]byte, error) {
	if err := db.checkOpen(); err != nil {
		return dst, err
	}
	return db.get(dst, key, nil)
}

// readOnlyError is the error of a write to a read-only DB: ErrClosed once
// it is closed, ErrReadOnly before.
func (db *DB) readOnlyError() error {
	if err := db.checkOpen(); err != nil {
		return err
	}
	return ErrReadOnly
}

func (db *DB) bgErr() error {
	db.mu.Lock()
	defer db.mu.Unlock()
	return db.mu.bgErr
}

func (db *DB) checkOpen() error {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.mu.closed {
		return ErrClosed
	}
	return nil
}

// releaseTables drops one reference to the table cache, closing it with
// the last.
func (db *DB) releaseTables() error {
	if db.tableRefs.Add(-1) == 0 && db.tables != nil {
		return db.tables.Close()
	}
	return nil
}

// Recovery returns what Open found in the write-ahead logs it replayed.
func (db *DB) Recovery() RecoveryReport { return db.recovery }

// Close waits for writes, flushes and automatic compactions under way
// (counting those that Open's flush of the writes it carried held back),
// starts no more, interrupts a manual compaction (Compact returns
// ErrClosed and its unfinished outputs are deleted), and releases the
// directory. An automatic compaction merges one level's tables into their
// overlap below; waiting for it costs Close up to that one merge, and
// spares the next Open from starting it over. Data
// acknowledged by a write is already in the write-ahead log, so Close does
// not need to flush the memtable. Using the DB after Close returns
// ErrClosed; a second Close returns ErrClosed. Iterators still open keep
// reading the tables they hold until they are closed; but once the
// directory is opened again, the new DB may delete tables that
// compactions replaced under such an iterator, which then stops with
// ErrClosed. If background work had failed (writes were then refused),
// Close returns that error too.
func (db *DB) Close() error { return markDiskFull(db.close()) }

func (db *DB) close() error {
	db.mu.Lock()
	if db.mu.closed {
		db.mu.Unlock()
		return ErrClosed
	}
	db.mu.closed = true
	db.closing.Store(true)
	db.mu.bgCond.Broadcast()
	manual := db.mu.manual
	db.mu.manual = nil
	db.mu.Unlock()
	for _, m := range manual {
		m.done <- ErrClosed
	}

	// Wait for the commit in progress, if any, by taking a turn in the
	// queue: every later write sees closed and fails.
	db.commit.drain()
	db.bgWG.Wait()
	if !db.opts.ReadOnly && db.bgErr() == nil {
		db.deleteObsoleteFiles() // what compactions replaced under open iterators
	}
	var err error
	db.mu.Lock()
	// Memtables whose flushes failed: their retired WALs, durable and
	// closed since their retirement, are the only copy of their writes.
	for _, imm := range db.mu.imm {
		imm.mem.Unref()
	}
	db.mu.mem.Unref() // open iterators hold their own references
	if db.mu.log != nil {
		err = errors.CombineErrors(err, db.mu.log.close())
		db.mu.log = nil
	}
	err = errors.CombineErrors(err, db.mu.bgErr)
	db.mu.Unlock()
	err = errors.CombineErrors(err, db.releaseTables())
	// Blocks and memtables that open iterators hold stay mapped until
	// they are released.
	db.blockCache.Close()
	db.memChunks.Close()
	if db.vs != nil {
		err = errors.CombineErrors(err, db.vs.Close())
	}
	db.events.close() // every callback has returned before the lock goes
	err = errors.CombineErrors(err, db.closeInfoLog())
	err = errors.CombineErrors(err, db.lock.Close())
	return err
}
