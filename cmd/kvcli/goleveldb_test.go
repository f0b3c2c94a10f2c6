package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// copyGoLevelDB copies the database goleveldb wrote (testdata/goleveldb.txt
// says how) to a temporary directory, with the empty LOCK file goleveldb
// leaves.
func copyGoLevelDB(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join("testdata", "goleveldb")
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "LOCK"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestGoLevelDBDatabase runs the read commands on a database goleveldb
// wrote: a table, two logs and a MANIFEST numbered 0.
func TestGoLevelDBDatabase(t *testing.T) {
	dir := copyGoLevelDB(t)
	before := snapshot(t, dir)
	if out := ok(t, "", "--db", dir, "check"); !strings.Contains(out, "check: 5 files checked, no damage") {
		t.Errorf("check:\n%s", out)
	}
	if got := ok(t, "", "--db", dir, "get", "gk599"); got != "goleveldb value 599\n" {
		t.Errorf("get gk599 = %q", got)
	}
	want(t, 1, "not found", "--db", dir, "get", "gk007")
	if got := ok(t, "", "--db", dir, "--hex", "get", "62696e00ff"); got != "090a\n" {
		t.Errorf("get of the binary key = %q", got)
	}
	if n := strings.Count(ok(t, "", "--db", dir, "scan", "--keys-only"), "\n"); n != 600 {
		t.Errorf("scan found %d keys, want 600", n)
	}
	out := ok(t, "", "sst", "dump", filepath.Join(dir, "000003.ldb"))
	if !strings.Contains(out, "filter: none used") || !strings.Contains(out, "  gk000#1,PUT\tgoleveldb value 0\n") {
		t.Errorf("sst dump:\n%.2000s", out)
	}
	out = ok(t, "", "wal", "dump", filepath.Join(dir, "000004.log"))
	if !strings.Contains(out, "\tDEL\tgk007\n") || !strings.Contains(out, "0 damaged stretches, 0 torn tails") {
		t.Errorf("wal dump:\n%.2000s", out)
	}
	out = ok(t, "", "manifest", "dump", filepath.Join(dir, "MANIFEST-000000"))
	if !strings.Contains(out, "new-file: L0 000003 2439B [gk000#1,PUT .. ") {
		t.Errorf("manifest dump:\n%s", out)
	}
	after := snapshot(t, dir)
	for p, d := range before {
		if after[p] != d {
			t.Errorf("%s changed", p)
		}
	}
	if len(after) != len(before) {
		t.Errorf("files appeared: %d before, %d after", len(before), len(after))
	}
}
