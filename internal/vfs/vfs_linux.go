//go:build linux

package vfs

import (
	"os"
	"syscall"

	"github.com/cockroachdb/errors"
)

// fOFDSetlk is F_OFD_SETLK (Linux 3.15+), missing from package syscall. An
// open-file-description lock conflicts with classic fcntl locks (LevelDB's
// F_SETLK) like one, but belongs to the open file rather than the process:
// it conflicts with another descriptor in this process too, and closing some
// other descriptor of the file does not drop it.
const fOFDSetlk = 37

// lockFile takes a non-blocking flock lock (excluding goleveldb, which uses
// flock) and then a non-blocking fcntl record lock on the whole file
// (excluding LevelDB, which uses F_SETLK; Linux keeps the two kinds apart).
// A held lock gives an error matching ErrLocked. On failure f is left open,
// possibly holding the flock lock; closing f releases it.
func lockFile(f *os.File, shared bool) error {
	how, typ := syscall.LOCK_EX, int16(syscall.F_WRLCK)
	if shared {
		how, typ = syscall.LOCK_SH, int16(syscall.F_RDLCK)
	}
	return withFd(f, func(fd uintptr) error {
		err := ignoringEINTR(func() error { return syscall.Flock(int(fd), how|syscall.LOCK_NB) })
		if err != nil {
			return lockError(f.Name(), "flock", err)
		}
		lk := syscall.Flock_t{Type: typ, Whence: 0, Start: 0, Len: 0} // Len 0: to EOF and beyond
		err = ignoringEINTR(func() error { return syscall.FcntlFlock(fd, fOFDSetlk, &lk) })
		if err == syscall.EINVAL { // a kernel before 3.15: a per-process lock
			lk = syscall.Flock_t{Type: typ}
			err = ignoringEINTR(func() error { return syscall.FcntlFlock(fd, syscall.F_SETLK, &lk) })
		}
		if err != nil {
			return lockError(f.Name(), "fcntl", err)
		}
		return nil
	})
}

// lockError maps the errno of a failed non-blocking lock call to ErrLocked.
func lockError(name, call string, err error) error {
	if err == syscall.EWOULDBLOCK || err == syscall.EAGAIN || err == syscall.EACCES {
		return errors.Wrapf(ErrLocked, "vfs: lock %s: %s", name, call)
	}
	return &os.PathError{Op: call, Path: name, Err: err}
}

// releaseFile releases the locks on f by closing it.
func releaseFile(f *os.File) error { return f.Close() }

// syncFile makes f's data durable with fdatasync, which skips metadata such
// as the modification time but not the size.
func syncFile(f *os.File) error {
	err := withFd(f, func(fd uintptr) error {
		return ignoringEINTR(func() error { return syscall.Fdatasync(int(fd)) })
	})
	if errno, ok := err.(syscall.Errno); ok {
		return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: errno}
	}
	return err
}

// syncDir makes a directory's entries durable with fsync.
func syncDir(f *os.File) error { return f.Sync() }
