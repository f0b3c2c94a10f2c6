//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// check reports a FIFO in place of CURRENT as damage instead of waiting
// for a writer.
func TestCheckFIFOCurrent(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	ok(t, "", "--db", dir, "put", "a", "1")
	p := filepath.Join(dir, "CURRENT")
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	r := kv(t, "", nil, "--db", dir, "check")
	if r.code != 3 || !strings.Contains(r.stdout, "CURRENT") || !strings.Contains(r.stdout, "not a regular file") {
		t.Fatalf("check with a FIFO CURRENT: exit %d, stdout %q", r.code, r.stdout)
	}
}
