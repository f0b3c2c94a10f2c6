package shale

import (
	stderrors "errors"
	"io/fs"
	"path/filepath"

	"github.com/cockroachdb/errors"
	"github.com/shale-db/shale/internal/cache"
	"github.com/shale-db/shale/internal/filename"
	"github.com/shale-db/shale/internal/manifest"
	"github.com/shale-db/shale/internal/tablecache"
	"github.com/shale-db/shale/internal/vfs"
	"github.com/shale-db/shale/memtable"
)

// Open opens the database in dir, creating it (and dir) if there is none,
// unless opts.ReadOnly or opts.ErrorIfNotExists is set. A nil opts means
// the defaults. A writable Open refuses a directory that holds any entry a
// database does not (see checkDir), naming it.
//
// Open takes the directory's LOCK (an error matching ErrLocked if another
// DB holds it), loads the MANIFEST, replays the write-ahead logs it has not
// seen according to opts.Recovery, makes what it replayed durable in a
// table, retires those logs and starts a new one. What the replay found is
// available from Recovery and logged to opts.Logger.
//
// Space: before it writes anything, a writable Open removes the files no
// version needs (a table a failed flush left, logs already in tables, old
// MANIFESTs). It then needs free space for a new MANIFEST (a snapshot of
// the table list: about 100 bytes a table), for the tables of the records
// the logs hold, and for a new log (space is reserved for it ahead only
// where there is room). A table takes at most what its records take in
// the log (less, compressed), and replay writes one per write buffer;
// where one ends at the end of a log, as it does when the memtable fills
// where it filled before the crash, the table is recorded and the logs it
// holds are removed before replay goes on, so that the space needed is
// about one write buffer's table, not a table of every log while every
// log is still there (not under Strict recovery, whose refusal of damage
// further on leaves the logs as they were). Records less than a quarter of WriteBufferSize are
// carried into the new log instead. An Open that fails removes the tables
// and log it wrote unless a MANIFEST edit naming them may have reached the
// disk, so failed Opens on a full disk do not fill it further.
func Open(dir string, opts *Options) (*DB, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	fsys := vfs.OS()
	if o.FS != nil {
		fsys = o.FS
	}
	db, err := open(dir, o, fsys)
	return db, openError(dir, o, err)
}

// openError gives an error of Open what the caller needs to act on it: a
// full disk matches ErrDiskFull; a directory that may not be written to
// says so, with the way to read it anyway.
func openError(dir string, o Options, err error) error {
	if err != nil && !o.ReadOnly && stderrors.Is(err, fs.ErrPermission) {
		err = errors.Wrapf(err, "shale: open %s: the directory or its files may not be written "+
			"(Options.ReadOnly opens a database without writing anything)", dir)
	}
	if err != nil && diskFull(err) {
		var df *diskFullError
		if stderrors.As(err, &df) {
			err = df.err // an Open's advice, not a running DB's
		}
		return &diskFullError{err: errors.Wrapf(err, "shale: open %s: the disk is full; free space and Open again: Open needs room "+
			"for the table of one write buffer's records (at most what its log holds) beside the logs, whose space comes back as they are replayed", dir), atOpen: true}
	}
	return markDiskFull(err)
}

