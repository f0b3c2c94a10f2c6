package main

import (
	"archive/tar"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shale-db/shale"
	"github.com/shale-db/shale/sstable"
)

func fillMany(t *testing.T, dir string) {
	fill(t, dir, func(db *shale.DB) {
		for i := range 500 {
			put(t, db, fmt.Sprintf("k%04d", i), strings.Repeat("v", 100))
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
		for i := range 50 {
			put(t, db, fmt.Sprintf("w%04d", i), "in the WAL")
		}
	})
}

func TestBackupCommand(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "db")
	fillMany(t, src)
	want := contents(t, src)
	dest := filepath.Join(dir, "copy")
	ok(t, "", "--db", src, "backup", dest)
	if got := contents(t, dest); !maps.Equal(got, want) {
		t.Errorf("backup DEST holds %d keys, want %d", len(got), len(want))
	}
	want2(t, 3, "not empty", "--db", src, "backup", dest)
	// A backup inside the database would leave it refusing writable Opens.
	want2(t, 3, "inside the database", "--db", src, "backup", filepath.Join(src, "bk"))
	ok(t, "", "--db", src, "delete", "no such key") // a writable Open
	out := ok(t, "", "--db", src, "backup", "-")
	restored := filepath.Join(dir, "restored")
	if err := os.Mkdir(restored, 0o755); err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(strings.NewReader(out))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		if err := os.WriteFile(filepath.Join(restored, h.Name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := contents(t, restored); !maps.Equal(got, want) {
		t.Errorf("backup - restored %d keys, want %d", len(got), len(want))
	}
	db, err := shale.Open(src, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	want2(t, 3, "locked", "--db", src, "backup", filepath.Join(dir, "other"))
}

// want2 is want for commands whose error may be on stderr.
func want2(t *testing.T, code int, part string, args ...string) result {
	t.Helper()
	r := kv(t, "", nil, args...)
	if r.code != code || !strings.Contains(r.stderr+r.stdout, part) {
		t.Fatalf("kvcli %q: exit %d (want %d), output %q %q, want %q", args, r.code, code, r.stdout, r.stderr, part)
	}
	return r
}

func TestCheckSuggestsRepair(t *testing.T) {
	dir := t.TempDir()
	fillMany(t, dir)
	tables := files(t, dir, ".ldb")
	victim := tables[0]
	f, err := os.Open(victim)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := f.Stat()
	tr, err := sstable.Open(f, st.Size(), sstable.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := tr.Layout()
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	flipByte(t, victim, int64(l.Blocks[1].Handle.Offset)+5)
	r := kv(t, "", nil, "--db", dir, "check")
	if r.code != 3 || !strings.Contains(r.stdout, "repair") {
		t.Fatalf("check on a damaged table: exit %d, stdout %q; want 3 and a suggestion to repair", r.code, r.stdout)
	}
	r = kv(t, "", nil, "--db", dir, "repair")
	if r.code != 3 || !strings.Contains(r.stdout, "dropped block at offset") || !strings.Contains(r.stdout, filepath.Base(victim)) {
		t.Fatalf("repair: exit %d, stdout %q; want 3 and the dropped block named", r.code, r.stdout)
	}
	ok(t, "", "--db", dir, "check")
	if out := ok(t, "", "--db", dir, "repair"); !strings.Contains(out, "nothing was lost") {
		t.Errorf("second repair: %q", out)
	}
	if n := len(contents(t, dir)); n < 500 {
		t.Errorf("after repair %d keys, want most of 550", n)
	}
	if err := os.Remove(filepath.Join(dir, "CURRENT")); err != nil {
		t.Fatal(err)
	}
	want2(t, 3, "repair", "--db", dir, "check")
	ok(t, "", "--db", dir, "repair")
	if n := len(contents(t, dir)); n < 500 {
		t.Errorf("after repair %d keys, want most of 550", n)
	}
}
