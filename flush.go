package shale

import (
	"time"

	"github.com/cockroachdb/errors"
	"github.com/shale-db/shale/internal/manifest"
	"github.com/shale-db/shale/memtable"
)

// immMemtable is a full memtable waiting to be flushed.
type immMemtable struct {
	mem     *memtable.Memtable
	lastSeq uint64   // the sequence number of its newest entry
	log     *logFile // the WAL its writes went to (retired)
	next    *logFile // the WAL that took over from log
	// tableNum is the number of the table its flush writes, set (under
	// db.mu) when the flush starts; 0 before.
	tableNum uint64
	// reason is why it was switched out, for the listener's FlushInfo.
	reason string
}

// maxImmutables is the most full memtables that may wait to be flushed
// before writes wait (Options.MaxImmutableMemtables; 2 by default). Each
// has a flush of its own under way (see flush).
const maxImmutables = 2

// Flow control. From l0SlowdownTables level-0 tables on, every write
// (every commit group) owes a delay: slowdownStep at 8 tables, doubling
// with each table more. The debt is paid in one sleep once it reaches
// slowdownQuantum, so that a few writes in a thousand wait a few
// milliseconds each rather than every write waiting for a timer that
// cannot sleep less than about a millisecond; either way writes slow to
// the pace of compaction, but this way 99.9% of them never notice. A level
// below level 0 at 1.5 times its target or more slows writes the same way
// (levelPressure), so that compaction that falls behind on the deeper
// levels cannot let dead data pile up there: the space the database takes
// stays near its live data however fast it is written. At
// l0StopTables a full memtable is not switched (writes wait) until
// compaction has taken level 0 below it.
const (
	l0SlowdownTables = 8
	l0StopTables     = 12
	slowdownStep     = 2 * time.Microsecond
	slowdownQuantum  = 5 * time.Millisecond
)

// idleDelay is how long writes must have stopped before the database does
// the work that waits for idleness:
//
//   - A memtable holding deletions is flushed. A deletion in the memtable
//     hides data in tables that no compaction can reclaim until the
//     deletion reaches a table: a queue drained, or a Raft log truncated,
//     and then left alone, would otherwise keep its dead data on disk for
//     good.
//   - Level 0 compacts down even below its trigger (idleCompactL0Locked). Its
//     tables overlap every read: each Get looks at every one of them and
//     each iterator seeks every one, and with no writes coming no more
//     tables join them to share the cost of the compaction. A database
//     reopened after a fill held two or three level-0 tables for good
//     (the fill's last flushes and the one each Open writes of what it
//     replayed), and seekrandom ran at half the speed it ran without them.
const idleDelay = time.Second

// armIdle starts the idle timer unless it is running.
func (db *DB) armIdle() {
	if !db.idleArmed.Load() && db.idleArmed.CompareAndSwap(false, true) {
		w := db.writeGroups.Load()
		time.AfterFunc(idleDelay, func() { db.onIdle(w) })
	}
}

// onIdle does the idle work if no write came since the timer started with
// w write groups; if writes came, it waits again.
func (db *DB) onIdle(w uint64) {
	if now := db.writeGroups.Load(); now != w {
		time.AfterFunc(idleDelay, func() { db.onIdle(now) })
		return
	}
	db.idleArmed.Store(false)
	db.mu.Lock()
	closed, mem := db.mu.closed, db.mu.mem
	if !closed {
		db.mu.idleSince, db.mu.idle = w, true
		db.maybeScheduleLocked()
	}
	db.mu.Unlock()
	if closed || mem.Deletions() == 0 {
		return
	}
	// A failure is the background error that later writes and Close
	// report; there is no caller to hand it to.
	_ = db.Flush()
}

// idleCompactL0Locked reports whether level 0 compacts from its first table:
// no write has come since the idle timer last found the database idle.
// Called with db.mu held.
func (db *DB) idleCompactL0Locked() bool {
	return db.mu.idle && db.writeGroups.Load() == db.mu.idleSince
}

// Flush writes the memtable to a table now and waits until that table is
// recorded in the MANIFEST. Flushing an empty memtable does nothing.
func (db *DB) Flush() error { return markDiskFull(db.flushAll()) }

