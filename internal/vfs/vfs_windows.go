//go:build windows

package vfs

import (
	"os"
	"syscall"
	"unsafe"

	"github.com/cockroachdb/errors"
)

var (
	kernel32         = syscall.NewLazyDLL("kernel32.dll")
	procLockFileEx   = kernel32.NewProc("LockFileEx")
	procUnlockFileEx = kernel32.NewProc("UnlockFileEx")
)

const (
	lockfileFailImmediately = 0x1 // LOCKFILE_FAIL_IMMEDIATELY
	lockfileExclusiveLock   = 0x2 // LOCKFILE_EXCLUSIVE_LOCK

	errorSharingViolation syscall.Errno = 32 // ERROR_SHARING_VIOLATION
	errorLockViolation    syscall.Errno = 33 // ERROR_LOCK_VIOLATION
)

// lockFile locks the first byte of f with LockFileEx, failing at once if it
// is held. A held lock gives an error matching ErrLocked.
func lockFile(f *os.File, shared bool) error {
	flags := uintptr(lockfileFailImmediately)
	if !shared {
		flags |= lockfileExclusiveLock
	}
	var ol syscall.Overlapped // offset 0
	r, _, err := procLockFileEx.Call(f.Fd(), flags, 0, 1, 0, uintptr(unsafe.Pointer(&ol)))
	if r != 0 {
		return nil
	}
	if err == errorLockViolation || err == errorSharingViolation {
		return errors.Wrapf(ErrLocked, "vfs: lock %s: LockFileEx", f.Name())
	}
	return &os.PathError{Op: "LockFileEx", Path: f.Name(), Err: err}
}

// releaseFile unlocks f explicitly (closing alone frees the lock only when
// the system gets to it) and closes it.
func releaseFile(f *os.File) error {
	var ol syscall.Overlapped
	procUnlockFileEx.Call(f.Fd(), 0, 1, 0, uintptr(unsafe.Pointer(&ol)))
	return f.Close()
}

// syncFile makes f's data durable: os.File.Sync is FlushFileBuffers.
func syncFile(f *os.File) error { return f.Sync() }

// syncDir does nothing: Windows offers no way to flush a directory's
// entries, and NTFS journals them itself.
func syncDir(f *os.File) error { return nil }

// openNonblock is 0: Windows has no FIFOs to wait on.
const openNonblock = 0
