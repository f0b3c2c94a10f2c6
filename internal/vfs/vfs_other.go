//go:build !linux && !windows && !darwin && !dragonfly && !freebsd && !netbsd && !openbsd

package vfs

import (
	"os"
	"runtime"

	"github.com/cockroachdb/errors"
)

// lockFile fails: this platform has no lock implementation, and one that
// excluded only this process would let two processes share a database.
func lockFile(f *os.File, shared bool) error {
	return errors.Newf("vfs: lock %s: file locking is not implemented on %s", f.Name(), runtime.GOOS)
}

// releaseFile closes f.
func releaseFile(f *os.File) error { return f.Close() }

// syncFile makes f's data durable with os.File.Sync.
func syncFile(f *os.File) error { return f.Sync() }

// syncDir makes a directory's entries durable with os.File.Sync.
func syncDir(f *os.File) error { return f.Sync() }
