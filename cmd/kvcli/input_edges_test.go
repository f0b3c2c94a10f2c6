package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// check reads at most a short line of CURRENT and quotes at most a part of
// it: a huge CURRENT costs no memory to speak of and prints one short line.
func TestCheckHugeCurrent(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	ok(t, "", "--db", dir, "put", "a", "1")
	junk := append(bytes.Repeat([]byte("A"), 8<<20), '\n')
	if err := os.WriteFile(filepath.Join(dir, "CURRENT"), junk, 0o644); err != nil {
		t.Fatal(err)
	}
	r := kv(t, "", nil, "--db", dir, "check")
	if r.code != 3 {
		t.Fatalf("exit status %d, want 3", r.code)
	}
	if n := len(r.stdout) + len(r.stderr); n > 64<<10 {
		t.Errorf("check printed %d bytes for an 8 MiB CURRENT (first line %.80q...)", n, r.stdout)
	}
}

// A refused repair (no database, a missing directory) prints no result of a
// repair that never ran, only its error and exit status 3.
func TestRepairRefusedPrintsNoResult(t *testing.T) {
	base := t.TempDir()
	empty := filepath.Join(base, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{empty, filepath.Join(base, "missing")} {
		r := kv(t, "", nil, "--db", dir, "repair")
		if r.code != 3 {
			t.Fatalf("%s: exit status %d, want 3", dir, r.code)
		}
		if bytes.Contains([]byte(r.stdout), []byte("nothing was lost")) || bytes.Contains([]byte(r.stdout), []byte("result:")) {
			t.Errorf("%s: repair refused (%q) but stdout says %q", dir, r.stderr, r.stdout)
		}
	}
}

// get of the empty key, absent, says which key it looked for.
func TestEmptyKeyNotFoundMessage(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	ok(t, "", "--db", dir, "put", "a", "1")
	r := kv(t, "", nil, "--db", dir, "get", "")
	if r.code != 1 {
		t.Fatalf("exit status %d, want 1", r.code)
	}
	if r.stderr != "kvcli: the empty key: not found\n" {
		t.Errorf("stderr %q does not say which key", r.stderr)
	}
}
