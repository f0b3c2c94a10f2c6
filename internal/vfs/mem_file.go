package vfs

import (
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/cockroachdb/errors"
)

// memFile is an open MemFS file or directory. Its fields other than fs, n
// and name are guarded by fs.mu, as is everything n points to.
type memFile struct {
	fs       *MemFS
	n        *memNode
	name     string
	writable bool  // opened by Create
	pos      int64 // offset of the next Read or Write
	closed   bool
}

var _ File = (*memFile)(nil)

// checkLocked returns the error for op on this handle, if op cannot run.
func (f *memFile) checkLocked(op string) error {
	switch {
	case f.closed:
		return &fs.PathError{Op: op, Path: f.name, Err: fs.ErrClosed}
	case f.n.dir && (op == "read" || op == "write"):
		return &fs.PathError{Op: op, Path: f.name, Err: syscall.EISDIR}
	case op == "write" && !f.writable:
		return &fs.PathError{Op: op, Path: f.name, Err: syscall.EBADF}
	}
	return nil
}

// Read reads from the current offset; it returns io.EOF at the end.
func (f *memFile) Read(p []byte) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.checkLocked("read"); err != nil {
		return 0, err
	}
	if f.pos >= int64(len(f.n.data)) {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	n := copy(p, f.n.data[f.pos:])
	f.pos += int64(n)
	return n, nil
}

// ReadAt reads len(p) bytes at off, or fewer and io.EOF at the end. It is
// safe to call concurrently.
func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.checkLocked("read"); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, &fs.PathError{Op: "readat", Path: f.name, Err: syscall.EINVAL}
	}
	if off >= int64(len(f.n.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.n.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// Write writes p at the current offset, growing the file as needed.
func (f *memFile) Write(p []byte) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.checkLocked("write"); err != nil {
		return 0, err
	}
	f.n.write(f.pos, p)
	f.pos += int64(len(p))
	return len(p), nil
}

// write puts p at off in the live contents. It never changes bytes in
// place: synced may share the array, so an overwrite copies it first.
func (n *memNode) write(off int64, p []byte) {
	size := int64(len(n.data))
	switch {
	case off == size:
		n.data = append(n.data, p...)
		return
	case off < size:
		n.data = slices.Clone(n.data)
		n.rewritten = n.rewritten || off < int64(len(n.synced))
	default:
		n.data = append(n.data, make([]byte, off-size)...) // a hole reads as zeros
	}
	if end := off + int64(len(p)); end > int64(len(n.data)) {
		n.data = append(n.data, make([]byte, end-int64(len(n.data)))...)
	}
	copy(n.data[off:], p)
}

// Sync makes the file's live contents, or the directory's live entries,
// durable.
func (f *memFile) Sync() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.checkLocked("sync"); err != nil {
		return err
	}
	if f.n.dir {
		f.n.durable = maps.Clone(f.n.children)
	} else {
		f.n.synced = f.n.data[:len(f.n.data):len(f.n.data)]
		f.n.rewritten = false
	}
	return nil
}

// Stat returns the file's metadata; Size is the live size.
func (f *memFile) Stat() (os.FileInfo, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.checkLocked("stat"); err != nil {
		return nil, err
	}
	return f.n.infoLocked(f.name), nil
}

// Close closes the handle; a second Close returns an error, as os.File's does.
func (f *memFile) Close() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.checkLocked("close"); err != nil {
		return err
	}
	f.closed = true
	return nil
}

// infoLocked describes n, found at path name.
func (n *memNode) infoLocked(name string) os.FileInfo {
	fi := &memFileInfo{name: filepath.Base(filepath.Clean(name)), size: int64(len(n.data)), mode: 0o644}
	if n.dir {
		fi.size, fi.mode = 0, fs.ModeDir|0o755
	}
	return fi
}

// memFileInfo is the os.FileInfo of a MemFS file; ModTime is always zero.
type memFileInfo struct {
	name string
	size int64
	mode fs.FileMode
}

func (fi *memFileInfo) Name() string       { return fi.name }
func (fi *memFileInfo) Size() int64        { return fi.size }
func (fi *memFileInfo) Mode() fs.FileMode  { return fi.mode }
func (fi *memFileInfo) ModTime() time.Time { return time.Time{} }
func (fi *memFileInfo) IsDir() bool        { return fi.mode.IsDir() }
func (fi *memFileInfo) Sys() any           { return nil }

// memLockHandle is one successful MemFS.Lock.
type memLockHandle struct {
	fs     *MemFS
	n      *memNode
	closed bool // guarded by fs.mu
}

// Close releases this hold on the lock; closing twice is harmless.
func (h *memLockHandle) Close() error {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if h.closed {
		return nil
	}
	h.closed = true
	if l := h.fs.mu.locks[h.n]; l != nil {
		if l.refs--; l.refs == 0 {
			delete(h.fs.mu.locks, h.n)
		}
	}
	return nil
}

// lockedError is the error for a MemFS lock that is held.
func lockedError(name string) error {
	return &heldHere{errors.Wrapf(ErrLocked, "vfs: lock %s: held", name)} // a MemFS lives in one process
}
