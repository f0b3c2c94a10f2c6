//go:build unix

package vfs

import (
	"os"
	"syscall"
)

// withFd runs fn on f's descriptor, which stays open until fn returns even
// if f is closed concurrently. An error from fn is returned unchanged.
func withFd(f *os.File, fn func(fd uintptr) error) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var fnErr error
	if err := rc.Control(func(fd uintptr) { fnErr = fn(fd) }); err != nil {
		return err
	}
	return fnErr
}

// ignoringEINTR calls fn until it fails with something other than EINTR.
func ignoringEINTR(fn func() error) error {
	for {
		if err := fn(); err != syscall.EINTR {
			return err
		}
	}
}

// openNonblock keeps an open of a FIFO from waiting for a writer.
const openNonblock = syscall.O_NONBLOCK
