//go:build linux && (amd64 || arm64)

package vfs

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"unsafe"
)

// newFileAppender creates file name and the Appender to it.
func newFileAppender(t *testing.T, name string) (*fileAppender, File) {
	t.Helper()
	f, err := OS().Create(name)
	if err != nil {
		t.Fatal(err)
	}
	ap, err := AppendTo(f)
	if err != nil {
		t.Fatal(err)
	}
	a, ok := ap.(*fileAppender)
	if !ok {
		t.Fatalf("AppendTo(OS file) = %T, want *fileAppender", ap)
	}
	return a, f
}

// appendInBlock appends the fragment h, payload as a log's fragments are
// appended: none crosses a 32 KiB block boundary, so when the rest of the
// block is too short for it, the rest is padded with zeros first. It
// returns the padding's length.
func appendInBlock(t *testing.T, a *fileAppender, h *[7]byte, payload []byte) int64 {
	t.Helper()
	var pad int64
	if rest := 32<<10 - a.off%(32<<10); rest < int64(len(h)+len(payload)) {
		if _, err := a.Write(make([]byte, rest)); err != nil {
			t.Fatal(err)
		}
		pad = rest
	}
	if err := a.WriteFragment(h, payload); err != nil {
		t.Fatal(err)
	}
	return pad
}

// Appends after a Sync go into blocks written with zeros ahead of them
// (zeroAhead), so that the next fdatasync writes the data alone; appends
// that no Sync follows write no zeros; and nothing appended is
// overwritten, by the zeros nor after the next Sync.
func TestAppenderZeroesAheadOfSyncAppends(t *testing.T) {
	name := filepath.Join(t.TempDir(), "000001.log")
	a, f := newFileAppender(t, name)
	h := [7]byte{6: 1}
	var want []byte
	i := 0
	appendOne := func() {
		t.Helper()
		i++
		payload := bytes.Repeat([]byte{byte(i)}, 100)
		pad := appendInBlock(t, a, &h, payload)
		want = append(append(append(want, make([]byte, pad)...), h[:]...), payload...)
	}
	sync := func() {
		t.Helper()
		if err := a.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	for range 50 {
		appendOne()
	}
	if a.zeroed != 0 {
		t.Fatalf("zeros written to offset %d before any Sync", a.zeroed)
	}
	if a.reserved < a.off+reserveAfter {
		t.Fatalf("appends reach %d, reserved only to %d", a.off, a.reserved)
	}
	sync()
	for range 50 {
		appendOne()
		if a.zeroed < a.off+reserveAfter {
			t.Fatalf("append after a Sync ends at %d, zeros written only to %d", a.off, a.zeroed)
		}
	}
	// The blocks past the appends are written (the zeros), where fallocate
	// alone leaves unwritten extents.
	checkWrittenAhead(t, a.fd, a.off, a.zeroed)
	for a.off < 2*reserveRun {
		appendOne()
	}
	sync()
	for range 50 {
		appendOne()
	}
	finishAndCheck(t, a, f, name, want)
}

// An append the file system refuses fails at once with the file system's
// error, and so does every later call, Sync included: nothing appended
// after a refused append can be acknowledged. (The write here fails with
// EBADF, the file being open for reading only; on a real fault it is EIO,
// ENOSPC or EDQUOT, which the FUSE tests in fusetest/ inject.)
func TestAppenderFailsAtOnceAndForGood(t *testing.T) {
	name := filepath.Join(t.TempDir(), "000001.log")
	a, f := newFileAppender(t, name)
	defer f.Close()
	h := [7]byte{6: 1}
	if err := a.WriteFragment(&h, []byte("first")); err != nil {
		t.Fatal(err)
	}
	ro, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	a.fd = int(ro.Fd()) // the next pwritev is refused
	err = a.WriteFragment(&h, []byte("second"))
	if !errors.Is(err, syscall.EBADF) {
		t.Fatalf("append to a file that refuses writes: %v, want EBADF", err)
	}
	a.fd = int(f.(*osFile).Fd()) // writable again: the failure stays
	if err2 := a.WriteFragment(&h, []byte("third")); !errors.Is(err2, syscall.EBADF) {
		t.Fatalf("append after a refused one: %v, want the first failure", err2)
	}
	if _, err2 := a.Write([]byte{0}); !errors.Is(err2, syscall.EBADF) {
		t.Fatalf("Write after a refused append: %v, want the first failure", err2)
	}
	if err2 := a.Sync(); !errors.Is(err2, syscall.EBADF) {
		t.Fatalf("Sync after a refused append: %v, want the first failure", err2)
	}
	if a.off != int64(len(h))+5 {
		t.Fatalf("appended %d bytes counted, want %d: only the first append", a.off, len(h)+5)
	}
}

// checkWrittenAhead fails the test unless the file's blocks in [from, to)
// are allocated and written: FIEMAP (after a sync, FIEMAP_FLAG_SYNC) lists
// extents covering the range, none of them unwritten. Where the file
// system has no FIEMAP it says so and checks nothing.
func checkWrittenAhead(t *testing.T, fd int, from, to int64) {
	t.Helper()
	const (
		fsIocFiemap     = 0xC020660B
		fiemapFlagSync  = 1
		extentUnwritten = 0x800
		headerLen       = 32
		extentLen       = 56
		maxExtents      = 64
	)
	buf := make([]byte, headerLen+maxExtents*extentLen)
	le := binary.LittleEndian
	le.PutUint64(buf[0:], uint64(from))
	le.PutUint64(buf[8:], uint64(to-from))
	le.PutUint32(buf[16:], fiemapFlagSync)
	le.PutUint32(buf[24:], maxExtents)
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), fsIocFiemap, uintptr(unsafe.Pointer(&buf[0])))
	if errno != 0 {
		t.Logf("no FIEMAP here (%v): the zeros ahead are not checked on disk", errno)
		return
	}
	covered := from
	for i := range int(le.Uint32(buf[20:])) {
		e := buf[headerLen+i*extentLen:]
		logical, length, flags := int64(le.Uint64(e[0:])), int64(le.Uint64(e[16:])), le.Uint32(e[40:])
		if flags&extentUnwritten != 0 && logical < to && logical+length > from {
			t.Fatalf("blocks [%d, %d) ahead of appends to %d are reserved but unwritten: the zeros ahead are not written", logical, logical+length, from)
		}
		if logical <= covered {
			covered = max(covered, logical+length)
		}
	}
	if covered < to {
		t.Fatalf("blocks from %d to %d ahead of appends to %d are not allocated", covered, to, from)
	}
}

// Every writebackRun bytes appended, the appender asks the kernel to start
// writing them back, so that the fdatasync that retires the log finds
// little left to write; the file is unchanged by it.
func TestAppenderStartsWriteback(t *testing.T) {
	name := filepath.Join(t.TempDir(), "000001.log")
	a, f := newFileAppender(t, name)
	defer f.Close()
	h := [7]byte{6: 1}
	payload := bytes.Repeat([]byte{'w'}, 1000)
	for a.off < 2*writebackRun+writebackRun/2 {
		appendInBlock(t, a, &h, payload)
	}
	if a.writeback < 0 {
		t.Skip("no sync_file_range on this file system")
	}
	if a.writeback < 2*writebackRun || a.writeback > a.off {
		t.Fatalf("appended %d bytes; writeback started up to %d, want from %d on", a.off, a.writeback, 2*writebackRun)
	}
	if err := a.Sync(); err != nil {
		t.Fatal(err)
	}
}
