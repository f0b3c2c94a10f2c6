//go:build linux && (amd64 || arm64)

package vfs

import (
	"io"
	"os"
	"runtime"
	"syscall"
	"unsafe"

	"github.com/cockroachdb/errors"
)

// reserveRun is how much of the file fallocate reserves at a time ahead
// of the appends, and reserveAfter how close appends may come to the end
// of what is reserved before the next run is reserved. A write inside
// reserved space neither allocates blocks nor changes the file's size, so
// the fdatasync after a Sync append need not commit either, and a full
// disk is met by fallocate, at the append that needs the space, as the
// error that append returns.
const (
	reserveRun   = 1<<20 + reserveAfter
	reserveAfter = 4096
)

// zeroRun is how far ahead of Sync appends the file is written with zeros
// (see zeroAhead).
const zeroRun = 256 << 10

// syncRun is how many bytes appended after a Sync are zeroed ahead of, as
// Sync appends are: a log whose writes stopped asking for Sync stops
// paying for the zeros after that many bytes.
const syncRun = 64 << 10

// zeros is what zeroAhead writes.
var zeros [64 << 10]byte

// fileAppender appends to a file with pwritev(2), one call per fragment
// (header and payload from their own buffers), so that whatever the file
// system answers — EIO, ENOSPC, EDQUOT, a short count — is the answer the
// append returns, at once. It never appends through a memory mapping:
// there a store is acknowledged before the file system has seen it, and a
// writeback that fails or stores less than it was given later is never
// reported to the writer (see DESIGN.md's guarantees).
//
// What it adds to plain writes is for Sync appends: the file is reserved
// with fallocate ahead of the appends and, after a Sync, written with zeros
// ahead of them, so that each fdatasync writes the data alone. Neither
// decides whether an append succeeds: where fallocate is missing or finds
// too little room, the appends go on without either, and the write that
// finds the disk full fails with the file system's own answer.
type fileAppender struct {
	f   *os.File
	fd  int
	off int64 // bytes appended
	// reserved is how far the file has been grown with fallocate; -1 if
	// the file system has no fallocate (appends then extend the file).
	reserved int64
	// zeroed is how far the file has been written with zeros ahead of
	// Sync appends (zeroAhead).
	zeroed int64
	// syncBudget is how many more bytes, after the last Sync, are zeroed
	// ahead of.
	syncBudget int64
	// writeback is how far the kernel was asked to start writing the file
	// back (startWriteback); -1 if the file system cannot be asked.
	writeback int64
	err       error // sticky: after a failed call nothing more is appended
}

func appendTo(f File) (Appender, error) {
	if w, ok := f.(*watchedFile); ok {
		f = w.File // the caller times the Appender's syncs itself
	}
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
	a := &fileAppender{f: of.File, fd: int(of.Fd())}
	if err := a.reserve(0); err != nil {
		return nil, err
	}
	return a, nil
}

