//go:build unix

package vfs

import (
	"errors"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// Open refuses a FIFO at once, without waiting for a writer, and a
// directory; it opens a regular file as before.
func TestOpenRefusesNonRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "CURRENT")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		f, err := OS().Open(fifo)
		if err == nil {
			f.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, ErrNotRegular) {
			t.Fatalf("Open(FIFO) = %v; want ErrNotRegular", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Open of a FIFO still waits after 10 s")
	}
	if _, err := OS().Open(dir); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("Open(directory) = %v; want ErrNotRegular", err)
	}
	reg := filepath.Join(dir, "000001.log")
	f, err := OS().Create(reg)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if f, err := OS().Open(reg); err != nil {
		t.Fatalf("Open(regular file) = %v", err)
	} else {
		f.Close()
	}
}
