package shale

import (
	"path/filepath"
	"sync/atomic"

	"github.com/cockroachdb/errors"
	"github.com/shale-db/shale/internal/filename"
)

// deleteObsoleteFiles removes the files no live version needs: WALs older
// than the MANIFEST's log number, tables that no version references,
// MANIFESTs other than the current one (last, once no table a compaction
// replaced is left), and leftover temporary files (those numbered below
// the current MANIFEST).
// Files it does not recognise (goleveldb's CURRENT.bak, LOG.old, the lost/
// directory) are left alone. A failed removal is logged, not returned: a
// file left behind is retried at the next call. A failed directory sync
// stops writes (setBackgroundError).
//
// Tables being written (by a flush or a compaction) are spared through
// pendingOutputs. The order of the reads matters: the directory first,
// then the MANIFEST's numbers, then pendingOutputs, then the live
// versions. A table in the listing was registered as pending before it was
// created, and leaves pendingOutputs only after its edit made it part of a
// version, so one of the two reads sees it. A table whose edit failed to
// reach the MANIFEST never leaves pendingOutputs: the edit may be on disk
// all the same. The MANIFEST number is read before the live versions: a
// MANIFEST older than it was replaced before they were read, so a table
// whose deletion only such a MANIFEST records is either in held (and the
// MANIFESTs stay) or removed here; read after them, a switch in between
// could remove the only MANIFEST recording the deletion of a table
// replaced since, still on disk, which Repair would then merge. Calls are
// serialized.
func (db *DB) deleteObsoleteFiles() {
	if err := db.removeObsolete(); err != nil {
		db.setBackgroundError(err)
	}
}

// removeObsolete is deleteObsoleteFiles, returning the error of the
// directory sync after the removals instead of stopping writes with it.
func (db *DB) removeObsolete() error {
	db.deleteMu.Lock()
	defer db.deleteMu.Unlock()
	names, err := db.fs.List(db.dir)
	if err != nil {
		db.opts.Logger.Warn("shale: list directory for obsolete files", "err", err)
		return nil
	}
	logNum, prevLogNum, manifestNum := db.vs.LogNumber(), db.vs.PrevLogNumber(), db.vs.ManifestNumber()
	if hook := testHookBetweenObsoleteReads.Load(); hook != nil {
		(*hook)()
	}
	live := make(map[uint64]struct{})
	db.mu.Lock()
	for num := range db.mu.pendingOutputs {
		live[num] = struct{}{}
	}
	db.mu.Unlock()
	held := db.vs.LiveFiles()
	for num := range held {
		live[num] = struct{}{}
	}
	// What remains of held after this is the tables a compaction replaced
	// that an older version (an iterator, a snapshot) still reads.
	v := db.vs.Current()
	for _, files := range v.Levels {
		for _, f := range files {
			delete(held, f.Num)
		}
	}
	v.Unref()
	// Old MANIFESTs go last, and only once no replaced table is left: the
	// edit that records a table as replaced is what tells Repair, after a
	// crash, that the table is stale (its versions older than those its
	// compaction wrote with sequence number zero).
	keepManifests := len(held) > 0
	var manifests []string
	removed := false
	job := db.events.newJob()
	remove := func(name string) bool {
		path := filepath.Join(db.dir, name)
		err := db.fs.Remove(path)
		switch t, num, _ := filename.Parse(name); t {
		case filename.Log:
			db.events.walDeleted(WALDeleteInfo{JobID: job, Path: path, FileNum: num, Err: err})
		case filename.Table:
			db.events.tableDeleted(TableDeleteInfo{JobID: job, Path: path, FileNum: num, Err: err})
		}
		if err != nil {
			db.opts.Logger.Warn("shale: remove obsolete file", "file", name, "err", err)
			return false
		}
		removed = true
		return true
	}
	for _, name := range names {
		t, num, ok := filename.Parse(name)
		if !ok {
			continue
		}
		switch t {
		case filename.Log:
			if num < logNum && num != prevLogNum {
				remove(name)
			}
		case filename.Table:
			if _, isLive := live[num]; !isLive {
				if db.tables != nil { // nil in Open's pass before replay
					db.tables.Evict(num)
				}
				keepManifests = !remove(name) || keepManifests
			}
		case filename.Manifest:
			if num < manifestNum {
				manifests = append(manifests, name)
			}
		case filename.Temp:
			// CURRENT's temporary file, named for the MANIFEST it will
			// name: one above the current MANIFEST may be a switch
			// under way (Options.MaxManifestFileSize).
			if num < manifestNum {
				remove(name)
			}
		}
	}
	if !keepManifests {
		for _, name := range manifests {
			remove(name)
		}
	}
	if removed {
		if err := db.syncDir(); err != nil {
			// The removals themselves may be lost harmlessly, but the
			// file system failed to make the directory durable, and a
			// later sync on a new descriptor need not say so again: a
			// new WAL's entry could then be lost behind a sync that
			// succeeded. Writes stop, as after any failed sync.
			return errors.Wrap(err, "shale: sync directory after removing obsolete files")
		}
	}
	return nil
}

// testHookBetweenObsoleteReads, if set, runs in deleteObsoleteFiles
// between its read of the MANIFEST's numbers and its read of the live
// versions, where a compaction and a MANIFEST switch can come.
var testHookBetweenObsoleteReads atomic.Pointer[func()]

// noteManifestRoll logs a switch to a new MANIFEST (see
// Options.MaxManifestFileSize); the old one is deleted with the other
// obsolete files.
func (db *DB) noteManifestRoll(oldNum, newNum uint64, oldSize int64, err error) {
	old := filename.Name(filename.Manifest, oldNum)
	if newNum == 0 {
		db.opts.Logger.Warn("shale: could not start a new MANIFEST", "manifest", old, "size", oldSize, "err", err)
		return
	}
	if err != nil {
		db.opts.Logger.Warn("shale: started a new MANIFEST; closing the old one failed", "old", old, "err", err)
	}
	db.opts.Logger.Info("shale: started a new MANIFEST", "old", old, "size", oldSize, "new", filename.Name(filename.Manifest, newNum))
	db.manifestSwitches.Add(1)
}
