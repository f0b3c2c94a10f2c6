//go:build linux

package vfs

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestKernelExcludesSecondDescriptor checks, below the registry, that on
// Linux both locks lockFile takes conflict with a second open of the same
// file in this process: flock locks and OFD locks belong to the open file,
// not the process. (Classic F_SETLK locks would not; the registry covers
// that on kernels without OFD locks.)
func TestKernelExcludesSecondDescriptor(t *testing.T) {
	p := filepath.Join(t.TempDir(), "LOCK")
	open := func() *os.File {
		f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	a, b := open(), open()
	if err := lockFile(a, false); err != nil {
		t.Fatal(err)
	}
	if err := lockFile(b, false); !errors.Is(err, ErrLocked) {
		t.Fatalf("second exclusive lock on another descriptor = %v; want ErrLocked", err)
	}
	if err := lockFile(b, true); !errors.Is(err, ErrLocked) {
		t.Fatalf("shared lock beside an exclusive one = %v; want ErrLocked", err)
	}
	a.Close()
	if err := lockFile(b, true); err != nil {
		t.Fatalf("shared lock after release: %v", err)
	}
	if err := lockFile(open(), true); err != nil {
		t.Fatalf("second shared lock: %v", err)
	}
}
