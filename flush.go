package shale

import (
	"github.com/cockroachdb/errors"
	"github.com/shale-db/shale/internal/manifest"
	"github.com/shale-db/shale/memtable"
)

// Flush writes the memtable to a table now and waits until that table is
// recorded in the MANIFEST. Flushing an empty memtable does nothing.
func (db *DB) Flush() error {
	if db.opts.ReadOnly {
		return db.readOnlyError()
	}
	if err := db.commit.enqueue(db, nil, false, true); err != nil {
		return err
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	for db.mu.imm != nil && db.mu.bgErr == nil && !db.mu.closed {
		db.mu.flushed.Wait()
	}
	if db.mu.closed {
		return ErrClosed
	}
	return db.mu.bgErr
}

// makeRoomLocked makes sure the memtable can take a write: if it is full
// (or force is set and it holds anything) it becomes immutable and a new
// memtable and WAL take over; if the previous immutable memtable is still
// being flushed, the write waits for it. Called by the commit leader only.
func (db *DB) makeRoomLocked(force bool) error {
	for {
		switch {
		case db.mu.closed:
			return ErrClosed
		case db.mu.bgErr != nil:
			return db.mu.bgErr
		case force && db.mu.mem.Empty():
			return nil
		case !force && db.mu.mem.ApproximateSize() < db.opts.WriteBufferSize:
			return nil
		case db.mu.imm != nil:
			db.mu.flushed.Wait()
			continue
		}
		return db.switchMemtableLocked()
	}
}

// switchMemtableLocked retires the memtable and its WAL: a new WAL is
// created (and its directory entry synced), the old one is synced and
// closed, and the background loop is woken to flush.
func (db *DB) switchMemtableLocked() error {
	log, err := db.createLog(db.vs.NewFileNum())
	if err != nil {
		return db.setBackgroundErrorLocked(err)
	}
	old := db.mu.log
	db.mu.log = log
	if err := old.close(); err != nil {
		// The old WAL's tail may not be durable: stop writes.
		return db.setBackgroundErrorLocked(err)
	}
	db.mu.imm = db.mu.mem
	db.mu.immLastSeq = db.commit.lastSeq // the caller is the commit leader
	db.mu.mem = memtable.New()
	select {
	case db.bgWake <- struct{}{}:
	default:
	}
	return nil
}

func (db *DB) setBackgroundErrorLocked(err error) error {
	if db.mu.bgErr == nil {
		db.mu.bgErr = err
		db.opts.Logger.Error("shale: writes stopped", "err", err)
	}
	db.mu.flushed.Broadcast()
	return err
}

// backgroundLoop is the one goroutine that writes tables: it flushes the
// immutable memtable whenever woken, runs manual compactions, and deletes
// the files that became obsolete. Leveled compaction will join it here.
func (db *DB) backgroundLoop() {
	defer close(db.bgDone)
	for {
		select {
		case _, ok := <-db.bgWake:
			if !ok {
				return
			}
			db.flushImmutable()
		case req := <-db.compactCh:
			req.done <- db.compactRange(req.start, req.end)
		}
	}
}

// flushImmutable writes the immutable memtable to an L0 table, records it
// in the MANIFEST with the WAL that took over, and deletes the WALs and
// files that are no longer needed.
func (db *DB) flushImmutable() {
	db.mu.Lock()
	imm, logNum, immLastSeq := db.mu.imm, db.mu.log.num, db.mu.immLastSeq
	db.mu.Unlock()
	if imm == nil {
		return
	}
	// The MANIFEST's last sequence must be that of the newest flushed
	// write, not of later writes in the new WAL: LevelDB's readers
	// (goleveldb among them) refuse WAL records below it.
	db.vs.SetLastSequence(immLastSeq)
	edit := &manifest.VersionEdit{}
	edit.SetLogNumber(logNum)
	meta, err := db.writeTable(imm.NewIter())
	if err == nil && meta != nil {
		edit.AddFile(0, meta)
	}
	if err == nil {
		err = db.vs.LogAndApply(edit)
	}
	db.mu.Lock()
	if err != nil {
		db.setBackgroundErrorLocked(errors.Wrap(err, "shale: flush"))
	} else {
		db.mu.imm = nil
		db.mu.flushed.Broadcast()
	}
	db.mu.Unlock()
	if err == nil {
		db.deleteObsoleteFiles()
	}
}
