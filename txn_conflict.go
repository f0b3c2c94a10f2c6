package shale

import (
	"bytes"
	"cmp"
	"hash/maphash"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/shale-db/shale/internal/batchrepr"
	"github.com/shale-db/shale/internal/ikey"
)

// conflictLog is what Commit checks a transaction against: while any
// transaction is open, the commit path records every key it writes, with
// its sequence number, and drops what no open transaction can conflict
// with (keys written at or before the oldest open transaction's start).
//
// With no transaction open, a commit group pays an atomic store and an
// atomic load for it (see admitFast), and records nothing.
//
// A transaction conflicts when a key written after it began is one it read
// with Get (looked up by 64-bit fingerprint: two keys share one with
// probability 2^-64, which can only refuse a commit), or lies in a span
// one of its iterators passed over (each key written since it began
// looked up in its sorted spans, exactly), or when a range deletion
// committed since covers a key it read or overlaps a span. Only a
// transaction that iterated, or read while range deletions were recorded,
// pays for that scan; the write path pays a map insertion and an append a
// key.
type conflictLog struct {
	// open counts the transactions begun and not yet ended; the commit
	// path reads it without the lock.
	open atomic.Int64
	// pending is the first sequence number of the last commit group
	// admitted while open was 0 (0: none): begin waits until the group is
	// published (the visible sequence number reaches it), since its
	// writes, unrecorded, must be visible to a transaction that begins
	// after them.
	pending atomic.Uint64

	seed maphash.Seed
	// fpMask keeps the fingerprint's bits: all of them, but for the test
	// that measures the collision rate with fewer.
	fpMask uint64

	mu     sync.Mutex
	starts map[uint64]int    // start sequence number → open transactions
	byFP   map[uint64]uint64 // key fingerprint → newest sequence number
	fifo   []writeMark       // recorded writes in sequence order; fifo[head:] live
	head   int
	bytes  int64 // the estimated memory of what is recorded
	limit  int64
	// horizon is the sequence number of the newest write dropped to keep
	// within limit: a transaction that began before it can no longer be
	// checked, and fails to commit.
	horizon uint64
	// ranges counts the range deletions in fifo[head:].
	ranges int
	// conflicts and trimmed feed Metrics.
	conflicts, trimmed int64
}

// writeMark is one recorded write: key at seq, or, if isRange, the range
// deletion of [key, end).
type writeMark struct {
	key, end string
	fp       uint64
	seq      uint64
	isRange  bool
}

// markOverhead estimates the memory one recorded key costs besides its
// bytes: its entries in the fingerprint map and the queue.
const markOverhead = 96

// DefaultTxnConflictMemory is Options.TxnConflictMemory's default.
const DefaultTxnConflictMemory = 64 << 20

func newConflictLog(limit int64) *conflictLog {
	return &conflictLog{
		seed:   maphash.MakeSeed(),
		fpMask: ^uint64(0),
		starts: make(map[uint64]int),
		byFP:   make(map[uint64]uint64),
		limit:  limit,
	}
}

func (c *conflictLog) fingerprint(key []byte) uint64 { return maphash.Bytes(c.seed, key) & c.fpMask }

// begin registers a transaction about to begin and returns the snapshot
// it reads: every write it does not see is recorded from now on.
func (c *conflictLog) begin(db *DB) *Snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.open.Add(1)
	// A group admitted before open became nonzero is not recorded; wait
	// until it is published, so that the snapshot sees it (or until the
	// database stops taking writes: then it never will be).
	for spins := 0; !c.published(db); spins++ {
		c.mu.Unlock()
		if spins < 64 {
			runtime.Gosched()
		} else {
			time.Sleep(20 * time.Microsecond)
		}
		c.mu.Lock()
	}
	snap := db.NewSnapshot()
	c.starts[snap.seq]++
	return snap
}

// published reports whether the last group admitted unrecorded is
// visible, or can no longer be.
func (c *conflictLog) published(db *DB) bool {
	p := c.pending.Load()
	if p == 0 || db.visibleSeq.Load() >= p {
		return true
	}
	return db.checkOpen() != nil || db.bgErr() != nil
}

// end unregisters a transaction that began at start, and drops what no
// open transaction needs any longer.
func (c *conflictLog) end(start uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := c.starts[start]; n > 1 {
		c.starts[start] = n - 1
	} else {
		delete(c.starts, start)
	}
	c.open.Add(-1)
	c.pruneLocked()
}

// pruneLocked drops the writes at or below the oldest open transaction's
// start; all of them when no transaction is open or beginning.
func (c *conflictLog) pruneLocked() {
	if len(c.starts) == 0 {
		if c.open.Load() == 0 && c.head < len(c.fifo) {
			clear(c.byFP)
			clear(c.fifo)
			c.fifo, c.head, c.bytes, c.ranges = c.fifo[:0], 0, 0, 0
		}
		return
	}
	oldest := uint64(1<<64 - 1)
	for s := range c.starts {
		oldest = min(oldest, s)
	}
	for c.head < len(c.fifo) && c.fifo[c.head].seq <= oldest {
		c.dropOldestLocked()
	}
}

