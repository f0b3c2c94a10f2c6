package vfs

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

// newMappedAppender creates file name and a mapped appender to it, or skips
// the test where the file system has none.
func newMappedAppender(t *testing.T, name string) (*mappedAppender, File) {
	t.Helper()
	f, err := OS().Create(name)
	if err != nil {
		t.Fatal(err)
	}
	ap, err := AppendTo(f)
	if err != nil {
		t.Fatal(err)
	}
	a, ok := ap.(*mappedAppender)
	if !ok {
		f.Close()
		t.Skipf("no mapped appends on this file system (%T)", ap)
	}
	return a, f
}

// A WAL that nothing is appended to (a reader's Open creates one), or a
// few records (Open carries some forward), keeps no populated window: the
// window after the first is prepared once copies pass prepareAt, not at
// creation or at the first append.
func TestAppenderPreparesFromTheMiddle(t *testing.T) {
	a, f := newMappedAppender(t, filepath.Join(t.TempDir(), "000001.log"))
	if a.next != nil {
		t.Fatal("the next window is prepared before any append")
	}
	h := [7]byte{6: fullFragment}
	payload := make([]byte, 1000)
	for a.off+2*int64(len(h)+len(payload)) < prepareAt {
		appendInBlock(t, a, &h, payload)
		if a.next != nil {
			t.Fatalf("the next window is prepared at offset %d, before %d", a.off, prepareAt)
		}
	}
	for a.off < prepareAt {
		if _, err := a.Write([]byte{0}); err != nil {
			t.Fatal(err)
		}
	}
	if a.next == nil {
		t.Fatalf("the next window is not being prepared at offset %d", a.off)
	}
	if err := a.Finish(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// The pages of the mapping that the appends have passed are released: the
// window's written chunks do not stay resident beside the populated next
// window.
func TestAppenderKeepsFewPagesResident(t *testing.T) {
	name := filepath.Join(t.TempDir(), "000001.log")
	a, f := newMappedAppender(t, name)
	payload := make([]byte, 1000)
	h := [7]byte{6: fullFragment}
	for a.off < 3*mapWindow+900<<10 {
		appendInBlock(t, a, &h, payload)
	}
	w := <-a.next // the prepared window, populated as it will be
	a.next = make(chan window, 1)
	a.next <- w
	rss := mappedRSS(t, name)
	t.Logf("resident: %d KiB of the log's mappings", rss>>10)
	if limit := int64(mapWindow + 2*residentChunk); rss > limit {
		t.Errorf("%d KiB of the log's mappings resident, want at most %d", rss>>10, limit>>10)
	}
	if err := a.Finish(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// appendInBlock appends the fragment h, payload as a log's fragments are
// appended: none crosses a 32 KiB block boundary, so when the rest of the
// block is too short for it, the rest is padded with zeros first. It
// returns the padding's length.
func appendInBlock(t *testing.T, a *mappedAppender, h *[7]byte, payload []byte) int64 {
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

// mappedRSS sums the resident bytes of the process's mappings of the file
// name, from /proc/self/smaps.
func mappedRSS(t *testing.T, name string) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Skipf("no smaps: %v", err)
	}
	var total int64
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if strings.Contains(fields[0], "-") && len(fields) >= 5 {
			in = len(fields) >= 6 && fields[5] == name
			continue
		}
		if in && fields[0] == "Rss:" && len(fields) >= 2 {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				t.Fatalf("smaps: %q: %v", line, err)
			}
			total += kb << 10
		}
	}
	return total
}

// Appends after a Sync go into blocks written with zeros ahead of them
// (zeroAhead), so that the next fdatasync writes the data alone; appends
// that no Sync follows write no zeros; and nothing appended is
// overwritten, when copies into the mapping resume past the zeros and into
// the next window, nor after the next Sync.
func TestAppenderZeroesAheadOfSyncAppends(t *testing.T) {
	name := filepath.Join(t.TempDir(), "000001.log")
	a, f := newMappedAppender(t, name)
	h := [7]byte{6: fullFragment}
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
	for a.off < mapWindow+100<<10 {
		appendOne()
	}
	if a.winOff == 0 {
		t.Fatal("the appends never copied into the mapping's second window")
	}
	sync()
	for range 50 {
		appendOne()
	}
	if err := a.Finish(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		n := 0
		for n < min(len(got), len(want)) && got[n] == want[n] {
			n++
		}
		t.Fatalf("the file holds %d bytes, %d appended; they differ from offset %d", len(got), len(want), n)
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
