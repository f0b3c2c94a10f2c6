//go:build darwin || dragonfly || freebsd || netbsd || openbsd

package vfs

import (
	"os"
	"syscall"

	"github.com/cockroachdb/errors"
)

// lockFile takes a non-blocking flock lock on f. On macOS and the BSDs, flock
// and fcntl locks live in one per-file list and conflict with each other
// (the owner of a flock lock is the open file, that of an fcntl lock the
// process), so this one lock excludes goleveldb (flock) and LevelDB (fcntl
// F_SETLK) alike. Taking an fcntl lock as well would conflict with our own
// flock lock. A held lock gives an error matching ErrLocked.
func lockFile(f *os.File, shared bool) error {
	how := syscall.LOCK_EX
	if shared {
		how = syscall.LOCK_SH
	}
	err := withFd(f, func(fd uintptr) error {
		return ignoringEINTR(func() error { return syscall.Flock(int(fd), how|syscall.LOCK_NB) })
	})
	if err == syscall.EWOULDBLOCK || err == syscall.EAGAIN {
		return errors.Wrapf(ErrLocked, "vfs: lock %s: flock", f.Name())
	}
	if errno, ok := err.(syscall.Errno); ok {
		return &os.PathError{Op: "flock", Path: f.Name(), Err: errno}
	}
	return err
}

// releaseFile releases the lock on f by closing it.
func releaseFile(f *os.File) error { return f.Close() }

// syncFile makes f's data durable. On macOS os.File.Sync issues
// fcntl(F_FULLFSYNC), which asks the drive to flush its cache, and falls back
// to fsync where the file system does not support it (ENOTSUP, e.g. SMB);
// other errors are returned, not papered over by a weaker fsync. On the BSDs
// it is fsync.
func syncFile(f *os.File) error { return f.Sync() }

// syncDir makes a directory's entries durable, as syncFile does for data.
func syncDir(f *os.File) error { return f.Sync() }
