//go:build linux && (amd64 || arm64)

package vfs

import (
	"encoding/binary"
	"io"
	"os"
	"runtime"
	"syscall"
	"unsafe"

	"github.com/cockroachdb/errors"
)

// mapWindow is how much of the file is mapped at a time. Appends past it
// move the mapping on, every few thousand small appends. The next window
// is populated whole before the appends reach it, so its size is resident
// ahead of them: at 512 KiB rather than 1 MiB, the file-backed peak of
// db_bench's fillrandom and overwrite fell by 0.5 to 0.8 MiB (A/B pairs),
// their times unchanged. At 256 KiB it fell 0.3 MiB more, but fillseq took
// 4 to 6% longer (10 and 12 pairs), likely because the goroutine that
// prepares the next window, on two busy cores, had half the time to be
// done before the appends got there.
const mapWindow = 512 << 10

// residentChunk is how much of the window appends pass before the pages
// behind them are released from the process (madvise MADV_DONTNEED: they
// stay in the page cache, dirty or not, as written): a window's written
// pages would otherwise count in the process's resident memory until the
// window moves on. A release is one system call per 500 or so small
// appends; at 64 KiB rather than 256 KiB, the peak is 192 KiB lower.
const residentChunk = 64 << 10

// prepareAt is how far into the first window copies must reach before the
// window after it is prepared (mapped, and populated unless pwritev has
// been carrying the appends); from then on, each move prepares the next.
// Waiting for the middle, not the first copy, keeps a populated window
// from being resident while the appends have no use for it: Sync writes go
// out with pwritev (see syncRun), so a log of Sync writes copies into its
// mapping only before its first sync, and a log that a few records are
// appended to may never reach the next window. Half a window of appends is
// still two thousand small ones, time enough to prepare the next.
// (Preparing every window from its middle rather than at the move left the
// goroutine less time than the appends took to get there.)
const prepareAt = mapWindow / 2

// reserveAfter is how far the file reaches past the mapped window.
const reserveAfter = 4096

// pwriteMin is the smallest fragment written with pwritev(2) rather than
// copied into the mapping. A copy into a shared file mapping takes a page
// fault at the first store to each page (the file system's page_mkwrite),
// about as costly as a system call; a fragment of two pages or more is
// cheaper written (batches of 1,000 puts spent a fifth less time in the
// log). Both land in the same page cache.
const pwriteMin = 8 << 10

// trailerMax is the length of a fragment's header: a log block's zero
// trailer, too short for one, is shorter.
const trailerMax = 7

// fullFragment is the log format's type byte (h[6]) of a record in one
// fragment. The fragments of a record that spans blocks are written with
// pwritev whatever their size: a large record's first and last fragments
// are often small, and copying them into the mapping would make the
// mapping follow appends that pwritev carried past it.
const fullFragment = 1

// mappedAppender appends to a file through a MAP_SHARED window. The file is
// grown a window at a time ahead of the appends with fallocate, which
// reserves the disk blocks: a store to a mapped page with no block behind
// it, past the end of the file or on a full disk, would kill the process
// with SIGBUS, where fallocate fails with ENOSPC that the append returns.
//
// Moving the mapping costs the appends nothing they wait for: while they
// fill one window, a goroutine unmaps the one before, reserves the next and
// maps it with its pages populated (in the appends' path, that took a tenth
// of the time of batched writes). Behind the appends, the window's pages
// are released a chunk at a time (releaseBehind).
type mappedAppender struct {
	f      *os.File
	fd     int
	off    int64  // bytes appended
	win    []byte // the mapping of the file at [winOff, winOff+mapWindow)
	winOff int64
	// released is how much of win, from its start, has been released
	// from the process's resident memory (a multiple of residentChunk).
	released int64
	// next, if not nil, delivers the window after win, being prepared in
	// the background; it is received once.
	next chan window
	// pwritten is how much went through pwritev between the last two
	// moves; written is how much did since the last.
	pwritten, written int64
	// zeroed is how far the file has been written with zeros ahead of
	// Sync appends (zeroAhead).
	zeroed int64
	// reserved is how far the file has been grown with fallocate (or
	// is being grown, by the goroutine preparing the next window).
	reserved int64
	// syncBudget is how many more bytes, after the last Sync, go out
	// with pwritev whatever their size (see syncRun).
	syncBudget int64
	err        error // sticky
}

// syncRun is how many bytes appended after a Sync make the appends bulk
// again, copied into the mapping. Until then each fragment is written with
// pwritev: fdatasync wrote back and write-protected the mapping's dirty
// pages, so the next store into one takes a page fault, and Sync writes
// dirty the same page group after group. Paired runs of fillsync8 (eight
// writers, 7 to 8 puts a sync): 57.8k against 54.1k puts/s over four
// pairs, fillsync 9.74k against 9.32k; over eight pairs the pwritev side
// won seven of fillsync's and five of fillsync8's.
const syncRun = 64 << 10

