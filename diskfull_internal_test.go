package shale

import (
	"errors"
	"io/fs"
	"strings"
	"syscall"
	"testing"

	"github.com/shale-db/shale/internal/vfs"
)

// TestErrDiskFull: a write that fails because the disk is full (ENOSPC
// from the file system) returns an error matching ErrDiskFull as well as
// ENOSPC; so does every later write, and Close; an error of another kind
// does not match it.
func TestErrDiskFull(t *testing.T) {
	full := false
	ffs := vfs.NewFault(vfs.NewMem(), func(c vfs.Call) error {
		if full && c.Op.Mutates() {
			return syscall.ENOSPC
		}
		return nil
	})
	o, err := (&Options{}).withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	db, err := open("db", o, ffs)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Put([]byte("a"), []byte("1"), Sync); err != nil {
		t.Fatal(err)
	}
	full = true
	err = db.Put([]byte("b"), []byte("2"), Sync)
	if !errors.Is(err, ErrDiskFull) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("a write on a full disk: %v; want ErrDiskFull and ENOSPC", err)
	}
	if err := db.Put([]byte("c"), []byte("3"), NoSync); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("the next write: %v", err)
	}
	if err := db.Close(); err != nil && !errors.Is(err, ErrDiskFull) {
		t.Fatalf("Close: %v", err)
	}
	if errors.Is(markDiskFull(syscall.EIO), ErrDiskFull) {
		t.Fatal("EIO matches ErrDiskFull")
	}
}

// TestOpenPermissionDenied: an Open refused by the file system's
// permissions says so and points at Options.ReadOnly.
func TestOpenPermissionDenied(t *testing.T) {
	mem := vfs.NewMem()
	o, _ := (&Options{}).withDefaults()
	db, err := open("db", o, mem)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	denied := vfs.NewFault(mem, func(c vfs.Call) error {
		if c.Op.Mutates() && c.Op != vfs.OpLock { // a lock on an existing file is taken read-only
			return fs.ErrPermission
		}
		return nil
	})
	_, err = open("db", o, denied)
	err = openError("db", o, err)
	if !errors.Is(err, fs.ErrPermission) || !strings.Contains(err.Error(), "Options.ReadOnly") {
		t.Fatalf("Open of a directory that may not be written: %v", err)
	}
	o.ReadOnly = true
	ro, err := open("db", o, denied)
	if err != nil {
		t.Fatalf("read-only Open of the same directory: %v", err)
	}
	ro.Close()
}
