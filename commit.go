package shale

import (
	"bytes"
	"runtime"
	"sync"

	"github.com/cockroachdb/errors"
	"github.com/shale-db/shale/internal/batchrepr"
	"github.com/shale-db/shale/internal/ikey"
	"github.com/shale-db/shale/memtable"
)

const batchHeaderLen = batchrepr.HeaderLen

// A writer is one Write (or Flush) waiting in the commit queue.
type writer struct {
	repr  []byte // the batch encoding; nil for a flush request
	sync  bool
	flush bool // force a memtable switch; always committed alone
	// fn, if set (with flush), runs alone in the leader's turn instead
	// of a commit: no write is in flight meanwhile (see exclusive).
	fn func() error
	// txn, if set, is the transaction whose commit repr is: the leader
	// checks it for conflicts, and rejects it (setting err) on one.
	txn      *Transaction
	rejected bool
	// rangeDels counts the range deletions in repr, openEnds those the
	// leader must give an end (see resolveRangeDels).
	rangeDels, openEnds int
	done                bool
	err                 error
	cond                sync.Cond // on commitQueue.mu; signalled when done or leader
}

// commitQueue implements group commit. Writers queue up; the one at the
// front (the leader) takes every compatible writer behind it, gives their
// batches consecutive sequence numbers, appends them to the WAL as one
// record and to the memtable, syncs at most once, publishes the new
// visible sequence number and wakes the others.
type commitQueue struct {
	mu    sync.Mutex
	queue []*writer // queue[0] is the leader, or the next one
	idle  sync.Cond // on mu; broadcast when queue becomes empty

	// Owned by the leader.
	lastSeq uint64 // the sequence number of the last entry committed
	buf     []byte // the group's combined batch
	// lastSyncGroup is how many writers the last Sync group had.
	lastSyncGroup int
}

// maxGroupBytes bounds the bytes one group commit writes; a small leader
// takes at most smallGroupExtra bytes of followers, so that its own latency
// stays low (LevelDB's rule).
const (
	maxGroupBytes   = 1 << 20
	smallGroup      = 128 << 10
	smallGroupExtra = 128 << 10
)

var writerPool = sync.Pool{New: func() any { return new(writer) }}

// write commits one batch and returns when it is durable as asked.
func (q *commitQueue) write(db *DB, b *Batch, sync bool) error {
	return q.submit(db, &writerArgs{repr: b.repr, sync: sync, rangeDels: b.rangeDels, openEnds: b.openEnds})
}

// enqueue waits for its turn, leads a group if it is at the front, and
// returns the group's result. With flush set (and repr nil) the commit is
// a memtable switch, alone in its group.
func (q *commitQueue) enqueue(db *DB, repr []byte, sync, flush bool) error {
	return q.submit(db, &writerArgs{repr: repr, sync: sync, flush: flush})
}

// exclusive waits for the leader's turn and runs fn in it, alone: every
// write before it has been applied and published, none after it has begun.
func (q *commitQueue) exclusive(db *DB, fn func() error) error {
	return q.submit(db, &writerArgs{flush: true, fn: fn})
}

// writerArgs are what a writer is made from.
type writerArgs struct {
	repr                []byte
	sync, flush         bool
	fn                  func() error
	txn                 *Transaction
	rangeDels, openEnds int
}

// submit queues a writer made from a and returns its result.
func (q *commitQueue) submit(db *DB, a *writerArgs) error {
	w := writerPool.Get().(*writer)
	*w = writer{repr: a.repr, sync: a.sync, flush: a.flush, fn: a.fn, txn: a.txn,
		rangeDels: a.rangeDels, openEnds: a.openEnds}
	w.cond.L = &q.mu
	defer writerPool.Put(w)

	q.mu.Lock()
	q.queue = append(q.queue, w)
	for !w.done && q.queue[0] != w {
		w.cond.Wait()
	}
	if w.done {
		q.mu.Unlock()
		return w.err
	}
	group := q.groupLocked(1, len(w.repr))
	q.mu.Unlock()

	group, err := db.commitGroup(group)

	q.mu.Lock()
	for _, g := range group {
		if !g.rejected {
			g.err = err
		}
		g.done = true
		if g != w {
			g.cond.Signal()
		}
	}
	n := copy(q.queue, q.queue[len(group):])
	clear(q.queue[n:])
	q.queue = q.queue[:n]
	if n > 0 {
		q.queue[0].cond.Signal()
	} else if q.idle.L != nil {
		q.idle.Broadcast()
	}
	err = w.err // the group's, or the leader's own rejection
	q.mu.Unlock()
	return err
}

