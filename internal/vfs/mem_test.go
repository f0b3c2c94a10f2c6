package vfs_test

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"testing"

	"github.com/shale-db/shale/internal/vfs"
)

// newMemDir returns a MemFS with a durable directory "d".
func newMemDir(t *testing.T) *vfs.MemFS {
	fs := vfs.NewMem()
	must(t, fs.MkdirAll("d", 0o755))
	syncDir(t, fs, "/")
	return fs
}

func syncDir(t testing.TB, fs vfs.FS, dir string) {
	t.Helper()
	d, err := fs.OpenDir(dir)
	must(t, err)
	must(t, d.Sync())
	must(t, d.Close())
}

// contents returns name's contents in fs, or "<absent>".
func contents(t testing.TB, fs vfs.FS, name string) string {
	t.Helper()
	if _, err := fs.Stat(name); errors.Is(err, os.ErrNotExist) {
		return "<absent>"
	}
	return readFile(t, fs, name)
}

func write(t testing.TB, f vfs.File, s string) {
	t.Helper()
	if _, err := f.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
}

// TestMemCrashFileData: only what a file's Sync covered survives.
func TestMemCrashFileData(t *testing.T) {
	fs := newMemDir(t)
	f, err := fs.Create("d/f")
	must(t, err)
	syncDir(t, fs, "d")
	if got := contents(t, fs.CrashClone(), "d/f"); got != "" {
		t.Fatalf("never-synced file after crash: %q; want empty", got)
	}
	write(t, f, "hello")
	must(t, f.Sync())
	write(t, f, ", world")
	if got := contents(t, fs, "d/f"); got != "hello, world" {
		t.Fatalf("live contents %q", got)
	}
	if got := contents(t, fs.CrashClone(), "d/f"); got != "hello" {
		t.Fatalf("after crash: %q; want the synced prefix %q", got, "hello")
	}
	must(t, f.Sync())
	if got := contents(t, fs.CrashClone(), "d/f"); got != "hello, world" {
		t.Fatalf("after second sync and crash: %q", got)
	}
	// Truncation by Create is not durable until synced either.
	g, err := fs.Create("d/f")
	must(t, err)
	write(t, g, "new")
	if got := contents(t, fs.CrashClone(), "d/f"); got != "hello, world" {
		t.Fatalf("unsynced rewrite after crash: %q; want the old synced contents", got)
	}
	must(t, g.Sync())
	if got := contents(t, fs.CrashClone(), "d/f"); got != "new" {
		t.Fatalf("synced rewrite after crash: %q", got)
	}
}

// TestMemCrashOverwriteKeepsSynced: a handle left at an old offset that
// writes into synced bytes does not alter the durable copy.
func TestMemCrashOverwriteKeepsSynced(t *testing.T) {
	fs := newMemDir(t)
	a, err := fs.Create("d/f")
	must(t, err)
	syncDir(t, fs, "d")
	write(t, a, "xy") // a is at offset 2
	b, err := fs.Create("d/f")
	must(t, err)
	write(t, b, "0123456")
	must(t, b.Sync())
	write(t, a, "AB") // overwrites bytes 2 and 3 of the live contents
	if got := contents(t, fs, "d/f"); got != "01AB456" {
		t.Fatalf("live contents %q", got)
	}
	if got := contents(t, fs.CrashClone(), "d/f"); got != "0123456" {
		t.Fatalf("after crash: %q; want the synced %q", got, "0123456")
	}
	write(t, b, "789") // an append after the overwrite: still not appended bytes
	for mode := range vfs.NumCrashModes {
		for seed := range uint64(20) {
			if got := contents(t, fs.CrashCloneWith(mode, seed), "d/f"); got != "0123456" {
				t.Fatalf("after crash (%s, seed %d): %q; want the synced %q", mode, seed, got, "0123456")
			}
		}
	}
}

// TestMemCrashDirEntries: creations and removals survive only if the
// directory was synced after them, whatever the file's own syncs.
func TestMemCrashDirEntries(t *testing.T) {
	fs := newMemDir(t)
	writeFile(t, fs, "d/a", "A") // synced data, unsynced entry
	if got := contents(t, fs.CrashClone(), "d/a"); got != "<absent>" {
		t.Fatalf("file created without a directory sync after crash: %q; want absent", got)
	}
	syncDir(t, fs, "d")
	if got := contents(t, fs.CrashClone(), "d/a"); got != "A" {
		t.Fatalf("after directory sync and crash: %q", got)
	}
	must(t, fs.Remove("d/a"))
	if got := contents(t, fs.CrashClone(), "d/a"); got != "A" {
		t.Fatalf("removal without a directory sync after crash: %q; want it back", got)
	}
	syncDir(t, fs, "d")
	if got := contents(t, fs.CrashClone(), "d/a"); got != "<absent>" {
		t.Fatalf("synced removal after crash: %q", got)
	}
}