// dropOldestLocked forgets the oldest recorded write.
func (c *conflictLog) dropOldestLocked() writeMark {
	m := c.fifo[c.head]
	c.fifo[c.head] = writeMark{}
	c.head++
	if m.isRange {
		c.ranges--
	} else if c.byFP[m.fp] == m.seq {
		delete(c.byFP, m.fp)
	}
	c.bytes -= int64(len(m.key)+len(m.end)) + markOverhead
	if c.head > len(c.fifo)/2 && c.head > 1024 {
		n := copy(c.fifo, c.fifo[c.head:])
		clear(c.fifo[n:])
		c.fifo, c.head = c.fifo[:n], 0
	}
	return m
}

// recordLocked records the writes of one batch, whose first entry has
// sequence number seq.
func (c *conflictLog) recordLocked(repr []byte, seq uint64) {
	r := batchrepr.NewReader(repr)
	for {
		kind, key, end, ok := r.Next()
		if !ok {
			break
		}
		if kind == ikey.KindRangeDelete {
			// A range: kept with its end, checked against every read.
			m := writeMark{key: string(key), end: string(end), isRange: true, seq: seq}
			seq++
			c.fifo = append(c.fifo, m)
			c.ranges++
			c.bytes += int64(len(m.key)+len(m.end)) + markOverhead
			continue
		}
		m := writeMark{key: string(key), fp: c.fingerprint(key), seq: seq}
		seq++
		c.byFP[m.fp] = m.seq
		c.fifo = append(c.fifo, m)
		c.bytes += int64(len(m.key)) + markOverhead
	}
	for c.bytes > c.limit && c.head < len(c.fifo) {
		m := c.dropOldestLocked()
		c.horizon = max(c.horizon, m.seq)
		c.trimmed++
	}
}

// checkLocked returns an error matching ErrConflict if a write recorded
// after t began touches what t read.
func (c *conflictLog) checkLocked(t *Transaction) error {
	if t.start < c.horizon {
		c.conflicts++
		return errors.Wrapf(ErrConflict, "shale: the transaction began at sequence number %d and was open "+
			"while more than Options.TxnConflictMemory (%d bytes) of writes were committed: the writes "+
			"it could conflict with are no longer tracked", t.start, c.limit)
	}
	for k := range t.reads {
		if seq, ok := c.byFP[c.fingerprint([]byte(k))]; ok && seq > t.start {
			c.conflicts++
			return errors.Wrapf(ErrConflict, "shale: a key the transaction read was written at sequence "+
				"number %d, after the transaction began at %d", seq, t.start)
		}
	}
	if len(t.spans) == 0 && (c.ranges == 0 || len(t.reads) == 0) {
		return nil
	}
	t.normalizeSpans()
	live := c.fifo[c.head:]
	first, _ := slices.BinarySearchFunc(live, t.start+1, func(m writeMark, seq uint64) int { return cmp.Compare(m.seq, seq) })
	for _, m := range live[first:] {
		switch {
		case m.isRange && t.readIn(m.key, m.end):
			c.conflicts++
			return errors.Wrapf(ErrConflict, "shale: a range deletion of [%q, %q) at sequence number %d, after "+
				"the transaction began at %d, covers what it read", m.key, m.end, m.seq, t.start)
		case !m.isRange && t.spansCover(m.key):
			c.conflicts++
			return errors.Wrapf(ErrConflict, "shale: key %q, in a range the transaction iterated over, was "+
				"written at sequence number %d, after the transaction began at %d", m.key, m.seq, t.start)
		}
	}
	return nil
}

// admitFast is the commit path's check, before the group whose first
// sequence number is seq gets its sequence numbers: with no transaction
// open it returns true, and the group is not recorded. Otherwise it
// returns false, and the caller admits the group through admit. The
// store before the load pairs with begin's increment of open before its
// load of pending (both sequentially consistent): either this load sees
// the transaction, or begin sees the group and waits for it.
func (c *conflictLog) admitFast(seq uint64) bool {
	c.pending.Store(seq)
	if c.open.Load() == 0 {
		return true
	}
	c.pending.Store(0) // recorded: begin need not wait for it
	return false
}

// admit checks each transaction of the group, in order, against the
// writes recorded so far (those of the group's earlier writers included),
// rejects those that conflict (setting their err and rejected), and
// records the writes of the rest, from sequence number seq on.
func (c *conflictLog) admit(group []*writer, seq uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, w := range group {
		if w.txn != nil {
			if err := c.checkLocked(w.txn); err != nil {
				w.err, w.rejected = err, true
				continue
			}
		}
		c.recordLocked(w.repr, seq)
		seq += uint64(batchrepr.Count(w.repr))
	}
}

// keySpan is a span of user keys an iterator passed over: [lo, hi), or
// [lo, ∞) when hiInf is set.
type keySpan struct {
	lo, hi []byte
	hiInf  bool
}

// empty reports whether the span holds no key.
func (s keySpan) empty() bool { return !s.hiInf && bytes.Compare(s.lo, s.hi) >= 0 }

// conflictStats is what Metrics reports of the conflict log.
type conflictStats struct {
	open      int64
	keys      int
	bytes     int64
	conflicts int64
	trimmed   int64
}

func (c *conflictLog) stats() conflictStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return conflictStats{open: c.open.Load(), keys: len(c.fifo) - c.head, bytes: c.bytes,
		conflicts: c.conflicts, trimmed: c.trimmed}
}