func open(dir string, o Options, fsys vfs.FS) (_ *DB, err error) {
	db := &DB{dir: dir, opts: o, fs: fsys, txns: newConflictLog(o.TxnConflictMemory)}
	db.mu.bgCond.L = &db.mu.Mutex
	db.mu.pendingOutputs = make(map[uint64]struct{})
	db.mu.markedLogs = make(map[uint64]struct{})
	if err := db.lockDir(); err != nil {
		return nil, err
	}
	db.events = newEvents(o.EventListener, o.DiskSlowThreshold)
	if db.events != nil && db.events.disk != nil {
		db.fs = slowSyncFS{FS: fsys, m: db.events.disk}
	}
	defer func() {
		if err != nil {
			db.abandon()
		}
	}()
	db.openInfoLog()
	if err := db.loadVersions(); err != nil {
		return nil, err
	}
	db.noteVersion()
	if !o.ReadOnly {
		db.vs.SetRollPolicy(manifest.RollPolicy{MaxSize: max(o.MaxManifestFileSize, 0), Rolled: db.noteManifestRoll})
	}
	db.blockCache = cache.New(o.CacheSize)
	db.tables = tablecache.New(fsys, dir, db.blockCache, o.MaxOpenFiles)
	db.tableRefs.Store(1) // the DB's own, dropped by Close
	db.memChunks = memtable.NewChunks(o.WriteBufferSize)
	rec, err := db.replayLogs()
	if err != nil {
		return nil, err
	}
	db.mu.mem = rec.mem // the DB's reference from here (abandon drops it)
	db.recovery = rec.report
	db.logRecovery()
	if o.ReadOnly {
		db.commit.lastSeq = rec.lastSeq
		db.visibleSeq.Store(rec.lastSeq)
		return db, nil
	}
	if err := db.finishRecovery(rec); err != nil {
		return nil, err
	}
	db.memChunks.Trim() // what the memtables replay wrote to tables held
	db.deleteObsoleteFiles()
	db.maybeUnmark() // a crash may have come between the last drop and the unmarking
	db.mu.Lock()
	if !rec.carryOff && rec.carryBytes >= db.flushCarriedAt() && !db.mu.mem.Empty() {
		// Compactions wait for the carried table, as in LevelDB, which
		// writes it inside Open: a compaction of level 0 that is due now
		// takes it along instead of leaving it behind in level 0 (with
		// older versions of its keys below it) for the next one.
		db.mu.carryFlushing = true
		// No writer runs yet: Open stands in for the commit leader.
		if err := db.switchMemtableLocked("open"); err != nil {
			db.mu.Unlock()
			return nil, err
		}
	}
	db.maybeScheduleLocked() // a database opened over its L0 trigger compacts
	db.mu.Unlock()
	if db.l0Tables.Load() > 0 {
		db.armIdle() // a database opened to be read compacts level 0 once idle
	}
	return db, nil
}

// lockDir creates the directory if needed and takes its LOCK.
func (db *DB) lockDir() error {
	if db.opts.ReadOnly {
		if _, err := db.fs.Stat(filename.Make(db.dir, filename.Current, 0)); err != nil {
			if stderrors.Is(err, fs.ErrNotExist) {
				return &noDatabaseError{dir: db.dir}
			}
			return errors.Wrap(err, "shale: open")
		}
	} else if err := db.checkDir(); err != nil {
		return err
	} else if err := db.createDir(); err != nil {
		return err
	}
	lockName := filename.Make(db.dir, filename.Lock, 0)
	if db.opts.ReadOnly {
		if _, err := db.fs.Stat(lockName); stderrors.Is(err, fs.ErrNotExist) {
			// A copy of a database may lack LOCK; a read-only Open
			// creates nothing, so it reads such a copy unlocked.
			db.lock = nopCloser{}
			return nil
		}
	}
	l, err := db.fs.Lock(lockName, db.opts.ReadOnly)
	if err != nil {
		if stderrors.Is(err, vfs.ErrLocked) {
			return &lockedError{dir: db.dir, here: stderrors.Is(err, vfs.ErrHeldHere)}
		}
		return errors.Wrap(err, "shale: lock database")
	}
	db.lock = l
	return nil
}

// createDir creates the database directory if it is missing, and then
// syncs its parent so that the new directory entry is durable.
func (db *DB) createDir() error {
	if _, err := db.fs.Stat(db.dir); err == nil {
		return nil
	}
	if err := db.fs.MkdirAll(db.dir, 0o755); err != nil {
		return errors.Wrap(err, "shale: create database directory")
	}
	parent, err := db.fs.OpenDir(filepath.Dir(filepath.Clean(db.dir)))
	if err != nil {
		return errors.Wrap(err, "shale: open parent directory")
	}
	err = parent.Sync()
	return errors.CombineErrors(errors.Wrap(err, "shale: sync parent directory"), parent.Close())
}

