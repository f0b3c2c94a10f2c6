package shale_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shale-db/shale"
	"github.com/shale-db/shale/vfs"
)

// TestInMemory: a database opened on vfs.NewMem(), closed, and opened again
// on the same value has all its data, flushed tables and WAL alike; nothing
// is created on the real disk; a second Open while one is open fails with
// ErrLocked; Repair works on it too.
func TestInMemory(t *testing.T) {
	mem := vfs.NewMem()
	dir := filepath.Join(t.TempDir(), "never-created")
	opts := &shale.Options{FS: mem, WriteBufferSize: 16 << 10}
	db, err := shale.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3000 {
		if err := db.Put(fmt.Appendf(nil, "k%05d", i), []byte("value"), shale.NoSync); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := shale.Open(dir, opts); !errors.Is(err, shale.ErrLocked) {
		t.Fatalf("a second Open on the same in-memory FS: %v", err)
	}
	if st, _ := db.Stats(); len(st.Tables) == 0 {
		t.Fatal("no table was flushed: the test needs some")
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the in-memory database touched the real disk: %v", err)
	}
	db, err = shale.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(scanPrefix(t, db, "k")); got != 3000 {
		t.Fatalf("%d keys after reopening on the same FS, want 3000", got)
	}
	db.Close()
	if _, err := shale.Repair(dir, opts); err != nil {
		t.Fatalf("Repair on the in-memory FS: %v", err)
	}
	if _, err := shale.Open(dir, &shale.Options{FS: vfs.NewMem(), ErrorIfNotExists: true}); err == nil {
		t.Fatal("another in-memory FS holds the database too")
	}
}

// TestLockedHere: a second Open of a directory this process has open says
// so, not "another process", and still matches ErrLocked.
func TestLockedHere(t *testing.T) {
	dir := t.TempDir()
	db, err := shale.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, err = shale.Open(dir, nil)
	if !errors.Is(err, shale.ErrLocked) || !strings.Contains(err.Error(), "already open in this process") {
		t.Fatalf("a second Open in this process: %v", err)
	}
}