func (db *DB) flushAll() error {
	if db.opts.ReadOnly {
		return db.readOnlyError()
	}
	if err := db.commit.enqueue(db, nil, false, true); err != nil {
		return err
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	target := db.mu.switched // the memtables switched out so far, ours included
	for db.mu.flushedCount < target && db.mu.bgErr == nil && !db.mu.closed {
		db.mu.bgCond.Wait()
	}
	if db.mu.closed {
		return ErrClosed
	}
	return db.mu.bgErr
}

// waitFlushTurn waits until imm is the oldest immutable memtable: the
// flushes of older ones have recorded their tables. It fails if one of
// them failed instead.
func (db *DB) waitFlushTurn(imm *immMemtable) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	for db.mu.imm[0] != imm && db.mu.bgErr == nil {
		db.mu.bgCond.Wait()
	}
	return db.mu.bgErr
}

// makeRoomLocked makes sure the memtable can take a write. Past
// l0SlowdownTables level-0 tables the write is delayed once. If the
// memtable is full (or force is set and it holds anything) it becomes
// immutable and a new memtable and WAL take over, unless
// Options.MaxImmutableMemtables memtables already wait for a flush or
// level 0 holds l0StopTables: then the write waits. Called by the commit
// leader only.
func (db *DB) makeRoomLocked(force bool) (err error) {
	slowed, synced := force, false
	var counted [numStallKinds]bool
	var stall stallEvent
	defer func() { stall.end(db.events, err) }()
	for {
		switch {
		case db.mu.closed:
			return ErrClosed
		case db.mu.bgErr != nil:
			return db.mu.bgErr
		case !slowed:
			slowed = true
			if d := db.slowdownLocked(); d > 0 {
				db.mu.Unlock()
				start := time.Now()
				time.Sleep(d)
				db.mu.Lock()
				db.mu.stalls.add(stallSlowdown, time.Since(start))
			}
			continue
		case force && db.mu.mem.Empty():
			return nil
		case !force && db.mu.mem.ApproximateSize() < db.opts.WriteBufferSize:
			return nil
		case len(db.mu.imm) >= db.opts.MaxImmutableMemtables:
			stall.begin(db.events, force, "memtable count limit reached")
			db.waitLocked(force, stallMemtable, &counted)
			continue
		case db.l0Tables.Load() >= l0StopTables:
			stall.begin(db.events, force, "L0 file count limit exceeded")
			db.waitLocked(force, stallL0, &counted)
			continue
		case !synced:
			// The leader appends nothing meanwhile, so the log stays
			// synced while the conditions above are looked at again.
			synced = true
			if err := db.syncBeforeSwitchLocked(); err != nil {
				return err
			}
			continue
		}
		reason := "memtable full"
		if force {
			reason = "forced"
		}
		return db.switchMemtableLocked(reason)
	}
}

// syncBeforeSwitchLocked makes the current WAL durable before a memtable
// switch gives the writes to a new one. Otherwise a power loss could keep
// NoSync writes that reached the new WAL's disk blocks while losing
// earlier ones still in the old WAL's dirty pages: the writes that
// survived would not be a prefix of the writes, and recovery could not
// tell that hole from damage. The sync runs without db.mu, so that reads
// go on; it costs one fdatasync of the log's last unsynced bytes per
// write buffer (see the README's figures). Called by the commit leader,
// with db.mu held.
func (db *DB) syncBeforeSwitchLocked() error {
	log := db.mu.log
	db.mu.Unlock()
	err := log.w.Flush()
	if err == nil {
		// Not log.sync: the retirement of the log before (the directory
		// entry of this one) need not be done, only this log durable.
		err = log.syncData()
	}
	db.mu.Lock()
	if err != nil {
		return db.setBackgroundErrorLocked(errors.Wrapf(err, "shale: sync log %06d before a switch", log.num))
	}
	return nil
}

// slowdownLocked adds this write's delay to the debt and returns the debt
// if it is due, clearing it; 0 if not.
func (db *DB) slowdownLocked() time.Duration {
	shift := int32(-1)
	if l0 := db.l0Tables.Load(); l0 >= l0SlowdownTables {
		shift = min(l0-l0SlowdownTables, 10)
	}
	shift = max(shift, db.levelPressure.Load()-1)
	if shift < 0 {
		db.mu.slowdownDebt = 0
		return 0
	}
	db.mu.slowdownDebt += slowdownStep << shift
	if db.mu.slowdownDebt < slowdownQuantum {
		return 0
	}
	d := db.mu.slowdownDebt
	db.mu.slowdownDebt = 0
	return d
}

