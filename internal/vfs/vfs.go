// Package vfs is the small file-system interface that the database does all
// its I/O through, so that tests can substitute an in-memory file system that
// forgets what was never made durable.
//
// # Use
//
// OS returns the real file system; NewMem returns an in-memory one for tests.
// Code takes an FS and never calls the os package for files itself:
//
//	f, err := fs.Create(filepath.Join(dir, "000001.log"))
//	... f.Write(rec); f.Sync() ...
//	d, err := fs.OpenDir(dir) // then d.Sync() makes the new entry durable
//
// # Durability
//
// File.Sync makes a file's contents durable: fdatasync on Linux, F_FULLFSYNC
// on macOS (fsync where the file system does not support it), FlushFileBuffers
// on Windows. A new, renamed or removed directory entry is durable only once
// the directory itself is synced (OpenDir, then Sync; a no-op on Windows,
// whose file systems do not expose that step). MemFS models exactly this; see
// MemFS.CrashClone and MemFS.CrashCloneWith.
//
// # Locking
//
// FS.Lock guards a database directory. It never waits: a lock that is held
// fails at once with an error matching ErrLocked. On Linux the OS
// implementation takes both a flock lock (what goleveldb takes) and an fcntl
// record lock (what LevelDB takes), because Linux does not make the two
// exclude each other; on macOS and the BSDs a flock lock alone excludes both
// kinds. Every platform also keeps an in-process registry, so a second Lock of
// the same file in this process fails even where the kernel would allow it.
//
// # Concurrency
//
// Implementations are safe for concurrent use; a File is safe for concurrent
// ReadAt, and otherwise used by one goroutine at a time.
package vfs

import (
	"io"
	"os"

	"github.com/cockroachdb/errors"
)

// ErrLocked is matched (with the standard errors.Is) by the error FS.Lock
// returns when another holder, in this process or another, has the lock.
var ErrLocked = errors.New("vfs: lock held")

// ErrHeldHere is matched, beside ErrLocked, by the error of a Lock that
// this process holds already (another DB of this process has the
// directory open).
var ErrHeldHere = errors.New("vfs: lock held by this process")

// heldHere marks err (which matches ErrLocked) as ErrHeldHere too.
type heldHere struct{ err error }

func (e *heldHere) Error() string        { return e.err.Error() }
func (e *heldHere) Unwrap() error        { return e.err }
func (e *heldHere) Is(target error) bool { return target == ErrHeldHere }

// File is an open file.
type File interface {
	io.Reader
	io.ReaderAt
	io.Writer
	io.Closer
	// Sync makes the file's data durable: fdatasync on Linux, F_FULLFSYNC
	// on macOS. On a directory opened with OpenDir it makes the directory's
	// entries durable.
	Sync() error
	// Stat returns the file's metadata; only Size is relied upon.
	Stat() (os.FileInfo, error)
}

// FS is a file system. Names are paths as the os package takes them.
type FS interface {
	// Create creates name for writing, truncating it if it exists.
	Create(name string) (File, error)
	// Open opens name for reading.
	Open(name string) (File, error)
	// OpenDir opens a directory so that Sync can make its entries durable.
	OpenDir(name string) (File, error)
	// Remove removes a file or an empty directory.
	Remove(name string) error
	// Rename renames oldname to newname, replacing newname atomically.
	Rename(oldname, newname string) error
	// Link makes newname a hard link to the file oldname: a second
	// directory entry for the same file, whose contents the two names then
	// share. It fails if newname exists. Like any new entry, newname is
	// durable only once its directory is synced.
	Link(oldname, newname string) error
	// MkdirAll creates dir and any missing parents.
	MkdirAll(dir string, perm os.FileMode) error
	// List returns the names (not paths) of the entries in dir, sorted.
	List(dir string) ([]string, error)
	// Stat returns the metadata of name.
	Stat(name string) (os.FileInfo, error)
	// Lock takes the lock file name, creating it if needed. shared takes a
	// read lock (other shared holders allowed, no exclusive one); otherwise
	// the lock is exclusive. It fails at once, never waits, with an error
	// matching ErrLocked if the lock is held. Closing the returned Closer
	// releases the lock.
	Lock(name string, shared bool) (io.Closer, error)
}

// WatchSync returns f with its Sync run through watch, which must call the
// sync it is given and return its error (to time it, say). AppendTo sees
// through the result to f: its caller watches the Appender's syncs.
func WatchSync(f File, watch func(sync func() error) error) File {
	return &watchedFile{File: f, watch: watch}
}

type watchedFile struct {
	File
	watch func(func() error) error
}

func (w *watchedFile) Sync() error { return w.watch(w.File.Sync) }
