//go:build linux && (amd64 || arm64)

package vfs

import (
	"encoding/binary"
	"os"
	"syscall"

	"github.com/cockroachdb/errors"
)

// mapWindow is how much of the file is mapped at a time. Appends past it
// move the mapping on; a window of 1 MiB keeps the process's resident
// memory small and moves it every few thousand appends.
const mapWindow = 1 << 20

// reserveAfter is how far the file reaches past the mapped window.
const reserveAfter = 4096

// mappedAppender appends to a file through a MAP_SHARED window. The file is
// grown a window at a time ahead of the appends with fallocate, which
// reserves the disk blocks: a store to a mapped page with no block behind
// it, past the end of the file or on a full disk, would kill the process
// with SIGBUS, where fallocate fails with ENOSPC that the append returns.
type mappedAppender struct {
	f      *os.File
	fd     int
	off    int64  // bytes appended
	win    []byte // the mapping of the file at [winOff, winOff+mapWindow)
	winOff int64
	err    error // sticky
}

func appendTo(f File) (Appender, error) {
	of, ok := f.(*osFile)
	if !ok || of.dir {
		return nil, nil
	}
	fi, err := of.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() != 0 {
		return nil, errors.Newf("vfs: append to %s: not empty", of.Name())
	}
	a := &mappedAppender{f: of.File, fd: int(of.Fd()), winOff: -1}
	if err := a.move(); err != nil {
		if errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENOSYS) {
			return nil, nil // no fallocate here: appends are written
		}
		return nil, err
	}
	return a, nil
}

func (a *mappedAppender) Write(p []byte) (int, error) {
	if a.err != nil {
		return 0, a.err
	}
	n := 0
	for n < len(p) {
		if a.win == nil || a.off >= a.winOff+mapWindow {
			if err := a.move(); err != nil {
				a.err = err
				return n, err
			}
		}
		c := copy(a.win[a.off-a.winOff:], p[n:])
		n += c
		a.off += int64(c)
	}
	return n, nil
}

// WriteFragment copies h[4:] and payload into the mapping, then stores the
// checksum h[0:4] with one 4-byte store. A killed process leaves in the page
// cache exactly the stores it made before the kill, in program order, so
// the checksum is never there without the rest of the fragment. A fragment
// lies inside one 32 KiB log block, and windows start at multiples of that,
// so it never spans two windows.
func (a *mappedAppender) WriteFragment(h *[7]byte, payload []byte) error {
	if a.err != nil {
		return a.err
	}
	n := int64(len(h) + len(payload))
	if a.win == nil || a.off >= a.winOff+mapWindow {
		if err := a.move(); err != nil {
			a.err = err
			return err
		}
	}
	o := a.off - a.winOff
	if o+n > mapWindow {
		a.err = errors.Newf("vfs: append to %s: a fragment of %d bytes at offset %d crosses a mapping window", a.f.Name(), n, a.off)
		return a.err
	}
	dst := a.win[o : o+n]
	copy(dst[4:], h[4:])
	copy(dst[len(h):], payload)
	publish(dst[:4], binary.LittleEndian.Uint32(h[0:4]))
	a.off += n
	return nil
}

// publish stores v at b[0:4] with one store instruction (the compiler
// makes one of PutUint32 on amd64 and arm64, the platforms this file is
// built for). It is a function
// of its own, not inlined, so that the compiler keeps it after the copies
// that come before the call.
//
//go:noinline
func publish(b []byte, v uint32) {
	binary.LittleEndian.PutUint32(b, v)
}

// move maps the window that holds offset off, growing the file to its end.
func (a *mappedAppender) move() error {
	if err := a.unmap(); err != nil {
		return err
	}
	start := a.off - a.off%mapWindow
	// The file is grown a little past the window, so that it is never cut
	// exactly where an append ends: zeros after the last thing appended
	// are what tells a reader that a killed writer stopped there.
	if err := ignoringEINTR(func() error { return syscall.Fallocate(a.fd, 0, start, mapWindow+reserveAfter) }); err != nil {
		return &os.PathError{Op: "fallocate", Path: a.f.Name(), Err: err}
	}
	win, err := syscall.Mmap(a.fd, start, mapWindow, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED|syscall.MAP_POPULATE)
	if err != nil {
		return &os.PathError{Op: "mmap", Path: a.f.Name(), Err: err}
	}
	a.win, a.winOff = win, start
	return nil
}

func (a *mappedAppender) unmap() error {
	if a.win == nil {
		return nil
	}
	err := syscall.Munmap(a.win)
	a.win = nil
	if err != nil {
		return &os.PathError{Op: "munmap", Path: a.f.Name(), Err: err}
	}
	return nil
}

// Sync makes the appended bytes durable: on Linux fdatasync writes back the
// pages dirtied through the mapping, and the file's size with them.
func (a *mappedAppender) Sync() error {
	if a.err != nil {
		return a.err
	}
	if err := syncFile(a.f); err != nil {
		a.err = err
		return err
	}
	return nil
}

func (a *mappedAppender) Finish() error {
	err := a.unmap()
	if err == nil {
		if terr := syscall.Ftruncate(a.fd, a.off); terr != nil {
			err = &os.PathError{Op: "ftruncate", Path: a.f.Name(), Err: terr}
		}
	}
	if err != nil && a.err == nil {
		a.err = err
	}
	return err
}
