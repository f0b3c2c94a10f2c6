package vfs

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// TestAppendToOS appends across several reserved runs in odd-sized
// pieces, syncing now and then: pieces of a few bytes (as a log block's
// zero trailer) between larger ones. The file holds exactly what was
// appended once Finish has cut it, and reads back through the file
// system.
func TestAppendToOS(t *testing.T) {
	name := filepath.Join(t.TempDir(), "000001.log")
	f, err := OS().Create(name)
	if err != nil {
		t.Fatal(err)
	}
	a, err := AppendTo(f)
	if err != nil {
		t.Fatal(err)
	}
	if a == nil {
		if appends {
			t.Fatal("no Appender for a new file of the OS file system on Linux")
		}
		f.Close()
		return
	}
	var want bytes.Buffer
	piece := make([]byte, 7919)
	for i := 0; want.Len() < 5<<19; i++ { // 2.5 MiB: three reserved runs
		for j := range piece {
			piece[j] = byte(i + j)
		}
		n := 1 + i%len(piece)
		if i%2 == 0 {
			n = 1 + i%6
		}
		if _, err := a.Write(piece[:n]); err != nil {
			t.Fatal(err)
		}
		want.Write(piece[:n])
		if i%97 == 0 {
			if err := a.Sync(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if fi, _ := os.Stat(name); fi.Size() <= int64(want.Len()) {
		t.Fatalf("before Finish the file is %d bytes for %d appended: want room reserved ahead", fi.Size(), want.Len())
	}
	finishAndCheck(t, a, f, name, want.Bytes())
}

// finishAndCheck finishes a, syncs and closes f, and checks that the file
// name holds exactly want: what was appended, cut to it.
func finishAndCheck(t *testing.T, a Appender, f File, name string, want []byte) {
	t.Helper()
	if err := a.Finish(); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
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
		t.Fatalf("the file holds %d bytes, %d appended; they differ from offset %d", len(got), len(want), firstDiff(got, want))
	}
}

// appends says whether this platform has an Appender.
const appends = runtime.GOOS == "linux" && (runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64")

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestAppendToOthers: files of other file systems, directories and files
// that already hold data get no Appender.
func TestAppendToOthers(t *testing.T) {
	m := NewMem()
	f, _ := m.Create("/a")
	if a, err := AppendTo(f); a != nil || err != nil {
		t.Fatalf("AppendTo(MemFS file) = %v, %v; want nil, nil", a, err)
	}
	d, err := OS().OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if a, err := AppendTo(d); a != nil || err != nil {
		t.Fatalf("AppendTo(directory) = %v, %v; want nil, nil", a, err)
	}
	if !appends {
		return
	}
	name := filepath.Join(t.TempDir(), "x")
	if err := os.WriteFile(name, []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := OS().Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if _, err := AppendTo(g); err == nil {
		t.Fatal("AppendTo a file that holds data: no error")
	}
}