// loadVersions reads CURRENT and the MANIFEST it names, or creates a new
// database if there is no CURRENT.
func (db *DB) loadVersions() error {
	_, err := db.fs.Stat(filename.Make(db.dir, filename.Current, 0))
	switch {
	case err == nil:
		// Loaded read-only first: a database Open refuses is left as it was.
		if db.vs, err = manifest.Load(db.fs, db.dir, true); err != nil {
			break
		}
		if err = db.checkFilesAgainstManifest(); err == nil && !db.opts.ReadOnly {
			// Before anything new is written, the files no version
			// needs: what an earlier Open or a crash left behind (a
			// table of a flush whose edit never landed, logs already in
			// tables, old MANIFESTs) may be all the free space a full
			// disk has. A failed directory sync fails the Open.
			if err = db.removeObsolete(); err == nil {
				err = db.vs.StartWriting()
			}
		}
	case stderrors.Is(err, fs.ErrNotExist) && !db.opts.ReadOnly:
		if err := db.checkNoTables(); err != nil {
			return err
		}
		db.vs, err = manifest.Create(db.fs, db.dir)
	}
	return markCorruption(err)
}

// checkNoTables refuses to create a new database over the tables of an
// old one whose CURRENT is lost: that would orphan them (LevelDB's repair,
// not a silent new start, is the way back). A MANIFEST without CURRENT
// and without tables is what a crash inside the first Open leaves: it is
// removed and the database created anew, replaying every WAL present.
func (db *DB) checkNoTables() error {
	names, err := db.fs.List(db.dir)
	if err != nil {
		return errors.Wrap(err, "shale: list database directory")
	}
	var stray []string
	for _, name := range names {
		t, _, ok := filename.Parse(name)
		switch {
		case ok && t == filename.Table:
			return errors.Wrapf(ErrCorruption, "shale: %s has table %s but no CURRENT", db.dir, name)
		case ok && t == filename.Manifest:
			stray = append(stray, name)
		}
	}
	for _, name := range stray {
		if err := db.fs.Remove(filepath.Join(db.dir, name)); err != nil {
			return errors.Wrap(err, "shale: remove MANIFEST left without CURRENT")
		}
	}
	return nil
}

// finishRecovery makes the replayed writes durable, starts a new WAL,
// records both in the MANIFEST and retires the replayed logs (a log that
// had damage is moved to lost/, not deleted). Replayed writes go to a
// table, unless they are few (see carryLimit): then they are carried
// forward into the new WAL and stay in the memtable.
func (db *DB) finishRecovery(rec *replayResult) error {
	defer rec.carry.release()
	edit := rec.edit
	carry := !rec.mem.Empty() && !rec.carryOff
	if len(rec.mem.RangeDels()) > 0 && !db.vs.Marked() {
		// Written under the mark, which a MANIFEST rebuilt by another
		// tool may have lost: on again before a table or log holds them.
		if err := db.vs.SetMarked(true); err != nil {
			return err
		}
	}
	if !rec.mem.Empty() && !carry {
		meta, err := db.flushEvents("open", rec.mem, func(job int) (*manifest.FileMeta, error) {
			return db.writeTable(job, rec.mem.NewIter(), rec.mem.RangeDels(), 0)
		})
		if err != nil {
			return err
		}
		edit.AddFile(0, meta)
		rec.tableSeq = rec.lastSeq
	}
	if !carry { // the replayed writes are in the table: start empty
		db.mu.mem.Unref()
		db.mu.mem = memtable.NewLazy(db.memChunks, db.opts.WriteBufferSize)
	}
	if err := db.markForCompressedLogs(); err != nil {
		return err
	}
	log, err := db.createLog(db.vs.NewFileNum(), 0)
	if err != nil {
		return err
	}
	db.mu.log = log
	db.noteLogLocked(log) // no other goroutine runs yet
	if carry {
		if err := db.carryForward(log, &rec.carry); err != nil {
			return err
		}
		if len(rec.mem.RangeDels()) > 0 {
			db.mu.markedLogs[log.num] = struct{}{}
		}
	}
	edit.SetLogNumber(log.num)
	edit.SetPrevLogNumber(0)
	// The MANIFEST's last sequence stays below the records carried in the
	// new log (see flushMemtable); the flush of their memtable raises it.
	edit.SetLastSequence(rec.tableSeq)
	db.vs.SetLastSequence(rec.tableSeq)
	if err = db.logAndApply(edit); err != nil {
		// The new table and log stay if the edit may be on disk;
		// otherwise the failed Open removes them (removeOpenOutputs).
		db.openEditMayBeDurable = !errors.Is(err, manifest.ErrEditNotWritten)
		return err
	}
	db.openEditMayBeDurable = true
	for _, nf := range edit.NewFiles {
		db.releaseOutputNums(nf.Meta.Num)
	}
	if err := db.retireLogs(rec); err != nil {
		return err
	}
	db.commit.lastSeq = rec.lastSeq
	db.visibleSeq.Store(rec.lastSeq)
	return nil
}

