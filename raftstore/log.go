package raftstore

import (
	"math"

	"github.com/cockroachdb/errors"
	"github.com/hashicorp/raft"
	"github.com/shale-db/shale"
)

// GetLog reads the entry at index into log. An index outside
// [FirstIndex, LastIndex] returns raft.ErrLogNotFound without reading the
// database. Data and Extensions are freshly allocated for each call.
func (s *Store) GetLog(index uint64, log *raft.Log) error {
	sp, err := s.bounds()
	if err != nil {
		return err
	}
	if !sp.ok || index < sp.first || index > sp.last {
		return raft.ErrLogNotFound
	}
	v, err := s.db.Get(logKey(index))
	if errors.Is(err, shale.ErrNotFound) {
		// Deleted by a DeleteRange that ran after the bounds were read.
		return raft.ErrLogNotFound
	}
	if err != nil {
		return errors.Wrapf(err, "raftstore: read log entry %d", index)
	}
	if err := decodeLog(v, log); err != nil {
		return errors.Wrapf(err, "raftstore: log entry %d", index)
	}
	if log.Index != index {
		return errors.Wrapf(ErrCorrupt, "log entry %d holds index %d", index, log.Index)
	}
	return nil
}

// StoreLog stores one entry; see StoreLogs.
func (s *Store) StoreLog(log *raft.Log) error {
	return s.StoreLogs([]*raft.Log{log})
}

// appendRequest is one StoreLogs call waiting for a group commit.
type appendRequest struct {
	first, last uint64
	// buf holds the encoded entries back to back; ends[i] is the end of
	// entry first+i in buf.
	buf  []byte
	ends []int
	done bool
	err  error // valid once done
}

// StoreLogs stores the entries, which must have consecutive indexes
// starting at LastIndex+1 (or anywhere when the log is empty), as one
// atomic batch written with shale.Sync. Entries that would leave a gap are
// refused with an error matching ErrNonContiguous, and nothing is written.
//
// Concurrent calls are written in the order they took their place in the
// log, several to one batch and one fsync (group commit); a call fails if
// one queued before it failed.
func (s *Store) StoreLogs(logs []*raft.Log) error {
	if len(logs) == 0 {
		return nil
	}
	if s.readOnly {
		return shale.ErrReadOnly
	}
	req, err := encodeAppend(logs)
	if err != nil {
		return err
	}
	s.mu.Lock()
	for s.mu.deleting {
		s.mu.cond.Wait()
	}
	if err := s.enqueueLocked(req); err != nil {
		s.mu.Unlock()
		return err
	}
	for !req.done && s.mu.writing {
		s.mu.cond.Wait()
	}
	if !req.done {
		// No group is being written, so req is still queued: write the
		// queue, req and all.
		s.commitQueueLocked()
	}
	s.mu.Unlock()
	return req.err
}

// encodeAppend checks that logs have consecutive indexes and encodes them.
func encodeAppend(logs []*raft.Log) (*appendRequest, error) {
	req := &appendRequest{first: logs[0].Index, last: logs[len(logs)-1].Index}
	size := 0
	for i, l := range logs {
		if l.Index == math.MaxUint64 {
			return nil, errors.Newf("raftstore: log index %d is out of range", l.Index)
		}
		if i > 0 && l.Index != logs[i-1].Index+1 {
			return nil, errors.Wrapf(ErrNonContiguous,
				"StoreLogs: index %d follows %d", l.Index, logs[i-1].Index)
		}
		size += encodedLogLen(l)
	}
	req.buf = make([]byte, 0, size)
	req.ends = make([]int, len(logs))
	for i, l := range logs {
		req.buf = appendLog(req.buf, l)
		req.ends[i] = len(req.buf)
	}
	return req, nil
}

// enqueueLocked queues req if it extends the log without a gap.
func (s *Store) enqueueLocked(req *appendRequest) error {
	if s.mu.closed {
		return shale.ErrClosed
	}
	if t := s.mu.tail; t.ok && req.first != t.last+1 {
		return errors.Wrapf(ErrNonContiguous,
			"StoreLogs: entries %d-%d do not follow the last index %d", req.first, req.last, t.last)
	}
	if !s.mu.tail.ok {
		s.mu.tail = span{first: req.first, ok: true}
	}
	s.mu.tail.last = req.last
	s.mu.queue = append(s.mu.queue, req)
	return nil
}

// commitQueueLocked writes every queued append as one Sync batch, with
// s.mu released during the write, and completes them. It is called with
// s.mu held and writing false, and returns with s.mu held.
func (s *Store) commitQueueLocked() {
	group := s.mu.queue
	s.mu.queue = nil
	s.mu.writing = true
	var b shale.Batch
	lowWater := s.mu.lowWater
	if !s.mu.log.ok && group[0].first < lowWater {
		// A new log that starts below the low-water mark lowers it.
		lowWater = group[0].first
		b.Put(metaLowWater, appendUint64(nil, lowWater))
	}
	s.mu.Unlock()

	key := make([]byte, 0, logKeyLen)
	for _, req := range group {
		start := 0
		for i, end := range req.ends {
			key = appendLogKey(key[:0], req.first+uint64(i))
			b.Put(key, req.buf[start:end])
			start = end
		}
	}
	err := s.db.Write(&b, shale.Sync)

	s.mu.Lock()
	s.mu.writing = false
	if err != nil {
		err = errors.Wrap(err, "raftstore: StoreLogs")
		// Appends queued meanwhile were placed after the failed ones:
		// they fail too, and the tail returns to what is stored.
		group = append(group, s.mu.queue...)
		s.mu.queue = nil
		s.mu.tail = s.mu.log
	} else {
		s.mu.lowWater = lowWater
		if !s.mu.log.ok {
			s.mu.log = span{first: group[0].first, ok: true}
		}
		s.mu.log.last = group[len(group)-1].last
	}
	for _, req := range group {
		req.done, req.err = true, err
	}
	s.mu.cond.Broadcast()
}
