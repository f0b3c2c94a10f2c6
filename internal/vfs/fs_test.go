package vfs_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/shale-db/shale/internal/vfs"
)

// implementations returns each FS under test with a directory to work in.
func implementations(t *testing.T) map[string]func() (vfs.FS, string) {
	return map[string]func() (vfs.FS, string){
		"os":  func() (vfs.FS, string) { return vfs.OS(), t.TempDir() },
		"mem": func() (vfs.FS, string) { return vfs.NewMem(), "db" },
	}
}

// TestFS runs the same checks against every implementation, so MemFS behaves
// as the real file system does where tests rely on it.
func TestFS(t *testing.T) {
	for name, mk := range implementations(t) {
		t.Run(name, func(t *testing.T) {
			fs, dir := mk()
			must(t, fs.MkdirAll(dir, 0o755))
			testWriteRead(t, fs, dir)
			testListRenameRemove(t, fs, dir)
			testLink(t, fs, dir)
			testErrors(t, fs, dir)
		})
	}
}

func testWriteRead(t *testing.T, fs vfs.FS, dir string) {
	p := filepath.Join(dir, "f")
	writeFile(t, fs, p, "hello, world")
	f, err := fs.Open(p)
	must(t, err)
	defer f.Close()
	got, err := io.ReadAll(f)
	must(t, err)
	if string(got) != "hello, world" {
		t.Fatalf("read %q", got)
	}
	buf := make([]byte, 5)
	if n, err := f.ReadAt(buf, 7); n != 5 || err != nil || string(buf) != "world" {
		t.Fatalf("ReadAt(7) = %d, %v, %q", n, err, buf)
	}
	if n, err := f.ReadAt(buf, 10); n != 2 || err != io.EOF {
		t.Fatalf("ReadAt past the end = %d, %v; want 2, io.EOF", n, err)
	}
	if fi, err := fs.Stat(p); err != nil || fi.Size() != 12 || fi.IsDir() || fi.Name() != "f" {
		t.Fatalf("Stat = %v, %v", fi, err)
	}
	if fi, err := f.Stat(); err != nil || fi.Size() != 12 {
		t.Fatalf("File.Stat = %v, %v", fi, err)
	}
	if _, err := f.Write([]byte("x")); err == nil {
		t.Fatal("Write on a file opened by Open succeeded")
	}
	// Create truncates.
	writeFile(t, fs, p, "new")
	if got := readFile(t, fs, p); got != "new" {
		t.Fatalf("after second Create: %q", got)
	}
	d, err := fs.OpenDir(dir)
	must(t, err)
	must(t, d.Sync())
	must(t, d.Close())
}

func testListRenameRemove(t *testing.T, fs vfs.FS, dir string) {
	sub := filepath.Join(dir, "x", "y")
	must(t, fs.MkdirAll(sub, 0o755))
	must(t, fs.MkdirAll(sub, 0o755)) // exists already: no error
	for _, n := range []string{"c", "a", "b"} {
		writeFile(t, fs, filepath.Join(sub, n), n)
	}
	if got, err := fs.List(sub); err != nil || !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("List = %q, %v", got, err)
	}
	must(t, fs.Rename(filepath.Join(sub, "a"), filepath.Join(sub, "b"))) // replaces b
	if got := readFile(t, fs, filepath.Join(sub, "b")); got != "a" {
		t.Fatalf("b after rename = %q", got)
	}
	must(t, fs.Remove(filepath.Join(sub, "c")))
	if got, err := fs.List(sub); err != nil || !slices.Equal(got, []string{"b"}) {
		t.Fatalf("List after rename and remove = %q, %v", got, err)
	}
	if err := fs.Remove(filepath.Join(dir, "x")); err == nil {
		t.Fatal("Remove of a non-empty directory succeeded")
	}
	if fi, err := fs.Stat(sub); err != nil || !fi.IsDir() {
		t.Fatalf("Stat(dir) = %v, %v", fi, err)
	}
}

func testLink(t *testing.T, fs vfs.FS, dir string) {
	a, b := filepath.Join(dir, "link-a"), filepath.Join(dir, "link-b")
	writeFile(t, fs, a, "one")
	must(t, fs.Link(a, b))
	if got := readFile(t, fs, b); got != "one" {
		t.Fatalf("new link reads %q", got)
	}
	// One file under two names: a write through either shows in both.
	f, err := fs.Create(b) // truncates the shared file
	must(t, err)
	write(t, f, "two")
	must(t, f.Close())
	if got := readFile(t, fs, a); got != "two" {
		t.Fatalf("after rewriting through the link, the old name reads %q", got)
	}
	if err := fs.Link(a, b); !errors.Is(err, os.ErrExist) {
		t.Fatalf("Link over an existing name = %v; want ErrExist", err)
	}
	var le *os.LinkError
	if err := fs.Link(filepath.Join(dir, "missing"), filepath.Join(dir, "c")); !errors.Is(err, os.ErrNotExist) || !errors.As(err, &le) {
		t.Fatalf("Link of a missing file = %v; want an *os.LinkError matching ErrNotExist", err)
	}
	if err := fs.Link(dir, filepath.Join(dir, "dirlink")); err == nil {
		t.Fatal("Link of a directory succeeded")
	}
	must(t, fs.Remove(a))
	if got := readFile(t, fs, b); got != "two" {
		t.Fatalf("after removing the old name, the link reads %q", got)
	}
	must(t, fs.Remove(b))
}

func testErrors(t *testing.T, fs vfs.FS, dir string) {
	missing := filepath.Join(dir, "missing")
	if _, err := fs.Open(missing); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Open(missing) = %v; want ErrNotExist", err)
	}
	if _, err := fs.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Stat(missing) = %v; want ErrNotExist", err)
	}
	if err := fs.Remove(missing); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Remove(missing) = %v; want ErrNotExist", err)
	}
	if err := fs.Rename(missing, missing+"2"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Rename(missing) = %v; want ErrNotExist", err)
	}
	if _, err := fs.Create(filepath.Join(missing, "f")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Create in a missing directory = %v; want ErrNotExist", err)
	}
	if _, err := fs.List(missing); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("List(missing) = %v; want ErrNotExist", err)
	}
	p := filepath.Join(dir, "file")
	writeFile(t, fs, p, "")
	if _, err := fs.OpenDir(p); err == nil {
		t.Fatal("OpenDir of a file succeeded")
	}
	f, err := fs.Create(p)
	must(t, err)
	must(t, f.Close())
	if _, err := f.Write([]byte("x")); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("Write after Close = %v; want ErrClosed", err)
	}
}

func writeFile(t testing.TB, fs vfs.FS, name, data string) {
	t.Helper()
	f, err := fs.Create(name)
	must(t, err)
	if _, err := f.Write([]byte(data)); err != nil {
		t.Fatal(err)
	}
	must(t, f.Sync())
	must(t, f.Close())
}

func readFile(t testing.TB, fs vfs.FS, name string) string {
	t.Helper()
	f, err := fs.Open(name)
	must(t, err)
	defer f.Close()
	var b bytes.Buffer
	if _, err := io.Copy(&b, f); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