// TestMemCrashRename: the CURRENT pattern (write temp, sync, rename, sync
// directory) is durable only with its last step.
func TestMemCrashRename(t *testing.T) {
	fs := newMemDir(t)
	writeFile(t, fs, "d/CURRENT", "MANIFEST-000001\n")
	syncDir(t, fs, "d")
	writeFile(t, fs, "d/tmp", "MANIFEST-000002\n")
	must(t, fs.Rename("d/tmp", "d/CURRENT"))
	crashed := fs.CrashClone()
	if got := contents(t, crashed, "d/CURRENT"); got != "MANIFEST-000001\n" {
		t.Fatalf("unsynced rename after crash: CURRENT = %q; want the old one", got)
	}
	if got := contents(t, crashed, "d/tmp"); got != "<absent>" {
		t.Fatalf("unsynced rename after crash: tmp = %q; want absent (never durable)", got)
	}
	syncDir(t, fs, "d")
	crashed = fs.CrashClone()
	if got := contents(t, crashed, "d/CURRENT"); got != "MANIFEST-000002\n" {
		t.Fatalf("synced rename after crash: CURRENT = %q", got)
	}
	if names, _ := crashed.List("d"); !slices.Equal(names, []string{"CURRENT"}) {
		t.Fatalf("synced rename after crash: d holds %q", names)
	}
}

// TestMemCrashLink: a link is an entry like any other, durable on its
// directory's sync; the file's data is shared, and so is its durability,
// before and after a crash.
func TestMemCrashLink(t *testing.T) {
	fs := newMemDir(t)
	must(t, fs.MkdirAll("e", 0o755))
	syncDir(t, fs, "/")
	f, err := fs.Create("d/f")
	must(t, err)
	syncDir(t, fs, "d")
	write(t, f, "synced")
	must(t, f.Sync())
	must(t, fs.Link("d/f", "e/g"))
	if got := contents(t, fs.CrashClone(), "e/g"); got != "<absent>" {
		t.Fatalf("link without a directory sync after crash: %q; want absent", got)
	}
	syncDir(t, fs, "e")
	write(t, f, "+more")
	crashed := fs.CrashClone()
	if got := contents(t, crashed, "e/g"); got != "synced" {
		t.Fatalf("synced link after crash: %q; want the file's synced contents", got)
	}
	// The two surviving names are still one file.
	g, err := crashed.Create("e/g")
	must(t, err)
	write(t, g, "x")
	must(t, g.Close())
	if got := contents(t, crashed, "d/f"); got != "x" {
		t.Fatalf("after a crash, a write through one name shows %q through the other; want %q", got, "x")
	}
	// Syncing through the new name makes the old name's data durable.
	h, err := fs.Open("e/g")
	must(t, err)
	must(t, h.Sync())
	must(t, h.Close())
	if got := contents(t, fs.CrashClone(), "d/f"); got != "synced+more" {
		t.Fatalf("after a sync through the link and a crash, d/f holds %q", got)
	}
	// Removing a name is durable on its directory's sync; the other stays.
	must(t, fs.Remove("d/f"))
	syncDir(t, fs, "d")
	crashed = fs.CrashClone()
	if contents(t, crashed, "d/f") != "<absent>" || contents(t, crashed, "e/g") != "synced+more" {
		t.Fatalf("after removing d/f and a crash: d/f %q, e/g %q", contents(t, crashed, "d/f"), contents(t, crashed, "e/g"))
	}
}

// TestMemCrashNewDirectory: a directory made by MkdirAll needs its parent
// synced, and its files need it synced.
func TestMemCrashNewDirectory(t *testing.T) {
	fs := vfs.NewMem()
	must(t, fs.MkdirAll("a/b", 0o755))
	writeFile(t, fs, "a/b/f", "x")
	syncDir(t, fs, "a/b")
	syncDir(t, fs, "a")
	if _, err := fs.CrashClone().Stat("a"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("directory whose parent was never synced after crash: %v; want ErrNotExist", err)
	}
	syncDir(t, fs, "/")
	if got := contents(t, fs.CrashClone(), "a/b/f"); got != "x" {
		t.Fatalf("after syncing every parent and crash: %q", got)
	}
}

// TestMemCrashCloneIsIndependent: the clone is a fresh file system, without
// the original's locks, and changes to either do not show in the other.
func TestMemCrashCloneIsIndependent(t *testing.T) {
	fs := newMemDir(t)
	writeFile(t, fs, "d/f", "one")
	syncDir(t, fs, "d")
	l := lock(t, fs, "d/LOCK", exclusive)
	defer l.Close()
	c := fs.CrashClone()
	must(t, lock(t, c, "d/LOCK", exclusive).Close())
	writeFile(t, c, "d/f", "two")
	if got := contents(t, fs, "d/f"); got != "one" {
		t.Fatalf("original changed by a write to the clone: %q", got)
	}
	writeFile(t, fs, "d/f", "three")
	syncDir(t, fs, "d")
	if got := contents(t, c, "d/f"); got != "two" {
		t.Fatalf("clone changed by a write to the original: %q", got)
	}
}

// TestMemConcurrent exercises concurrent writers, ReadAt, Sync and
// CrashClone under the race detector.
func TestMemConcurrent(t *testing.T) {
	fs := newMemDir(t)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("d/%d", i)
			f, err := fs.Create(name)
			if err != nil {
				t.Error(err)
				return
			}
			defer f.Close()
			buf := make([]byte, 4)
			for j := range 200 {
				f.Write([]byte("abcd"))
				if n, err := f.ReadAt(buf, int64(j*4)); n != 4 || err != nil && err != io.EOF || string(buf) != "abcd" {
					t.Errorf("ReadAt = %d, %v, %q", n, err, buf)
					return
				}
				if j%50 == 0 {
					f.Sync()
					fs.CrashClone()
				}
			}
		}()
	}
	wg.Wait()
}