// groupLocked returns the group led by queue[0]: its first n writers, of
// size bytes, and the writers behind them that can share the commit: not
// flush requests, not Sync writes behind a NoSync leader, within the byte
// budget.
func (q *commitQueue) groupLocked(n, size int) []*writer {
	lead := q.queue[0]
	if lead.flush {
		return q.queue[:1:1]
	}
	limit := maxGroupBytes
	if len(lead.repr) <= smallGroup {
		limit = len(lead.repr) + smallGroupExtra
	}
	for ; n < len(q.queue); n++ {
		w := q.queue[n]
		if w.flush || (w.sync && !lead.sync) || size+len(w.repr) > limit {
			break
		}
		size += len(w.repr)
	}
	return q.queue[:n:n]
}

// groupSize returns the bytes of the group's batches.
func groupSize(group []*writer) int {
	n := 0
	for _, w := range group {
		n += len(w.repr)
	}
	return n
}

// drain waits until no write is queued or under way.
func (q *commitQueue) drain() {
	q.mu.Lock()
	if q.idle.L == nil {
		q.idle.L = &q.mu
	}
	for len(q.queue) > 0 {
		q.idle.Wait()
	}
	q.mu.Unlock()
}

// commitGroup is the leader's work: make room, write the group to the
// WAL and the memtable, sync if any writer asked, then publish. It returns
// the group, which a Sync leader extends (see gather). It runs with no lock
// held but the leader's turn.
func (db *DB) commitGroup(group []*writer) ([]*writer, error) {
	lead := group[0]
	if lead.fn != nil {
		return group, lead.fn()
	}
	db.mu.Lock()
	err := db.makeRoomLocked(lead.flush)
	log, mem := db.mu.log, db.mu.mem
	db.mu.Unlock()
	if err != nil || lead.flush {
		return group, err
	}
	if lead.sync {
		group = db.commit.gather(group)
	}
	if err := db.prepareRangeDels(group, log); err != nil {
		return group, err
	}
	// Transactions are checked, and the group's writes recorded for
	// theirs, before the group takes its sequence numbers; with none
	// open, the group only notes its first sequence number.
	if !db.txns.admitFast(db.commit.lastSeq + 1) {
		db.txns.admit(group, db.commit.lastSeq+1)
	}
	repr, seq, err := db.logGroup(log, group)
	if err != nil || repr == nil {
		return group, err
	}
	if err := mem.Apply(repr, seq); err != nil {
		return group, db.setBackgroundError(err)
	}
	// The memtable holds the group whatever the sync does: a flush of it
	// must record its sequence numbers as used.
	db.commit.lastSeq = seq + uint64(batchrepr.Count(repr)) - 1
	if lead.sync {
		if err := log.sync(); err != nil {
			return group, db.setBackgroundError(err)
		}
		db.walSyncs.Add(1)
	}
	db.visibleSeq.Store(db.commit.lastSeq)
	db.writeGroups.Add(1)
	if mem.Deletions() > 0 {
		db.armIdle()
	}
	return group, nil
}

// maxGatherYields bounds how often a Sync leader yields for writers to
// join its group.
const maxGatherYields = 3

// gather lets writers that were just woken (the previous group's,
// typically) reach the queue and join the group of a Sync leader: a yield
// costs far less than the sync they would otherwise wait for. The leader
// yields until the group is as large as the last Sync group was, or no
// queued writer can join it, at most maxGatherYields times. Measured with 8
// writers on 2 cores: one yield took groups from half singletons to
// mostly all 8 (about 2,100 syncs for 16,000 puts); waiting for the last
// group's size as well brought that to about 2,040.
func (q *commitQueue) gather(group []*writer) []*writer {
	for range maxGatherYields {
		runtime.Gosched()
		q.mu.Lock()
		group = q.groupLocked(len(group), groupSize(group))
		full := len(group) < len(q.queue) // the next writer cannot join
		q.mu.Unlock()
		if full || len(group) >= q.lastSyncGroup {
			break
		}
	}
	q.lastSyncGroup = len(group)
	return group
}

