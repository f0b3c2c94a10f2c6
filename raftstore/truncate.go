package raftstore

import (
	"github.com/cockroachdb/errors"
	"github.com/shale-db/shale"
)

// truncateChunk is the most tombstones one batch of a DeleteRange holds,
// so that deleting a million entries never builds a batch (and memtable
// burst) of a million.
const truncateChunk = 16 << 10

// DeleteRange deletes the entries with indexes in [from, to]. Indexes that
// are not in the log are ignored. The range must cover a prefix or a
// suffix of the log, or all of it; one strictly inside the log would leave
// a gap and is refused with an error matching ErrNonContiguous.
//
// When it returns the deletion is on disk (shale.Sync). GetLog of a deleted
// index returns raft.ErrLogNotFound at once, from memory; the tombstones
// stay on disk until compaction drops them, and no read walks them.
func (s *Store) DeleteRange(from, to uint64) error {
	if s.readOnly {
		return shale.ErrReadOnly
	}
	if from > to {
		return nil
	}
	s.mu.Lock()
	for !s.mu.closed && (s.mu.writing || s.mu.deleting || len(s.mu.queue) > 0) {
		s.mu.cond.Wait()
	}
	if s.mu.closed {
		s.mu.Unlock()
		return shale.ErrClosed
	}
	old := s.mu.log
	after, ok := old.without(from, to)
	if !ok {
		s.mu.Unlock()
		return errors.Wrapf(ErrNonContiguous,
			"DeleteRange(%d, %d) would cut a hole in the log [%d, %d]", from, to, old.first, old.last)
	}
	if after == old {
		s.mu.Unlock()
		return nil
	}
	s.mu.deleting = true
	s.mu.Unlock()

	lo, hi := max(from, old.first), min(to, old.last)
	var lowWater []byte
	if lo == old.first {
		// A prefix, or everything: nothing below hi+1 stays live.
		lowWater = appendUint64(nil, hi+1)
	}
	err := s.deleteEntries(lo, hi, lowWater, false)

	s.mu.Lock()
	s.mu.deleting = false
	if err == nil {
		s.mu.log, s.mu.tail = after, after
		if lowWater != nil {
			s.mu.lowWater = hi + 1
		}
	}
	s.mu.cond.Broadcast()
	s.mu.Unlock()
	return err
}

// deleteEntries deletes the log keys [lo, hi], and sets the low-water mark
// to lowWater if it is not nil, in batches of truncateChunk tombstones.
// If there is more than one batch, the first also records the range in
// metaTruncation and the last removes it, so that a crash in between
// leaves a deletion that New finishes (with resume set: its last batch
// removes the record in any case). The first and last batches are Sync;
// when it returns, the deletion is on disk.
func (s *Store) deleteEntries(lo, hi uint64, lowWater []byte, resume bool) error {
	// A batch is cut at truncateChunk entries, puts and deletes alike, so
	// the low-water mark counts: 16,384 tombstones and the mark are two
	// batches, which without the record a crash could leave half done.
	extra := uint64(0)
	if lowWater != nil {
		extra = 1
	}
	multi := hi-lo+1+extra > truncateChunk
	var b shale.Batch
	if lowWater != nil {
		b.Put(metaLowWater, lowWater)
	}
	if multi && !resume {
		b.Put(metaTruncation, appendUint64(appendUint64(nil, lo), hi))
	}
	key := make([]byte, 0, logKeyLen)
	first := true
	for i := lo; ; i++ {
		key = appendLogKey(key[:0], i)
		b.Delete(key)
		if i != hi && b.Len() < truncateChunk {
			continue
		}
		d := shale.NoSync
		if first || i == hi {
			d = shale.Sync
		}
		if i == hi && (multi || resume) {
			b.Delete(metaTruncation)
		}
		if err := writeBatch(s.db, &b, d); err != nil {
			return errors.Wrapf(err, "raftstore: delete log entries %d-%d", lo, hi)
		}
		if i == hi {
			return nil
		}
		b.Reset()
		first = false
	}
}

// writeBatch is how deleteEntries writes; tests count its batches.
var writeBatch = func(db *shale.DB, b *shale.Batch, d shale.Durability) error { return db.Write(b, d) }