// abandon releases what a failed Open acquired, and removes the files it
// wrote that no MANIFEST edit names.
func (db *DB) abandon() {
	if db.mu.log != nil {
		db.mu.log.close()
	}
	db.removeOpenOutputs()
	if db.mu.mem != nil {
		db.mu.mem.Unref()
	}
	if db.memChunks != nil {
		db.memChunks.Close()
	}
	if db.tables != nil {
		db.tables.Close()
	}
	if db.vs != nil {
		db.vs.Close()
	}
	db.events.close() // every event of the failed Open delivered
	db.closeInfoLog()
	db.lock.Close()
}

type nopCloser struct{}

func (nopCloser) Close() error { return nil }

// lockedError reports that another DB holds the directory: in another
// process, or (here) in this one.
type lockedError struct {
	dir  string
	here bool
}

func (e *lockedError) Error() string {
	if e.here {
		return "shale: database " + e.dir + " is already open in this process: Close that DB first, or share it"
	}
	return "shale: database " + e.dir + " is locked by another process"
}
func (e *lockedError) Is(target error) bool { return target == ErrLocked }

// noDatabaseError reports a read-only Open, or one with ErrorIfNotExists,
// of a directory with no database.
type noDatabaseError struct{ dir string }

func (e *noDatabaseError) Error() string        { return "shale: no database in " + e.dir }
func (e *noDatabaseError) Is(target error) bool { return target == fs.ErrNotExist }

// removeOpenOutputs removes, when Open fails, the tables and the log it
// wrote, unless the edit that names them may be on disk: the tables of
// the replayed records (still among the pending outputs until that edit
// is applied) and the new WAL. The logs they came from are still there,
// so the next Open replays them again; without this each failed Open on
// a full disk would leave another table behind.
func (db *DB) removeOpenOutputs() {
	if db.openEditMayBeDurable || db.opts.ReadOnly || db.vs == nil {
		return
	}
	var nums []uint64
	db.mu.Lock()
	for num := range db.mu.pendingOutputs {
		nums = append(nums, num)
	}
	db.mu.pendingOutputs = make(map[uint64]struct{})
	db.mu.Unlock()
	removed := false
	for _, num := range nums {
		if db.tables != nil {
			db.tables.Evict(num)
		}
		if err := db.removeTable(0, num); err == nil {
			removed = true
		}
	}
	if db.mu.log != nil && db.removeLog(0, db.mu.log.num) == nil {
		removed = true
	}
	if removed {
		_ = db.syncDir() // best effort: a removal that is lost is redone by the next Open
	}
}
