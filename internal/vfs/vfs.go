// Package vfs is the small file-system interface that the database does all
// its I/O through, so that tests can substitute an in-memory file system and,
// later, one that injects faults or drops unsynced data.
//
// OS returns the real file system. NewMem returns an in-memory one.
// Implementations are safe for concurrent use; a File is safe for concurrent
// ReadAt, and otherwise used by one goroutine at a time.
package vfs

import (
	"io"
	"os"

	"github.com/cockroachdb/errors"
)

// ErrLocked is returned by FS.Lock when another holder (this process or
// another) has the lock.
var ErrLocked = errors.New("vfs: lock held by another process")

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
