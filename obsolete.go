package shale

import (
	"path/filepath"

	"github.com/shale-db/shale/internal/filename"
)

// deleteObsoleteFiles removes the files no live version needs: WALs older
// than the MANIFEST's log number, tables that no version references,
// MANIFESTs other than the current one, and leftover temporary files
// (those numbered below the current MANIFEST).
// Files it does not recognise (goleveldb's CURRENT.bak, LOG.old, the lost/
// directory) are left alone. Failures are logged, not returned: a file left
// behind is retried at the next call.
//
// Tables being written (by a flush or a compaction) are spared through
// pendingOutputs. The order of the reads matters: the directory first,
// then pendingOutputs, then the live versions. A table in the listing was
// registered as pending before it was created, and leaves pendingOutputs
// only after its edit made it part of a version, so one of the two reads
// sees it. A table whose edit failed to reach the MANIFEST never leaves
// pendingOutputs: the edit may be on disk all the same. Calls are
// serialized.
func (db *DB) deleteObsoleteFiles() {
	db.deleteMu.Lock()
	defer db.deleteMu.Unlock()
	names, err := db.fs.List(db.dir)
	if err != nil {
		db.opts.Logger.Warn("shale: list directory for obsolete files", "err", err)
		return
	}
	live := make(map[uint64]struct{})
	db.mu.Lock()
	for num := range db.mu.pendingOutputs {
		live[num] = struct{}{}
	}
	db.mu.Unlock()
	for num := range db.vs.LiveFiles() {
		live[num] = struct{}{}
	}
	logNum, prevLogNum, manifestNum := db.vs.LogNumber(), db.vs.PrevLogNumber(), db.vs.ManifestNumber()
	removed := false
	for _, name := range names {
		t, num, ok := filename.Parse(name)
		if !ok {
			continue
		}
		var obsolete bool
		switch t {
		case filename.Log:
			obsolete = num < logNum && num != prevLogNum
		case filename.Table:
			_, isLive := live[num]
			obsolete = !isLive
		case filename.Manifest:
			obsolete = num < manifestNum
		case filename.Temp:
			// CURRENT's temporary file, named for the MANIFEST it will
			// name: one above the current MANIFEST may be a switch
			// under way (Options.MaxManifestFileSize).
			obsolete = num < manifestNum
		}
		if !obsolete {
			continue
		}
		if t == filename.Table {
			db.tables.Evict(num)
		}
		if err := db.fs.Remove(filepath.Join(db.dir, name)); err != nil {
			db.opts.Logger.Warn("shale: remove obsolete file", "file", name, "err", err)
			continue
		}
		removed = true
	}
	if removed {
		if err := db.syncDir(); err != nil {
			db.opts.Logger.Warn("shale: sync directory after removing files", "err", err)
		}
	}
}

// noteManifestRoll logs a switch to a new MANIFEST (see
// Options.MaxManifestFileSize); the old one is deleted with the other
// obsolete files.
func (db *DB) noteManifestRoll(oldNum, newNum uint64, oldSize int64, err error) {
	old := filename.Name(filename.Manifest, oldNum)
	if err != nil {
		db.opts.Logger.Warn("shale: could not start a new MANIFEST", "manifest", old, "size", oldSize, "err", err)
		return
	}
	db.opts.Logger.Info("shale: started a new MANIFEST", "old", old, "size", oldSize, "new", filename.Name(filename.Manifest, newNum))
	db.manifestSwitches.Add(1)
}
