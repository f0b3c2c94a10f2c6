package vfs

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
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
	for a.off+int64(len(h)+len(payload)) < prepareAt {
		if rest := 32<<10 - a.off%(32<<10); rest < int64(len(h)+len(payload)) {
			if _, err := a.Write(make([]byte, rest)); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := a.WriteFragment(&h, payload); err != nil {
			t.Fatal(err)
		}
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
		// The fragments of a log block: none crosses a 32 KiB boundary.
		if rest := 32<<10 - a.off%(32<<10); rest < int64(len(h)+len(payload)) {
			if _, err := a.Write(make([]byte, rest)); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := a.WriteFragment(&h, payload); err != nil {
			t.Fatal(err)
		}
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
// that no Sync follows write no zeros, and nothing appended is overwritten.
func TestAppenderZeroesAheadOfSyncAppends(t *testing.T) {
	name := filepath.Join(t.TempDir(), "000001.log")
	a, f := newMappedAppender(t, name)
	h := [7]byte{6: fullFragment}
	var want []byte
	appendOne := func(b byte) {
		t.Helper()
		payload := bytes.Repeat([]byte{b}, 100)
		if err := a.WriteFragment(&h, payload); err != nil {
			t.Fatal(err)
		}
		want = append(append(want, h[:]...), payload...)
	}
	for i := range 50 {
		appendOne(byte(i + 1))
	}
	if a.zeroed != 0 {
		t.Fatalf("zeros written to offset %d before any Sync", a.zeroed)
	}
	if err := a.Sync(); err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		appendOne(byte(i + 100))
		if a.zeroed < a.off+reserveAfter {
			t.Fatalf("append after a Sync ends at %d, zeros written only to %d", a.off, a.zeroed)
		}
	}
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() < a.off+zeroRun-int64(len(h)+100) {
		t.Fatalf("file of %d bytes after appends to %d: the zeros ahead are not written", fi.Size(), a.off)
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
		t.Fatalf("the file holds %d bytes, not the %d appended", len(got), len(want))
	}
}
