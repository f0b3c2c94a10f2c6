//go:build unix

package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
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

// check reports a FIFO in place of the MANIFEST or a log as damage too.
func TestCheckFIFOManifestAndLog(t *testing.T) {
	for _, which := range []string{"MANIFEST", "log"} {
		t.Run(which, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "db")
			ok(t, "", "--db", dir, "put", "a", "1")
			var p string
			if which == "MANIFEST" {
				cur, err := os.ReadFile(filepath.Join(dir, "CURRENT"))
				if err != nil {
					t.Fatal(err)
				}
				p = filepath.Join(dir, strings.TrimSpace(string(cur)))
				if err := os.Remove(p); err != nil {
					t.Fatal(err)
				}
			} else {
				p = filepath.Join(dir, "000999.log")
			}
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Skipf("mkfifo: %v", err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, kvcliBin, "--db", dir, "check")
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			err := cmd.Run()
			if ctx.Err() != nil {
				t.Fatalf("kvcli check with a FIFO %s still waits after 10 s (output so far %q)", filepath.Base(p), out.String())
			}
			if err == nil || !strings.Contains(out.String(), "not a regular file") {
				t.Fatalf("kvcli check with a FIFO %s: %v, output %q; want damage, not a regular file", filepath.Base(p), err, out.String())
			}
		})
	}
}
