// Package raftstore keeps the log and the stable state of
// github.com/hashicorp/raft in one shale database.
//
// A *Store is a raft.LogStore, a raft.StableStore and a
// raft.MonotonicLogStore:
//
//	store, err := raftstore.New(dir, nil) // nil: shale's default Options
//	if err != nil { ... }
//	defer store.Close()
//	r, err := raft.NewRaft(conf, fsm, store, store, snapshots, transport)
//
// # Durability
//
// StoreLogs writes its entries as one atomic batch with shale.Sync: when it
// returns they are on disk, all of them, or (after a crash during the call)
// none. Concurrent StoreLogs calls share one fsync (group commit) and are
// written in the order they were called. Set, SetUint64 and DeleteRange
// write with shale.Sync too.
//
// # The log has no gaps
//
// The store holds one contiguous run of indexes, [FirstIndex, LastIndex],
// which is what lets FirstIndex and LastIndex live in memory. StoreLogs
// accepts entries of consecutive indexes that start at LastIndex+1, or at
// any index when the log is empty; DeleteRange removes a prefix or a suffix
// of the log (or all of it) and refuses to cut a hole in the middle. Both
// refusals match ErrNonContiguous. hashicorp/raft appends and truncates only
// in these ways, and since the store reports IsMonotonic, raft removes the
// whole log after restoring a snapshot rather than relying on a gap.
//
// # Deleted entries
//
// DeleteRange writes one tombstone per entry. Until compaction drops them,
// the tombstones take space, but no read walks them: GetLog answers
// raft.ErrLogNotFound for any index outside [FirstIndex, LastIndex] from
// memory, without reading the database, and New finds the first entry
// with a single seek from a low-water mark that DeleteRange keeps (the
// index below which nothing is live).
//
// # Concurrency
//
// A *Store is safe for concurrent use by many goroutines.
package raftstore

import (
	"sync"

	"github.com/cockroachdb/errors"
	"github.com/hashicorp/raft"
	"github.com/shale-db/shale"
)

var (
	_ raft.LogStore          = (*Store)(nil)
	_ raft.StableStore       = (*Store)(nil)
	_ raft.MonotonicLogStore = (*Store)(nil)
)

// ErrNonContiguous is matched (errors.Is) by the error of a StoreLogs or
// DeleteRange that would leave a gap in the log.
var ErrNonContiguous = errors.New("raftstore: log would not be contiguous")

// Store is a raft log and stable store on one shale database. New opens
// one; Close releases it.
type Store struct {
	db       *shale.DB
	readOnly bool

	mu struct {
		sync.Mutex
		// cond is broadcast when writing or deleting becomes false and
		// when a group of appends completes.
		cond sync.Cond
		// log is what is durably stored: every entry of [first, last].
		log span
		// tail is log extended by the appends queued or being written:
		// the next append must start at tail.last+1.
		tail span
		// lowWater is the stored metaLowWater (0 when absent). Changed only
		// by the goroutine that holds writing or deleting.
		lowWater uint64
		// queue holds the appends waiting for the next group commit.
		queue []*appendRequest
		// writing is set while a group of appends is being written;
		// deleting while a DeleteRange is. At most one is set.
		writing, deleting bool
		closed            bool
	}
}

// span is a run of log indexes, [first, last], or no index at all.
type span struct {
	first, last uint64
	ok          bool // false: the log is empty and first, last mean nothing
}

// New opens (creating if needed) the store in dir. opts are shale's
// Options for the database (nil for the defaults); with opts.ReadOnly the
// store reads an existing database and every write fails.
func New(dir string, opts *shale.Options) (*Store, error) {
	db, err := shale.Open(dir, opts)
	if err != nil {
		return nil, errors.Wrapf(err, "raftstore: open %s", dir)
	}
	s := &Store{db: db, readOnly: opts != nil && opts.ReadOnly}
	s.mu.cond.L = &s.mu.Mutex
	if err := s.load(); err != nil {
		return nil, errors.CombineErrors(err, db.Close())
	}
	return s, nil
}

