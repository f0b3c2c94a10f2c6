package shale

import "github.com/cockroachdb/errors"

// The mark (see manifest.MarkedComparator): a directory whose WALs or
// tables may hold records LevelDB cannot read (range deletions, and WAL
// records written compressed with Options.WALCompression) names a
// comparator of shale's own in its MANIFEST, so that LevelDB and goleveldb
// refuse to open it rather than misread it (both skip what they do not
// know: an unknown batch tag ends a log record's replay, an unknown WAL
// record type is dropped, an unknown metaindex entry is ignored). It is
// one mechanism, in one place:
//
//   - On: before the first WAL record that needs it is written, an edit
//     naming the mark is appended to the MANIFEST and synced: by the
//     commit leader for a range deletion (prepareRangeDels), by Open
//     before it creates a compressed WAL (markForCompressedLogs). A new
//     MANIFEST keeps it.
//   - Off: once no live table (Version.HasRangeDels) and no live WAL (at
//     or above the MANIFEST's log number: markedLogs, which holds the WALs
//     written with a range deletion and every compressed WAL) needs it, a
//     new MANIFEST is started whose edits never named it (maybeUnmark,
//     after each flush and compaction, and at Open). Restoring the
//     bytewise name in a later edit of the same MANIFEST would satisfy
//     goleveldb, which checks the last comparator it reads, but not
//     LevelDB, which checks each.
//
// A directory that never held such a record is never marked.

// noteLogLocked records a new WAL in markedLogs if it is written
// compressed. Called with db.mu held (or before Open returns).
func (db *DB) noteLogLocked(l *logFile) {
	if len(l.opts) > 0 {
		db.mu.markedLogs[l.num] = struct{}{}
	}
}

// markForCompressedLogs puts the mark on before Open creates its first
// WAL, when that WAL (and every later one) is written compressed.
func (db *DB) markForCompressedLogs() error {
	if !db.opts.WALCompression || db.vs.Marked() {
		return nil
	}
	if err := db.vs.SetMarked(true); err != nil {
		return errors.Wrap(err, "shale: mark the directory for compressed WAL records")
	}
	return nil
}

// liveRangeDelLogsLocked reports whether a WAL that holds range
// deletions is still live, forgetting those that are not. Called with
// db.mu held.
func (db *DB) liveRangeDelLogsLocked() bool {
	logNum := db.vs.LogNumber()
	live := false
	for n := range db.mu.markedLogs {
		if n < logNum {
			delete(db.mu.markedLogs, n)
		} else {
			live = true
		}
	}
	return live
}

// unmarkable reports whether the mark is on and nothing needs it.
func (db *DB) unmarkable() bool {
	if db.opts.ReadOnly || !db.vs.Marked() {
		return false
	}
	v := db.vs.Current()
	has := v.HasRangeDels()
	v.Unref()
	if has {
		return false
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	return !db.mu.closed && db.mu.bgErr == nil && !db.liveRangeDelLogsLocked()
}

// maybeUnmark takes the mark off once nothing needs it. It checks again in
// the commit leader's turn, where no write is under way (a range deletion
// written meanwhile keeps it on), and starts the new MANIFEST there.
func (db *DB) maybeUnmark() {
	if !db.unmarkable() {
		return
	}
	err := db.commit.exclusive(db, func() error {
		if !db.unmarkable() {
			return nil
		}
		return db.vs.SetMarked(false)
	})
	switch {
	case err == nil:
		if !db.vs.Marked() {
			db.opts.Logger.Info("shale: no range deletion left: the directory is LevelDB's again")
		}
	case !errors.Is(err, ErrClosed):
		db.opts.Logger.Warn("shale: take the range-deletion mark off", "err", err)
	}
}
