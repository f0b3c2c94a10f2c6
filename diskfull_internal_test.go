package shale

import (
	"errors"
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
