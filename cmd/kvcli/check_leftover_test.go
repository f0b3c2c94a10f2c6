package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shale-db/shale"
)

// After a crash inside a flush or compaction, the half-written table is in
// no MANIFEST: check says so, finds no damage and exits 0; the next write
// Open deletes it.
func TestCheckLeftoverTableIsNotDamage(t *testing.T) {
	dir := t.TempDir()
	fill(t, dir, func(db *shale.DB) {
		for i := range 100 {
			put(t, db, fmt.Sprintf("k%03d", i), "v")
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	})
	tables := files(t, dir, ".ldb")
	if len(tables) != 1 {
		t.Fatalf("tables %v, want one", tables)
	}
	b, err := os.ReadFile(tables[0])
	if err != nil {
		t.Fatal(err)
	}
	half := filepath.Join(dir, "000999.ldb")
	if err := os.WriteFile(half, b[:len(b)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	r := kv(t, "", nil, "--db", dir, "check")
	if r.code != 0 || strings.Contains(r.stdout, "damage:") ||
		!strings.Contains(r.stdout, "note: 000999.ldb: not in the MANIFEST: left over by an interrupted flush or compaction") ||
		!strings.Contains(r.stdout, "no damage") {
		t.Fatalf("check with a leftover table: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	ok(t, "", "--db", dir, "put", "a", "b")
	if _, err := os.Stat(half); err == nil {
		t.Fatal("a write Open left the leftover table in place")
	}
}

func TestCheckWithoutCurrent(t *testing.T) {
	dir := t.TempDir()
	fill(t, dir, func(db *shale.DB) { put(t, db, "k", "v") })
	if err := os.Remove(filepath.Join(dir, "CURRENT")); err != nil {
		t.Fatal(err)
	}
	r := want(t, 3, "CURRENT is missing in "+dir, "--db", dir, "check")
	if strings.Contains(r.stderr, "no database") {
		t.Fatalf("stderr %q", r.stderr)
	}
}