// Write appends p: a log block's zero trailer, or a buffered Writer's
// blocks.
func (a *fileAppender) Write(p []byte) (int, error) {
	if err := a.pwrite(nil, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// WriteFragment appends the header h and then payload with one pwritev. A
// kill can cut a write(2) short only at a page boundary: it leaves a
// prefix of the fragment, then the end of the file or zeros, which a
// reader takes for a torn tail.
func (a *fileAppender) WriteFragment(h *[7]byte, payload []byte) error {
	if a.err != nil {
		return a.err
	}
	n := int64(len(h) + len(payload))
	if a.syncBudget > 0 && a.reserved >= 0 {
		a.syncBudget -= n
		if err := a.zeroAhead(a.off + n); err != nil {
			a.err = err
			return err
		}
	}
	return a.pwrite(h[:], payload)
}

// pwrite appends h then payload.
func (a *fileAppender) pwrite(h, payload []byte) error {
	if a.err != nil {
		return a.err
	}
	n := int64(len(h) + len(payload))
	if err := a.reserve(a.off + n); err != nil {
		a.err = err
		return err
	}
	if err := pwritev(a.fd, h, payload, a.off); err != nil {
		a.err = &os.PathError{Op: "pwritev", Path: a.f.Name(), Err: err}
		return a.err
	}
	a.off += n
	if a.writeback >= 0 && a.off-a.writeback >= writebackRun {
		return a.startWriteback()
	}
	return nil
}

// writebackRun is how many bytes appended after the last startWriteback
// start the next.
const writebackRun = 1 << 20

// startWriteback asks the kernel to start writing back what was appended
// since the last call (sync_file_range with SYNC_FILE_RANGE_WRITE, which
// does not wait for the disk), so that the fdatasync that retires a WAL,
// on the commit path, finds at most the last megabyte dirty rather than
// the whole write buffer. A failure it reports is a failed writeback:
// appends fail from then on, as after a failed Sync. A file system that
// cannot do it is appended to without it.
func (a *fileAppender) startWriteback() error {
	const syncFileRangeWrite = 2
	err := ignoringEINTR(func() error { return syscall.SyncFileRange(a.fd, a.writeback, a.off-a.writeback, syncFileRangeWrite) })
	switch {
	case err == nil:
		a.writeback = a.off
	case errors.Is(err, syscall.ENOSYS) || errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ESPIPE):
		a.writeback = -1
	default:
		a.err = &os.PathError{Op: "sync_file_range", Path: a.f.Name(), Err: err}
		return a.err
	}
	return nil
}

// zeroAhead writes zeros into the file from the end of what was appended
// (or zeroed before) to zeroRun past end, once appends up to end would
// come within reserveAfter of what was zeroed. A Sync append then
// overwrites blocks that are allocated and written, and the fdatasync
// after it writes the data alone: into a block reserved with fallocate
// (an unwritten extent), the file system must also commit the extent's
// conversion to written, and past the end of the file its new size, each
// a journal commit. Measured here (ext4, a 1 KiB append then fdatasync,
// 2,000 times): 210 to 230 µs a sync past the end, 170 to 190 into
// reserved blocks, 153 to 171 into zeroed ones. The zeros are written
// back once, with the sync after them. Nothing past a.off has been
// appended, so no append is overwritten.
func (a *fileAppender) zeroAhead(end int64) error {
	if end+reserveAfter <= a.zeroed {
		return nil
	}
	off := max(a.zeroed, a.off)
	to := end + zeroRun
	if err := a.reserve(to); err != nil {
		return err
	}
	for off < to {
		n := min(to-off, int64(len(zeros)))
		if err := pwritev(a.fd, nil, zeros[:n], off); err != nil {
			return &os.PathError{Op: "pwritev", Path: a.f.Name(), Err: err}
		}
		off += n
	}
	a.zeroed = to
	return nil
}

// reserve grows the file with fallocate, if appends up to end would come
// within reserveAfter of what is reserved, to reserveRun past end's. The
// file always reaches a little past the appends, so that it is never cut
// exactly where an append ends: zeros after the last thing appended are
// what tells a reader that a killed writer stopped there. A file system
// without fallocate (EOPNOTSUPP) is appended to without it.
func (a *fileAppender) reserve(end int64) error {
	if a.reserved < 0 || end+reserveAfter <= a.reserved {
		return nil
	}
	err := ignoringEINTR(func() error { return syscall.Fallocate(a.fd, 0, end, reserveRun) })
	switch {
	case err == nil:
		a.reserved = end + reserveRun
	case errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENOSYS) ||
		errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT):
		// No fallocate here, or not a run's worth of room left: the
		// appends go on unreserved, and the write that finds the disk
		// full fails with the file system's answer.
		a.reserved = -1
	default:
		return &os.PathError{Op: "fallocate", Path: a.f.Name(), Err: err}
	}
	return nil
}

// pwritev writes a then b at off, with one system call unless it is cut
// short; a short count is followed by a call for the rest, so the file
// system's error for the rest is the one returned.
func pwritev(fd int, a, b []byte, off int64) error {
	for len(a)+len(b) > 0 {
		var iov [2]syscall.Iovec
		cnt := 0
		for _, p := range [2][]byte{a, b} {
			if len(p) > 0 {
				iov[cnt].Base = unsafe.SliceData(p)
				iov[cnt].SetLen(len(p))
				cnt++
			}
		}
		r, _, errno := syscall.Syscall6(syscall.SYS_PWRITEV, uintptr(fd), uintptr(unsafe.Pointer(&iov[0])), uintptr(cnt), uintptr(off), 0, 0)
		runtime.KeepAlive(a)
		runtime.KeepAlive(b)
		if errno == syscall.EINTR {
			continue
		}
		if errno != 0 {
			return errno
		}
		n := int(r)
		if n == 0 {
			return io.ErrShortWrite
		}
		off += int64(n)
		if n < len(a) {
			a = a[n:]
			continue
		}
		n -= len(a)
		a, b = nil, b[n:]
	}
	return nil
}

// Sync makes the appended bytes durable (fdatasync). After a failure it
// fails for good: Linux may have dropped the pages whose writeback failed,
// so a second fdatasync that succeeds proves nothing about them.
func (a *fileAppender) Sync() error {
	if a.err != nil {
		return a.err
	}
	if err := syncFile(a.f); err != nil {
		a.err = err
		return err
	}
	a.syncBudget = syncRun
	return nil
}

// Finish cuts the file to what was appended. It does not sync.
func (a *fileAppender) Finish() error {
	// Always cut: a reservation made before fallocate found the disk too
	// full (reserved now -1) may still reach past the appends.
	if err := syscall.Ftruncate(a.fd, a.off); err != nil {
		err = &os.PathError{Op: "ftruncate", Path: a.f.Name(), Err: err}
		if a.err == nil {
			a.err = err
		}
		return err
	}
	return nil
}