// window is a mapping of the file at [off, off+mapWindow), or the error
// that preparing it met.
type window struct {
	b   []byte
	off int64
	err error
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
	a := &mappedAppender{f: of.File, fd: int(of.Fd())}
	w := a.mapAt(0, 0)
	if w.err != nil {
		if errors.Is(w.err, syscall.EOPNOTSUPP) || errors.Is(w.err, syscall.ENOSYS) {
			return nil, nil // no fallocate here: appends are written
		}
		return nil, w.err
	}
	a.win, a.winOff, a.reserved = w.b, w.off, mapWindow+reserveAfter
	return a, nil
}

// Write appends p. A block's zero trailer (shorter than a fragment's
// header: a wal.Writer over a FragmentWriter writes nothing else here) is
// copied into the mapping: zeros where zeros were, whatever the order of
// the stores. Anything else goes out with pwritev, as a buffered
// wal.Writer's blocks do (Open writes the records it carries forward that
// way): a copy's stores land in no set order, and a kill in the middle of
// one could leave a fragment's checksum beside a hole, which a reader
// takes for damage rather than a torn tail; pwritev is cut short only at a
// page boundary. Copies would also populate and dirty windows of the
// mapping for nothing (a megabyte of Open's resident memory).
func (a *mappedAppender) Write(p []byte) (int, error) {
	if a.err != nil {
		return 0, a.err
	}
	if len(p) >= trailerMax {
		if err := a.pwrite(nil, p); err != nil {
			return 0, err
		}
		return len(p), nil
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
		a.copied()
	}
	return n, nil
}

// copied follows every copy into the mapping: it releases the chunks the
// appends have passed and, from prepareAt on, has the next window prepared.
func (a *mappedAppender) copied() {
	a.releaseBehind()
	if a.next == nil && a.off-a.winOff >= prepareAt {
		a.prepareNext(nil)
	}
}

// WriteFragment copies h[4:] and payload into the mapping, then stores the
// checksum h[0:4] with one 4-byte store. A killed process leaves in the
// page cache exactly the stores it made before the kill, in program order,
// so the checksum is never there without the rest of the fragment. A large
// fragment, or one of a record in several, is written with one pwritev
// instead, which a kill can cut short only at a page boundary: it leaves a
// prefix of the fragment and zeros after it, which a reader takes for a
// torn tail as well. A fragment lies inside one 32 KiB log block, and
// windows start at multiples of that, so it never spans two windows.
func (a *mappedAppender) WriteFragment(h *[7]byte, payload []byte) error {
	if a.err != nil {
		return a.err
	}
	n := int64(len(h) + len(payload))
	afterSync := a.syncBudget > 0
	if afterSync {
		a.syncBudget -= n
	}
	if afterSync {
		if err := a.zeroAhead(a.off + n); err != nil {
			a.err = err
			return err
		}
	}
	if n >= pwriteMin || h[6] != fullFragment || afterSync {
		return a.pwrite(h[:], payload)
	}
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
	a.copied()
	return nil
}

// pwrite appends h then payload with pwritev, wherever the mapping stands:
// the windows move on only when a fragment is copied into one.
func (a *mappedAppender) pwrite(h, payload []byte) error {
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
	a.written += n
	return nil
}

// zeroRun is how far ahead of Sync appends the file is written with zeros
// (see zeroAhead).
const zeroRun = 256 << 10

// zeros is what zeroAhead writes.
var zeros [64 << 10]byte

