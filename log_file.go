package shale

import (
	"github.com/cockroachdb/errors"
	"github.com/shale-db/shale/internal/filename"
	"github.com/shale-db/shale/internal/vfs"
	"github.com/shale-db/shale/wal"
)

// logFile is the write-ahead log that the memtable's writes go to.
type logFile struct {
	num uint64
	f   vfs.File
	w   *wal.Writer
}

// createLog creates WAL number num and makes its directory entry durable,
// so that a Sync write to it survives a power loss.
func (db *DB) createLog(num uint64) (*logFile, error) {
	name := filename.Make(db.dir, filename.Log, num)
	f, err := db.fs.Create(name)
	if err != nil {
		return nil, errors.Wrap(err, "shale: create log")
	}
	if err := db.syncDir(); err != nil {
		return nil, errors.CombineErrors(err, f.Close())
	}
	return &logFile{num: num, f: f, w: wal.NewWriter(f)}, nil
}

// append writes one record to the OS.
func (l *logFile) append(repr []byte) error {
	if err := l.w.WriteRecord(repr); err != nil {
		return errors.Wrapf(err, "shale: write log %06d", l.num)
	}
	if err := l.w.Flush(); err != nil {
		return errors.Wrapf(err, "shale: write log %06d", l.num)
	}
	return nil
}

// sync makes what was appended durable.
func (l *logFile) sync() error {
	if err := l.f.Sync(); err != nil {
		return errors.Wrapf(err, "shale: sync log %06d", l.num)
	}
	return nil
}

// close flushes, syncs and closes the log. Syncing a retiring log keeps the
// order of writes across logs: a later log's synced writes are never
// durable without the earlier log's.
func (l *logFile) close() error {
	err := l.w.Flush()
	if err == nil {
		err = l.f.Sync()
	}
	return errors.CombineErrors(err, l.f.Close())
}

// syncDir makes the directory's entries (creations, renames, deletions)
// durable.
func (db *DB) syncDir() error { return db.syncDirPath(db.dir) }

// syncDirPath makes the entries of directory dir durable.
func (db *DB) syncDirPath(dir string) error {
	d, err := db.fs.OpenDir(dir)
	if err != nil {
		return errors.Wrap(err, "shale: open directory")
	}
	err = d.Sync()
	return errors.CombineErrors(errors.Wrap(err, "shale: sync directory"), d.Close())
}
