package vfs

import (
	"errors"
	"io"
	"os"
	"syscall"
)

// OS returns the real file system. Its errors are the os package's
// (*os.PathError and friends), so errors.Is(err, os.ErrNotExist) works.
func OS() FS { return osFS{} }

// osFS is the FS of the os package, with the platform's durable Sync and
// non-blocking, in-process-aware Lock.
type osFS struct{}

var _ FS = osFS{}

// osFile is an *os.File whose Sync is the platform's durable one.
type osFile struct {
	*os.File
	// dir is set for files opened with OpenDir: Sync then makes the
	// directory's entries durable instead of a file's data.
	dir bool
}

var _ File = (*osFile)(nil)

// Sync makes the file's data (or, for a directory, its entries) durable.
func (f *osFile) Sync() error {
	if f.dir {
		return syncDir(f.File)
	}
	return syncFile(f.File)
}

// Create creates name read-write (mode 0644 before umask), truncating it if
// it exists.
func (osFS) Create(name string) (File, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	return &osFile{File: f}, nil
}

// Open opens name read-only.
//
// Open refuses anything but a regular file (a FIFO, a device, a directory)
// with an error wrapping ErrNotRegular: the engine reads only its own
// files, and a FIFO in their place would otherwise block the open, and
// with it Open or Repair, until something writes to it. The file is opened
// without blocking (O_NONBLOCK, which regular files ignore), then checked.
func (osFS) Open(name string) (File, error) {
	f, err := os.OpenFile(name, os.O_RDONLY|openNonblock, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, &os.PathError{Op: "open", Path: name, Err: ErrNotRegular}
	}
	return &osFile{File: f}, nil
}

// ErrNotRegular is the error of an Open of something other than a regular
// file.
var ErrNotRegular = errors.New("not a regular file")

// OpenDir opens the directory name; it fails if name is not a directory.
func (osFS) OpenDir(name string) (File, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.IsDir() {
		f.Close()
		return nil, &os.PathError{Op: "opendir", Path: name, Err: syscall.ENOTDIR}
	}
	return &osFile{File: f, dir: true}, nil
}

// Remove removes a file or an empty directory.
func (osFS) Remove(name string) error { return os.Remove(name) }

// Rename renames oldname to newname, atomically replacing newname.
func (osFS) Rename(oldname, newname string) error { return os.Rename(oldname, newname) }

// Link makes newname a hard link to oldname.
func (osFS) Link(oldname, newname string) error { return os.Link(oldname, newname) }

// MkdirAll creates dir and any missing parents with mode perm.
func (osFS) MkdirAll(dir string, perm os.FileMode) error { return os.MkdirAll(dir, perm) }

// Stat returns the metadata of name.
func (osFS) Stat(name string) (os.FileInfo, error) { return os.Stat(name) }

// List returns the names of the entries in dir, sorted.
func (osFS) List(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir) // sorted by name
	if err != nil {
		return nil, err
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	return names, nil
}

// Lock takes the lock file name; see FS.Lock and the package doc.
func (osFS) Lock(name string, shared bool) (io.Closer, error) {
	return lockOS(name, shared)
}
