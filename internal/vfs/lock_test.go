package vfs_test

import (
	"errors"
	"io"
	"path/filepath"
	"testing"

	"github.com/shale-db/shale/internal/vfs"
)

const (
	exclusive = false
	shared    = true
)

// TestLockInProcess checks the lock semantics within one process for every
// implementation: exclusive excludes everything, shared locks coexist and
// are counted, Close releases, and errors match vfs.ErrLocked with the
// standard errors.Is.
func TestLockInProcess(t *testing.T) {
	for name, mk := range implementations(t) {
		t.Run(name, func(t *testing.T) {
			fs, dir := mk()
			must(t, fs.MkdirAll(dir, 0o755))
			p := filepath.Join(dir, "LOCK")
			// The same file spelled differently is the same lock.
			alias := filepath.Join(dir, ".", "LOCK")

			ex := lock(t, fs, p, exclusive)
			wantLocked(t, fs, alias, exclusive)
			wantLocked(t, fs, p, shared)
			must(t, ex.Close())
			must(t, ex.Close()) // twice is harmless and must not release another holder's lock

			sh1 := lock(t, fs, p, shared)
			sh2 := lock(t, fs, alias, shared)
			wantLocked(t, fs, p, exclusive)
			must(t, sh1.Close())
			wantLocked(t, fs, p, exclusive) // sh2 still holds it
			must(t, sh1.Close())
			wantLocked(t, fs, p, exclusive)
			must(t, sh2.Close())

			ex = lock(t, fs, p, exclusive) // everything released
			must(t, ex.Close())
		})
	}
}

// TestLockKeepsFile checks that Lock creates the file and never truncates it.
func TestLockKeepsFile(t *testing.T) {
	for name, mk := range implementations(t) {
		t.Run(name, func(t *testing.T) {
			fs, dir := mk()
			must(t, fs.MkdirAll(dir, 0o755))
			p := filepath.Join(dir, "LOCK")
			must(t, lock(t, fs, p, exclusive).Close())
			if _, err := fs.Stat(p); err != nil {
				t.Fatalf("Lock did not create the file: %v", err)
			}
			writeFile(t, fs, p, "pid 1")
			must(t, lock(t, fs, p, shared).Close())
			if got := readFile(t, fs, p); got != "pid 1" {
				t.Fatalf("after Lock the file holds %q", got)
			}
		})
	}
}

func lock(t testing.TB, fs vfs.FS, name string, sh bool) io.Closer {
	t.Helper()
	l, err := fs.Lock(name, sh)
	if err != nil {
		t.Fatalf("Lock(%s, shared=%v): %v", name, sh, err)
	}
	return l
}

func wantLocked(t testing.TB, fs vfs.FS, name string, sh bool) {
	t.Helper()
	l, err := fs.Lock(name, sh)
	if err == nil {
		l.Close()
		t.Fatalf("Lock(%s, shared=%v) succeeded while held", name, sh)
	}
	if !errors.Is(err, vfs.ErrLocked) {
		t.Fatalf("Lock(%s, shared=%v) = %v; want an error matching ErrLocked", name, sh, err)
	}
}