// zeroAhead writes zeros into the file from the end of what was appended
// (or zeroed before) to zeroRun past end, once appends up to end would
// come within reserveAfter of what was zeroed. A Sync append then
// overwrites blocks that are allocated and written, and the fdatasync
// after it writes the data alone: into a block reserved with fallocate
// (an unwritten extent), the file system must also commit the extent's
// conversion to written, and past the end of the file its new size, each
// a journal commit. Measured
// here (ext4, a 1 KiB append then fdatasync, 2,000 times): 210 to 230 µs
// a sync past the end, 170 to 190 into reserved blocks, 153 to 171 into
// zeroed ones. The zeros are written back once, with the sync after them:
// one Sync write in 256 KiB of them pays for writing and syncing 256 KiB
// more, and the device writes each page of the log once more than it
// would (a page of small Sync appends is written several times anyway).
// On a copy-on-write file system the zeros gain nothing. Nothing past
// a.off has been appended, so no append is overwritten.
func (a *mappedAppender) zeroAhead(end int64) error {
	if end+reserveAfter <= a.zeroed {
		return nil
	}
	off := max(a.zeroed, a.off)
	to := end + zeroRun
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
// within reserveAfter of what is reserved, to the end of the window after
// end's (and reserveAfter past it). Appends written with pwritev reach
// past the mapping when the windows stand still (Sync writes do not copy
// into the mapping, so they do not move it): a write that
// extends the file makes the fdatasync after it commit the new size as
// well, and eight Sync writers, whose syncs are nothing but small
// appends, measured 7% slower when only the mapped windows reserved the
// file ahead of them.
func (a *mappedAppender) reserve(end int64) error {
	if end+reserveAfter <= a.reserved {
		return nil
	}
	start := end - end%mapWindow
	n := 2*mapWindow + reserveAfter
	if err := ignoringEINTR(func() error { return syscall.Fallocate(a.fd, 0, start, int64(n)) }); err != nil {
		return &os.PathError{Op: "fallocate", Path: a.f.Name(), Err: err}
	}
	a.reserved = start + int64(n)
	return nil
}

// releaseBehind releases the window's chunks that appends have passed
// from the process's resident memory. Everything before a.off is written,
// so no later store touches them: their pages stay in the page cache,
// dirty ones included, exactly as if written with write(2). A failed
// release costs only memory and is not an error.
//
// Measured on fillrandom (shalebench, four A/B pairs): the peak of the
// process's file-backed resident memory fell by 1 MiB, and the times did
// not move. Populating the next window a chunk at a time as well, rather
// than whole, saved 1.4 MiB more but took fillrandom about 5% longer in
// five pairs of seven.
func (a *mappedAppender) releaseBehind() {
	end := min(a.off-a.winOff, mapWindow) &^ (residentChunk - 1)
	if end <= a.released {
		return
	}
	_ = syscall.Madvise(a.win[a.released:end], syscall.MADV_DONTNEED)
	a.released = end
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

// pwritev writes a then b at off, with one system call unless it is cut
// short.
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

// move replaces the window with the one that holds offset a.off: the next
// one, if the background has prepared it (or is preparing it: move waits
// for it) and pwritev did not carry the appends past it, else one mapped
// here, unpopulated. It then starts preparing the one after, whose
// goroutine unmaps the window before.
func (a *mappedAppender) move() error {
	start := a.off - a.off%mapWindow
	var w window
	if a.next != nil {
		w = <-a.next
		a.next = nil
		if w.err == nil && w.off != start {
			if err := syscall.Munmap(w.b); err != nil {
				return &os.PathError{Op: "munmap", Path: a.f.Name(), Err: err}
			}
			w = a.mapAt(start, 0)
		}
	} else {
		w = a.mapAt(start, 0)
	}
	if w.err != nil {
		return w.err
	}
	old := a.win
	a.win, a.winOff, a.released = w.b, w.off, 0
	a.reserved = max(a.reserved, w.off+mapWindow+reserveAfter)
	a.pwritten, a.written = a.written, 0
	a.prepareNext(old)
	return nil
}

// prepareNext starts a goroutine that unmaps old (the window before a.win,
// if any), then maps the window after a.win and delivers it on a.next.
// The window's pages are populated unless pwritev wrote more than half a
// window's worth between the last two moves or since the last (in the
// first window, before any move): populating pages that pwritev then
// writes costs a page allocation each for nothing, and keeps them
// resident.
func (a *mappedAppender) prepareNext(old []byte) {
	next := make(chan window, 1)
	a.next = next
	at := a.winOff + mapWindow
	a.reserved = max(a.reserved, at+mapWindow+reserveAfter)
	flags := syscall.MAP_POPULATE
	if max(a.pwritten, a.written) > mapWindow/2 {
		flags = 0
	}
	go func() {
		if old != nil {
			if err := syscall.Munmap(old); err != nil {
				next <- window{err: &os.PathError{Op: "munmap", Path: a.f.Name(), Err: err}}
				return
			}
		}
		next <- a.mapAt(at, flags)
	}()
}

// mapAt grows the file to hold the window at off and maps it. The file is
// grown a little past the window, so that it is never cut exactly where an
// append ends: zeros after the last thing appended are what tells a reader
// that a killed writer stopped there. It reads only a's immutable fields.
func (a *mappedAppender) mapAt(off int64, flags int) window {
	if err := ignoringEINTR(func() error { return syscall.Fallocate(a.fd, 0, off, mapWindow+reserveAfter) }); err != nil {
		return window{err: &os.PathError{Op: "fallocate", Path: a.f.Name(), Err: err}}
	}
	b, err := syscall.Mmap(a.fd, off, mapWindow, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED|flags)
	if err != nil {
		return window{err: &os.PathError{Op: "mmap", Path: a.f.Name(), Err: err}}
	}
	return window{b: b, off: off}
}

// unmap releases the window and any window prepared after it.
func (a *mappedAppender) unmap() error {
	var err error
	if a.next != nil {
		if w := <-a.next; w.err != nil {
			err = w.err
		} else if uerr := syscall.Munmap(w.b); uerr != nil {
			err = &os.PathError{Op: "munmap", Path: a.f.Name(), Err: uerr}
		}
		a.next = nil
	}
	if a.win == nil {
		return err
	}
	uerr := syscall.Munmap(a.win)
	a.win = nil
	if uerr != nil && err == nil {
		err = &os.PathError{Op: "munmap", Path: a.f.Name(), Err: uerr}
	}
	return err
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
	a.syncBudget = syncRun
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
