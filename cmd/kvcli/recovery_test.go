package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shale-db/shale"
)

// damagedLogDB leaves a database whose only WAL has one damaged block
// between intact ones.
func damagedLogDB(t *testing.T) (dir, log string) {
	t.Helper()
	dir = t.TempDir()
	fill(t, dir, func(db *shale.DB) {
		for i := range 200 {
			put(t, db, fmt.Sprintf("k%03d", i), strings.Repeat("v", 1000))
		}
	})
	logs := files(t, dir, ".log")
	if len(logs) != 1 {
		t.Fatalf("logs %v, want one", logs)
	}
	for off := int64(40000); off < 40100; off++ {
		flipByte(t, logs[0], off)
	}
	return dir, logs[0]
}

// Damage is reported in one line on stderr, never as raw log lines: a
// read command says nothing moved, a write command where the copy is and
// that LOG has the details.
func TestRecoveryReportedInOneLine(t *testing.T) {
	dir, log := damagedLogDB(t)
	r := kv(t, "", nil, "--db", dir, "get", "k000")
	if r.code != 0 || r.stdout != strings.Repeat("v", 1000)+"\n" {
		t.Fatalf("get on a damaged log: exit %d, stdout %.20q", r.code, r.stdout)
	}
	lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "kvcli: recovery (skip) dropped ") ||
		!strings.Contains(lines[0], "nothing was moved") || !strings.Contains(lines[0], "kvcli help recovery") ||
		strings.Contains(r.stderr, "level=") {
		t.Fatalf("get's stderr:\n%s", r.stderr)
	}
	if _, err := os.Stat(log); err != nil {
		t.Fatalf("a read command moved the log: %v", err)
	}
	r = kv(t, "", nil, "--db", dir, "put", "a", "b")
	lines = strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
	lost := filepath.Join(dir, "lost") + string(filepath.Separator)
	if r.code != 0 || len(lines) != 1 || !strings.Contains(lines[0], "kept in "+lost) ||
		!strings.Contains(lines[0], filepath.Join(dir, "LOG")) {
		t.Fatalf("put: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(lost, filepath.Base(log))); err != nil {
		t.Fatalf("the damaged log is not in lost/: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "LOG"))
	if err != nil || !strings.Contains(string(b), "recovery dropped damaged bytes") {
		t.Fatalf("LOG = %q, %v; want the drop recorded", b, err)
	}
	if r := kv(t, "", nil, "--db", dir, "get", "a"); r.stderr != "" {
		t.Fatalf("after the move, get still reports: %q", r.stderr)
	}
}

func TestRecoveryFlag(t *testing.T) {
	dir, _ := damagedLogDB(t)
	before := snapshot(t, dir)
	want(t, 3, "Strict recovery", "--db", dir, "--recovery", "strict", "put", "a", "b")
	after := snapshot(t, dir)
	for p, d := range before {
		if after[p] != d && strings.HasSuffix(p, ".log") {
			t.Errorf("a strict Open that failed changed %s", p)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "lost")); err == nil {
		t.Error("a strict Open that failed moved a log to lost/")
	}
	r := kv(t, "", nil, "--db", dir, "scan", "--recovery", "point-in-time")
	if r.code != 0 || !strings.Contains(r.stderr, "recovery (point-in-time) dropped") || !strings.Contains(r.stderr, "stopped replaying") {
		t.Fatalf("point-in-time scan: exit %d, stderr %q", r.code, r.stderr)
	}
	full := kv(t, "", nil, "--db", dir, "scan")
	if n, m := strings.Count(r.stdout, "\n"), strings.Count(full.stdout, "\n"); n >= m || n == 0 {
		t.Fatalf("point-in-time kept %d keys, skip %d: want a non-empty prefix", n, m)
	}
	want(t, 2, "--recovery", "--db", dir, "--recovery", "maybe", "get", "k000")
	if !strings.Contains(ok(t, "", "help", "recovery"), "point-in-time") {
		t.Fatal("kvcli help recovery does not explain the modes")
	}
}