// waitLocked waits for background progress and adds the wait to the
// write's stall of kind k: one stall a write, however many times a flush
// or compaction that ends wakes it (see stallCounters.addWait). A forced
// switch (Flush) waits uncounted: the stall metrics count writes.
func (db *DB) waitLocked(force bool, k stallKind, counted *[numStallKinds]bool) {
	start := time.Now()
	db.mu.bgCond.Wait()
	if !force {
		db.mu.stalls.addWait(k, time.Since(start), counted)
	}
}

// switchMemtableLocked retires the memtable and its WAL: a new WAL takes
// the writes and the old memtable waits for a flush. The caller has made
// the old WAL durable (syncBeforeSwitchLocked; Open's carried log was
// synced when written). Finishing the retired WAL and syncing the
// directory entry of the new one happen in the background (retireLog),
// not on the commit path; a Sync write to the new WAL waits for them.
func (db *DB) switchMemtableLocked(reason string) error {
	old := db.mu.log
	log, err := db.openLog(db.vs.NewFileNum(), db.events.newJob())
	if err != nil {
		return db.setBackgroundErrorLocked(err)
	}
	log.prev = old
	db.mu.log = log
	db.noteLogLocked(log)
	db.mu.imm = append(db.mu.imm, &immMemtable{
		mem: db.mu.mem, lastSeq: db.commit.lastSeq, log: old, next: log, // the caller is the commit leader
		reason: reason,
	})
	// A memtable keeps a filter of its keys from the start when the one
	// it replaces served Gets (memtable.ReadOften): Gets skip it for the
	// keys it does not hold, at a price to every write that a bulk load
	// does not pay. Otherwise it builds one once Gets read it often.
	if db.mu.mem.ReadOften() {
		db.mu.mem = memtable.NewSized(db.memChunks, db.opts.WriteBufferSize)
	} else {
		db.mu.mem = memtable.NewLazy(db.memChunks, db.opts.WriteBufferSize)
	}
	db.mu.switched++
	db.bgWG.Add(1)
	go db.retireLog(log)
	db.maybeScheduleLocked()
	return nil
}

// retireLog finishes and closes log.prev, the WAL log took over from
// (durable already), once every WAL before it is retired, then syncs the
// directory so that log's entry is durable, and marks log ready for Sync
// writes.
func (db *DB) retireLog(log *logFile) {
	defer db.bgWG.Done()
	old := log.prev
	err := old.waitReady()
	// old takes no more appends: finish and close it even if an earlier
	// retirement failed.
	if ferr := old.retire(); err == nil {
		err = ferr
	}
	if err == nil {
		err = db.syncDir()
	}
	if err != nil {
		err = errors.Wrapf(err, "shale: retire log %06d", old.num)
		// The old WAL's tail may not be durable: stop writes.
		db.setBackgroundError(err)
	}
	log.setReady(err)
}

// setBackgroundErrorLocked records err as the reason every later write
// fails, fails the manual compactions waiting for their turn (nothing
// starts after it), and returns err.
func (db *DB) setBackgroundErrorLocked(err error) error {
	err = markDiskFull(err)
	if db.mu.bgErr == nil {
		db.mu.bgErr = err
		db.opts.Logger.Error("shale: writes stopped", "err", err)
		db.events.backgroundError(err)
	}
	for _, m := range db.mu.manual {
		m.done <- db.mu.bgErr
	}
	db.mu.manual = nil
	db.mu.bgCond.Broadcast()
	return err
}

