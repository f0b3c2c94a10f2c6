package manifest

import (
	"path/filepath"

	"github.com/cockroachdb/errors"
	"github.com/shale-db/shale/internal/filename"
	"github.com/shale-db/shale/internal/vfs"
	"github.com/shale-db/shale/wal"
)

// State returns a consistent view of the set for a copy of the database:
// the current Version (with a reference the caller must release with
// Unref), the log number and the last sequence number recorded with it.
// It waits for a LogAndApply under way, so that the three belong to the
// same edit.
func (vs *VersionSet) State() (v *Version, logNumber, lastSeq uint64) {
	vs.logMu.Lock()
	defer vs.logMu.Unlock()
	return vs.Current(), vs.LogNumber(), vs.lastSeq.Load()
}

// DirState is what WriteState records in a new MANIFEST.
type DirState struct {
	// Version holds the tables; only its Levels are read.
	Version *Version
	// LogNumber is the oldest WAL the state needs: WALs at or after it
	// are replayed on Open.
	LogNumber uint64
	// LastSequence must be at least every sequence number in the tables
	// and below every record of the WALs at or after LogNumber.
	LastSequence uint64
	// ManifestNum is the new MANIFEST's number; NextFileNumber must be
	// above it and above every table and WAL number in the directory.
	ManifestNum, NextFileNumber uint64
	// Marked puts the mark on (MarkedComparator): the directory's logs
	// may hold range deletions. A Version with a table that holds some
	// is marked whatever Marked says.
	Marked bool
}

// WriteState writes MANIFEST-<ManifestNum> into dir holding one snapshot
// edit of st, syncs it and the directory, then points CURRENT at it
// atomically and durably. dir is another database's directory (a
// checkpoint, a repaired directory); the set that writes it is not needed.
func WriteState(fsys vfs.FS, dir string, st DirState) error {
	if st.NextFileNumber <= st.ManifestNum {
		return errors.Newf("manifest: next file number %d not above the MANIFEST's %d", st.NextFileNumber, st.ManifestNum)
	}
	e := new(VersionEdit)
	e.SetComparator(BytewiseComparator)
	if st.Marked || st.Version.HasRangeDels() {
		e.SetComparator(MarkedComparator)
	}
	e.SetLogNumber(st.LogNumber)
	e.SetPrevLogNumber(0)
	e.SetNextFileNumber(st.NextFileNumber)
	e.SetLastSequence(st.LastSequence)
	for level, files := range st.Version.Levels {
		for _, f := range files {
			e.AddFile(level, f)
		}
	}
	path := filename.Make(dir, filename.Manifest, st.ManifestNum)
	f, err := fsys.Create(path)
	if err != nil {
		return errors.Wrapf(err, "manifest: create %s", filepath.Base(path))
	}
	err = writeSynced(wal.NewWriter(f), f, e.Encode(nil))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return errors.Wrapf(err, "manifest: write %s", filepath.Base(path))
	}
	if err := syncDir(fsys, dir); err != nil {
		return err
	}
	_, err = setCurrent(fsys, dir, st.ManifestNum)
	return err
}
