package raftstore

import (
	"math"

	"github.com/cockroachdb/errors"
	"github.com/shale-db/shale"
)

// DeleteRange deletes the entries with indexes in [from, to]. Indexes that
// are not in the log are ignored. The range must cover a prefix or a
// suffix of the log, or all of it; one strictly inside the log would leave
// a gap and is refused with an error matching ErrNonContiguous.
//
// When it returns the deletion is on disk (shale.Sync). It is one write
// however many entries it deletes: a range deletion (shale.DB.DeleteRange),
// with the low-water mark in the same batch. GetLog of a deleted index
// returns raft.ErrLogNotFound at once, from memory; compaction drops the
// entries and gives their space back. While the range deletion is on
// disk, goleveldb and LevelDB refuse the directory (see shale's README).
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
// to lowWater if it is not nil, in one synced batch: a range deletion and
// the mark, atomic. With resume, the batch also removes metaTruncation,
// the record an older version of this package left while it deleted a
// range in several batches, which New finishes.
func (s *Store) deleteEntries(lo, hi uint64, lowWater []byte, resume bool) error {
	var b shale.Batch
	if lowWater != nil {
		b.Put(metaLowWater, lowWater)
	}
	end := []byte{prefixLog + 1} // past every log key
	if hi < math.MaxUint64 {
		end = logKey(hi + 1)
	}
	b.DeleteRange(logKey(lo), end)
	if resume {
		b.Delete(metaTruncation)
	}
	if err := writeBatch(s.db, &b, shale.Sync); err != nil {
		return errors.Wrapf(err, "raftstore: delete log entries %d-%d", lo, hi)
	}
	return nil
}

// writeBatch is how deleteEntries writes; tests count its batches.
var writeBatch = func(db *shale.DB, b *shale.Batch, d shale.Durability) error { return db.Write(b, d) }
