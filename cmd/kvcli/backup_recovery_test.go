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
)

// untar unpacks a backup stream into a new directory under dir.
func untar(t *testing.T, stream, dir string) string {
	t.Helper()
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(strings.NewReader(stream))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return dir
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, h.Name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// dropped says how many damaged stretches and bytes a read-only Open of
// the database in dir drops from log, as backup writes it.
func dropped(t *testing.T, dir, log string) string {
	t.Helper()
	db, err := shale.Open(dir, &shale.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, lr := range db.Recovery().Logs {
		if fmt.Sprintf("%06d.log", lr.FileNum) != filepath.Base(log) {
			continue
		}
		var bytes int64
		for _, d := range lr.Drops {
			bytes += d.Bytes
		}
		if len(lr.Drops) == 0 || bytes == 0 {
			t.Fatalf("recovery drops nothing from %s: %+v", filepath.Base(log), lr)
		}
		if len(lr.Drops) == 1 {
			return fmt.Sprintf("1 damaged stretch, %d bytes", bytes)
		}
		return fmt.Sprintf("%d damaged stretches, %d bytes", len(lr.Drops), bytes)
	}
	t.Fatalf("recovery did not replay %s", filepath.Base(log))
	return ""
}

// TestBackupOfDamagedLogFails: a backup of a database whose log recovery
// drops damage from is written, the best copy there is, but exits 3 and
// names the log and what was dropped from it, in both forms.
func TestBackupOfDamagedLogFails(t *testing.T) {
	src, log := damagedLogDB(t)
	survivors := contents(t, src)
	if len(survivors) == 0 || len(survivors) >= 200 {
		t.Fatalf("the damaged database reads %d of 200 keys: want some lost and some kept", len(survivors))
	}
	lacks := "backup: the copy lacks what recovery dropped from " + filepath.Base(log) + ": " + dropped(t, src, log)
	checkStderr := func(what, stderr string) {
		t.Helper()
		var last string
		if lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n"); len(lines) > 0 {
			last = lines[len(lines)-1]
		}
		if !strings.HasPrefix(last, "kvcli: "+lacks) {
			t.Errorf("%s: stderr does not end with what the copy lacks (%q):\n%s", what, lacks, stderr)
		}
	}

	dest := filepath.Join(t.TempDir(), "copy")
	r := kv(t, "", nil, "--db", src, "backup", dest)
	if r.code != exitFailure {
		t.Fatalf("backup DEST of a damaged log: exit %d, want %d; stderr:\n%s", r.code, exitFailure, r.stderr)
	}
	checkStderr("backup DEST", r.stderr)
	if !strings.Contains(r.stderr, "backup: copied to "+dest) {
		t.Errorf("backup DEST does not say the copy was written:\n%s", r.stderr)
	}
	if got := contents(t, dest); !maps.Equal(got, survivors) {
		t.Errorf("the copy holds %d keys, want the %d that survive", len(got), len(survivors))
	}

	r = kv(t, "", nil, "--db", src, "backup", "-")
	if r.code != exitFailure {
		t.Fatalf("backup - of a damaged log: exit %d, want %d; stderr:\n%s", r.code, exitFailure, r.stderr)
	}
	checkStderr("backup -", r.stderr)
	restored := untar(t, r.stdout, filepath.Join(t.TempDir(), "restored"))
	if got := contents(t, restored); !maps.Equal(got, survivors) {
		t.Errorf("the stream restores %d keys, want the %d that survive", len(got), len(survivors))
	}

	// Point-in-time recovery stops at the damage: the copy lacks the rest.
	dest = filepath.Join(t.TempDir(), "copy")
	r = want(t, exitFailure, lacks+", and the rest of the log (point-in-time recovery stopped there)",
		"--db", src, "--recovery", "point-in-time", "backup", dest)
	checkStderr("backup --recovery point-in-time", r.stderr)
}

// TestBackupOfTornTailSucceeds: a log cut inside its last record is what
// a crash leaves, a write never acknowledged; it is no loss, and the
// backup exits 0.
func TestBackupOfTornTailSucceeds(t *testing.T) {
	src := t.TempDir()
	fill(t, src, func(db *shale.DB) {
		for i := range 30 {
			put(t, db, fmt.Sprintf("k%02d", i), strings.Repeat("v", 100))
		}
	})
	logs := files(t, src, ".log")
	if len(logs) != 1 {
		t.Fatalf("logs %v, want one", logs)
	}
	fi, err := os.Stat(logs[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(logs[0], fi.Size()-5); err != nil {
		t.Fatal(err)
	}
	want := contents(t, src)
	if len(want) != 29 {
		t.Fatalf("the log cut in its last record reads %d keys, want 29", len(want))
	}
	dest := filepath.Join(t.TempDir(), "copy")
	r := kv(t, "", nil, "--db", src, "backup", dest)
	if r.code != 0 || r.stderr != "backup: copied to "+dest+"\n" {
		t.Fatalf("backup DEST of a torn tail: exit %d, stderr %q; want 0 and the copy's name", r.code, r.stderr)
	}
	if got := contents(t, dest); !maps.Equal(got, want) {
		t.Errorf("the copy holds %d keys, want %d", len(got), len(want))
	}
	r = kv(t, "", nil, "--db", src, "backup", "-")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("backup - of a torn tail: exit %d, stderr %q; want 0 and nothing", r.code, r.stderr)
	}
	restored := untar(t, r.stdout, filepath.Join(t.TempDir(), "restored"))
	if got := contents(t, restored); !maps.Equal(got, want) {
		t.Errorf("the stream restores %d keys, want %d", len(got), len(want))
	}
}
