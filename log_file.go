package shale

import (
	"io"
	"sync/atomic"

	"github.com/cockroachdb/errors"
	"github.com/shale-db/shale/internal/filename"
	"github.com/shale-db/shale/internal/vfs"
	"github.com/shale-db/shale/wal"
)

// logFile is the write-ahead log that the memtable's writes go to.
type logFile struct {
	num uint64
	f   vfs.File
	// app, if not nil, is how w appends to f: one pwritev a fragment,
	// into space reserved ahead (see vfs.Appender). Either way an
	// appended record is in the kernel's page cache when append returns,
	// and a failure the file system reports fails the append.
	app  vfs.Appender
	w    *wal.Writer
	opts []wal.WriterOption // the Writer's: CompressRecords with Options.WALCompression
	size atomic.Int64       // bytes appended, for metrics

	// prev is the WAL this one took over from, retired in the background
	// (nil once the log was created ready). ready is closed when every
	// earlier WAL is finished (cut to its records and closed) and this
	// one's directory entry is durable; readyErr then says whether that
	// failed.
	prev     *logFile
	ready    chan struct{}
	readyErr error

	path string
	disk *diskMonitor // times the Appender's syncs; nil: not timed
}

// An Appender takes the log's fragments one at a time, from the Writer's
// caller's buffers.
var _ wal.FragmentWriter = vfs.Appender(nil)

// createLog creates WAL number num and makes its directory entry durable,
// so that a Sync write to it survives a power loss.
func (db *DB) createLog(num uint64, job int) (*logFile, error) {
	l, err := db.openLog(num, job)
	if err != nil {
		return nil, err
	}
	if err := db.syncDir(); err != nil {
		// finish releases the mapping an Appender holds.
		return nil, errors.CombineErrors(err, errors.CombineErrors(l.finish(), l.f.Close()))
	}
	l.setReady(nil)
	return l, nil
}

// openLog creates WAL number num, not yet ready: its directory entry is
// not durable until setReady.
func (db *DB) openLog(num uint64, job int) (*logFile, error) {
	name := filename.Make(db.dir, filename.Log, num)
	f, err := db.fs.Create(name)
	db.events.walCreated(WALCreateInfo{JobID: job, Path: name, FileNum: num, Err: err})
	if err != nil {
		return nil, errors.Wrap(err, "shale: create log")
	}
	l := &logFile{num: num, f: f, ready: make(chan struct{}), path: name, disk: db.events.diskMonitor()}
	if db.opts.WALCompression {
		// The caller notes it in markedLogs (see rangedel_mark.go).
		l.opts = []wal.WriterOption{wal.CompressRecords()}
	}
	if l.app, err = vfs.AppendTo(f); err != nil {
		return nil, errors.CombineErrors(errors.Wrap(err, "shale: create log"), f.Close())
	}
	if l.app != nil {
		l.w = wal.NewWriter(l.app, l.opts...)
	} else {
		l.w = wal.NewWriter(f, l.opts...)
	}
	return l, nil
}

// setReady records that the log's predecessors are synced and its entry
// durable (err nil), or that making them so failed. Called once.
func (l *logFile) setReady(err error) {
	l.readyErr = err
	l.prev = nil // let the retired log go
	close(l.ready)
}

// waitReady waits until setReady and returns its error.
func (l *logFile) waitReady() error {
	<-l.ready
	return l.readyErr
}

// append writes one record to the OS.
func (l *logFile) append(repr []byte) error {
	if err := l.w.WriteRecord(repr); err != nil {
		return errors.Wrapf(err, "shale: write log %06d", l.num)
	}
	if err := l.w.Flush(); err != nil {
		return errors.Wrapf(err, "shale: write log %06d", l.num)
	}
	l.size.Store(l.w.Size())
	return nil
}

// appendAll writes every record each gives, in order, as append would one
// at a time, but hands the OS whole blocks: Open carries up to a megabyte
// of records forward, which would otherwise take a write call a record.
func (l *logFile) appendAll(each func(fn func(rec []byte) error) error) error {
	w := l.w
	if l.app != nil {
		// Without WriteFragment in view, the Writer buffers whole blocks
		// and writes them.
		w = wal.NewWriterAt(struct{ io.Writer }{l.app}, l.w.Size(), l.opts...)
	}
	err := each(w.WriteRecord)
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		return errors.Wrapf(err, "shale: write log %06d", l.num)
	}
	if l.app != nil {
		l.w = wal.NewWriterAt(l.app, w.Size(), l.opts...)
	}
	l.size.Store(w.Size())
	return nil
}

// sync makes what was appended durable, with every earlier WAL (each was
// synced before its successor took a write, and is finished once this
// log is ready).
func (l *logFile) sync() error {
	if err := l.waitReady(); err != nil {
		return err
	}
	if err := l.syncData(); err != nil {
		return errors.Wrapf(err, "shale: sync log %06d", l.num)
	}
	return nil
}

func (l *logFile) syncData() error {
	if l.app != nil {
		return l.disk.time(l.path, "sync", l.app.Sync)
	}
	return l.f.Sync()
}

// finish ends the appends to a log: what is buffered reaches the OS and
// the file is cut to what was appended. The file stays open.
func (l *logFile) finish() error {
	err := l.w.Flush()
	if l.app != nil {
		err = errors.CombineErrors(err, l.app.Finish())
	}
	return err
}

// retire finishes and closes a log that a newer one took over from. It
// was made durable before the newer one took a write (see
// DB.syncBeforeSwitch), so its file is needed no more until recovery.
func (l *logFile) retire() error {
	err := l.finish()
	return errors.CombineErrors(err, l.f.Close())
}

// close finishes, syncs and closes the current log, at Close.
func (l *logFile) close() error {
	err := l.finish()
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