// logGroup writes the writers' batches to the WAL (to the OS, not the
// disk) as one record, with consecutive sequence numbers from the one it
// returns, and returns that record (nil when every writer was rejected).
// The caller applies it to the memtable; readers see none of it until
// visibleSeq is published.
func (db *DB) logGroup(log *logFile, group []*writer) (repr []byte, seq uint64, err error) {
	q := &db.commit
	live := 0
	for _, w := range group {
		if w.rejected {
			continue
		}
		live++
		switch live {
		case 1:
			repr = w.repr
		case 2:
			q.buf = append(q.buf[:0], repr...)
			fallthrough
		default:
			q.buf = batchrepr.Append(q.buf, w.repr)
			repr = q.buf
		}
	}
	if repr == nil {
		return nil, 0, nil // every writer was a rejected transaction
	}
	seq = q.lastSeq + 1
	batchrepr.SetSeq(repr, seq)
	if err := log.append(repr); err != nil {
		return nil, 0, db.setBackgroundError(err)
	}
	db.walBytes.Add(int64(len(repr)))
	db.walRecords.Add(1)
	return repr, seq, nil
}

// setBackgroundError records err as the reason every later write fails,
// and returns it.
func (db *DB) setBackgroundError(err error) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	return db.setBackgroundErrorLocked(err)
}

// prepareRangeDels readies a group that holds range deletions, before
// any of it is written: it puts the mark on the directory (a synced
// MANIFEST edit: LevelDB and goleveldb must refuse the directory before
// a WAL record they would misread exists), gives each range deletion
// without an end one (see resolveOpenEnds), and notes that log holds
// range deletions, which keeps the mark on until it is retired.
func (db *DB) prepareRangeDels(group []*writer, log *logFile) error {
	n, open := 0, 0
	for _, w := range group {
		n, open = n+w.rangeDels, open+w.openEnds
	}
	if n == 0 {
		return nil
	}
	if !db.vs.Marked() {
		if err := db.vs.SetMarked(true); err != nil {
			return db.setBackgroundError(errors.Wrap(err, "shale: mark the directory for range deletions"))
		}
		db.opts.Logger.Info("shale: the directory holds range deletions: LevelDB and goleveldb will refuse it until compaction drops them")
	}
	if open > 0 {
		db.resolveOpenEnds(group)
	}
	db.mu.Lock()
	db.mu.markedLogs[log.num] = struct{}{}
	db.mu.Unlock()
	return nil
}

// resolveOpenEnds gives each range deletion of the group that has no end
// the end succ(k), k the largest user key that the memtables, the tables
// or the group itself hold (or its start, if larger): every key it must
// delete was written before it, so it is at most k. It runs in the
// leader's turn, before the group takes its sequence numbers, so nothing
// is written meanwhile. The writers' reprs are replaced, not changed: they
// are the callers' batches.
func (db *DB) resolveOpenEnds(group []*writer) {
	var largest []byte
	raise := func(k []byte) {
		if bytes.Compare(k, largest) > 0 {
			largest = append(largest[:0], k...)
		}
	}
	db.mu.Lock()
	mems := []*memtable.Memtable{db.mu.mem}
	for _, imm := range db.mu.imm {
		mems = append(mems, imm.mem)
	}
	db.mu.Unlock()
	for _, m := range mems {
		it := m.NewIter()
		if it.Last() {
			raise(ikey.UserKey(it.Key()))
		}
		it.Close()
	}
	v := db.vs.Current()
	for level, files := range v.Levels {
		for i, f := range files {
			if level == 0 || i == len(files)-1 {
				raise(ikey.UserKey(f.Largest))
			}
		}
	}
	v.Unref()
	for _, w := range group {
		r := batchrepr.NewReader(w.repr)
		for {
			_, k, v, ok := r.Next()
			if !ok {
				break
			}
			raise(k)
			raise(v)
		}
	}
	for _, w := range group {
		if w.openEnds == 0 {
			continue
		}
		var repr []byte
		r := batchrepr.NewReader(w.repr)
		for {
			kind, k, v, ok := r.Next()
			if !ok {
				break
			}
			switch {
			case kind == ikey.KindSet:
				repr = batchrepr.AppendPut(repr, k, v)
			case kind == ikey.KindDelete:
				repr = batchrepr.AppendDelete(repr, k)
			case len(v) > 0:
				repr = batchrepr.AppendRangeDelete(repr, k, v)
			default:
				// largest is at least k: the loop above raised it to
				// every key of the group.
				repr = batchrepr.AppendRangeDelete(repr, k, append(bytes.Clone(largest), 0))
			}
		}
		w.repr, w.openEnds = repr, 0
	}
}