// flush writes imm to a level-0 table, records it in the MANIFEST with the
// WAL that took over, and deletes the files no longer needed. It runs on
// its own goroutine, beside compactions and, with MaxImmutableMemtables 2,
// beside the flush of the other immutable memtable, if one waits: the
// tables are written side by side, and recorded one at a time, oldest
// first (flushMemtable). Writing the next table while the last one's
// syncs and MANIFEST edit wait for the disk took db_bench's fillbatch from
// about 0.42 to 0.37 s (paired runs).
func (db *DB) flush(imm *immMemtable) {
	defer db.bgWG.Done()
	start := time.Now()
	meta, err := db.flushEvents(imm.reason, imm.mem, func(job int) (*manifest.FileMeta, error) {
		return db.flushMemtable(imm, job)
	})
	if err == nil {
		// What LevelDB's LOG says of a flush, for the operator who reads
		// it first.
		if meta != nil {
			db.opts.Logger.Info("shale: flushed", "table", meta.Num, "bytes", meta.Size,
				"entries", meta.Entries, "took", time.Since(start).Round(time.Millisecond))
		} else {
			db.opts.Logger.Info("shale: flushed an empty memtable", "took", time.Since(start).Round(time.Millisecond))
		}
	}
	db.mu.Lock()
	db.mu.flushes--
	held := db.mu.carryFlushing // the first flush to end is Open's: it is the oldest
	db.mu.carryFlushing = false
	if err != nil {
		db.setBackgroundErrorLocked(errors.Wrap(err, "shale: flush"))
	} else {
		db.mu.imm = db.mu.imm[1:] // imm: flushMemtable waited for its turn
		db.mu.flushedCount++
		db.mu.counters.noteFlush(meta)
		db.mu.bgCond.Broadcast()
		db.maybeScheduleLocked()
		if held && db.mu.closed && db.mu.bgErr == nil {
			// Close came while Open's flush held the compactions back:
			// they start now, and Close waits for them as for any under
			// way. Otherwise a database opened, read briefly and closed
			// would be left with level 0 over its trigger, and with the
			// bytes of the tables the compaction would replace.
			db.startAutomaticLocked()
		}
	}
	db.mu.Unlock()
	if err == nil {
		imm.mem.Unref() // the DB's reference: reads now find its table
		db.armIdle()    // level 0 has a table that may be left alone
		db.deleteObsoleteFiles()
		db.maybeUnmark() // its WAL, retired, may have held the last range deletion
	}
}

// startFlushesLocked starts a flush for every immutable memtable that has
// none, oldest first. Each takes its table number now, so that level 0's
// order by number is the memtables' order whichever table is written
// first.
func (db *DB) startFlushesLocked() {
	for _, imm := range db.mu.imm {
		if imm.tableNum != 0 {
			continue
		}
		imm.tableNum = db.vs.NewFileNum()
		db.mu.pendingOutputs[imm.tableNum] = struct{}{}
		db.mu.flushes++
		db.bgWG.Add(1)
		go db.flush(imm)
	}
}

// flushMemtable writes imm to a table and records it, and returns the
// table's metadata (nil if imm held nothing). The table is written at
// once; the edit waits until every older memtable's is applied.
func (db *DB) flushMemtable(imm *immMemtable, job int) (*manifest.FileMeta, error) {
	meta, err := db.writeTable(job, &yieldingIter{Iterator: imm.mem.NewIter()}, imm.mem.RangeDels(), imm.tableNum)
	if err != nil {
		return nil, err
	}
	if meta != nil {
		// The memtable's filter holds the table's keys: Gets skip the
		// table through it while it is in level 0.
		meta.SetKeyFilter(imm.mem.KeyFilter())
	}
	// A table written in vain (an older flush or the WAL's retirement
	// failed) is removed at once: no edit names it, and after a failure
	// no cleanup runs before Close.
	if err := db.waitFlushTurn(imm); err != nil {
		db.discardTable(meta)
		return nil, err
	}
	// The next WAL's directory entry must be durable before the MANIFEST
	// names it as the oldest log needed. Waiting for it here rather than
	// before the table lets the table's writing overlap retireLog's
	// directory sync.
	if err := imm.next.waitReady(); err != nil {
		db.discardTable(meta)
		return nil, err
	}
	edit := &manifest.VersionEdit{}
	edit.SetLogNumber(imm.next.num)
	// The MANIFEST's last sequence is that of the newest flushed write,
	// not of later writes in the newer WALs: LevelDB's readers (goleveldb
	// among them) refuse WAL records below it.
	edit.SetLastSequence(imm.lastSeq)
	if meta != nil {
		edit.AddFile(0, meta)
	}
	if err = db.logAndApply(edit); err == nil {
		// After a failed MANIFEST write the edit may be on disk all the
		// same: the table stays spared from deletion for good.
		db.releaseOutputs(meta)
	}
	return meta, err
}