// load reads the low-water mark, finishes a DeleteRange that a crash
// interrupted, and finds the log's bounds with one seek from each end.
func (s *Store) load() error {
	low, err := s.getMeta(metaLowWater)
	if err != nil {
		return err
	}
	pending, err := s.pendingTruncation()
	if err != nil {
		return err
	}
	if pending.ok && !s.readOnly {
		if err := s.deleteEntries(pending.first, pending.last, nil, true); err != nil {
			return err
		}
	}
	it := s.db.NewIterator(&shale.IterOptions{
		LowerBound: logKey(low), UpperBound: logUpperBound,
	})
	var sp span
	if it.First() {
		sp.ok = true
		if sp.first, err = logKeyIndex(it.Key()); err == nil && it.Last() {
			sp.last, err = logKeyIndex(it.Key())
		}
	}
	if err := errors.CombineErrors(err, it.Close()); err != nil {
		return errors.Wrap(err, "raftstore: find the log's bounds")
	}
	if pending.ok && s.readOnly {
		// The entries of the unfinished deletion may be partly present;
		// a read-only store cannot delete them, so it leaves them out.
		sp, _ = sp.without(pending.first, pending.last)
	}
	s.mu.log, s.mu.tail, s.mu.lowWater = sp, sp, low
	return nil
}

// getMeta returns the uint64 meta record at key, or 0 if there is none.
func (s *Store) getMeta(key []byte) (uint64, error) {
	v, err := s.db.Get(key)
	if errors.Is(err, shale.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, errors.Wrapf(err, "raftstore: read %q", key)
	}
	return readUint64(v)
}

// pendingTruncation returns the range an interrupted DeleteRange was
// deleting, if any.
func (s *Store) pendingTruncation() (span, error) {
	v, err := s.db.Get(metaTruncation)
	if errors.Is(err, shale.ErrNotFound) {
		return span{}, nil
	}
	if err != nil {
		return span{}, errors.Wrap(err, "raftstore: read the pending truncation")
	}
	if len(v) != 16 {
		return span{}, errors.Wrapf(ErrCorrupt, "pending truncation of %d bytes", len(v))
	}
	first, _ := readUint64(v[:8])
	last, _ := readUint64(v[8:])
	return span{first: first, last: last, ok: true}, nil
}

// Close waits for the writes under way and closes the database. Every
// method called after Close returns an error matching shale.ErrClosed; a
// second Close returns it too.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		return shale.ErrClosed
	}
	s.mu.closed = true
	for s.mu.writing || s.mu.deleting || len(s.mu.queue) > 0 {
		s.mu.cond.Wait()
	}
	s.mu.Unlock()
	return s.db.Close()
}

// FirstIndex returns the index of the first entry of the log, or 0 if the
// log is empty. It reads no disk.
func (s *Store) FirstIndex() (uint64, error) {
	sp, err := s.bounds()
	if !sp.ok {
		return 0, err
	}
	return sp.first, err
}

// LastIndex returns the index of the last entry of the log, or 0 if the
// log is empty. It reads no disk.
func (s *Store) LastIndex() (uint64, error) {
	sp, err := s.bounds()
	if !sp.ok {
		return 0, err
	}
	return sp.last, err
}

// IsMonotonic reports true: the store keeps no gaps in its log (see the
// package doc), so raft must not rely on one after a snapshot restore.
func (s *Store) IsMonotonic() bool { return true }

func (s *Store) bounds() (span, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closed {
		return span{}, shale.ErrClosed
	}
	return s.mu.log, nil
}

// without returns sp with [lo, hi] removed, and whether the removal left
// it contiguous. The range is clipped to sp.
func (sp span) without(lo, hi uint64) (span, bool) {
	if !sp.ok || hi < sp.first || lo > sp.last {
		return sp, true
	}
	switch {
	case lo <= sp.first && hi >= sp.last:
		return span{}, true
	case lo <= sp.first:
		return span{first: hi + 1, last: sp.last, ok: true}, true
	case hi >= sp.last:
		return span{first: sp.first, last: lo - 1, ok: true}, true
	}
	return sp, false
}
