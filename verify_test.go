package shale_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/shale-db/shale"
)

// verifyDB opens a database in a new directory with tables on more than
// one level and writes in its WAL.
func verifyDB(t *testing.T) (*shale.DB, string) {
	t.Helper()
	dir := t.TempDir()
	db, err := shale.Open(dir, &shale.Options{WriteBufferSize: 64 << 10, TargetFileSize: 32 << 10})
	if err != nil {
		t.Fatal(err)
	}
	val := strings.Repeat("v", 100)
	for i := range 20000 {
		if err := db.Put([]byte(fmt.Sprintf("k%06d", i*7919%20000)), []byte(val), shale.NoSync); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	for i := range 200 { // in the WAL only
		if err := db.Put([]byte(fmt.Sprintf("w%06d", i)), []byte(val), shale.NoSync); err != nil {
			t.Fatal(err)
		}
	}
	return db, dir
}

// flipByte inverts one byte of the file at path, at off (negative: from
// the end).
func flipByte(t *testing.T, path string, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if off < 0 {
		st, _ := f.Stat()
		off += st.Size()
	}
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0xff
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// TestVerifyIntact: an intact database verifies clean, also while
// writes, flushes and compactions go on.
func TestVerifyIntact(t *testing.T) {
	db, _ := verifyDB(t)
	defer db.Close()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := db.Put([]byte(fmt.Sprintf("c%07d", i)), []byte(strings.Repeat("x", 200)), shale.NoSync); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for range 5 {
		if err := db.Verify(context.Background()); err != nil {
			t.Error(err)
		}
	}
	close(stop)
	wg.Wait()
}

// TestVerifyFindsDamage: a damaged byte in a table's data block, in the
// WAL taking writes and in the MANIFEST is each reported with its file
// and an offset, as ErrCorruption; Get and the writes go on.
func TestVerifyFindsDamage(t *testing.T) {
	for _, c := range []struct {
		name string
		file func(dir string, s shale.Stats) string
		off  int64
	}{
		{"table", func(dir string, s shale.Stats) string {
			return filepath.Join(dir, fmt.Sprintf("%06d.ldb", s.Tables[len(s.Tables)/2].FileNum))
		}, 100},
		{"log", func(dir string, s shale.Stats) string {
			return filepath.Join(dir, fmt.Sprintf("%06d.log", s.LogNum))
		}, 2000},
		{"MANIFEST", func(dir string, _ shale.Stats) string {
			cur, _ := os.ReadFile(filepath.Join(dir, "CURRENT"))
			return filepath.Join(dir, strings.TrimSpace(string(cur)))
		}, 20},
	} {
		t.Run(c.name, func(t *testing.T) {
			db, dir := verifyDB(t)
			defer db.Close()
			s, err := db.Stats()
			if err != nil {
				t.Fatal(err)
			}
			path := c.file(dir, s)
			flipByte(t, path, c.off)
			err = db.Verify(context.Background())
			var ve *shale.VerifyError
			if !errors.As(err, &ve) || !errors.Is(err, shale.ErrCorruption) {
				t.Fatalf("Verify after damage to %s: %v; want a *VerifyError", filepath.Base(path), err)
			}
			d := ve.Damage[0]
			if d.File != filepath.Base(path) || d.Offset < 0 || d.Offset > c.off+4<<10 || len(ve.Damage) > 2 {
				t.Fatalf("damage at offset %d of %s reported as %v", c.off, filepath.Base(path), ve.Damage)
			}
			t.Logf("%v", err)
			if err := db.Put([]byte("after"), []byte("x"), shale.NoSync); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestVerifyContext: Verify stops when its context ends; on a closed DB
// it returns ErrClosed.
func TestVerifyContext(t *testing.T) {
	db, _ := verifyDB(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := db.Verify(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Verify with a canceled context: %v", err)
	}
	db.Close()
	if err := db.Verify(context.Background()); !errors.Is(err, shale.ErrClosed) {
		t.Fatalf("Verify after Close: %v", err)
	}
}

// TestVerifyReadOnly: a read-only DB's replayed logs are verified whole; a
// torn tail at the end of the newest, what a crash leaves, is not damage,
// and a damaged record before it is.
func TestVerifyReadOnly(t *testing.T) {
	db, dir := verifyDB(t)
	s, _ := db.Stats()
	logPath := filepath.Join(dir, fmt.Sprintf("%06d.log", s.LogNum))
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(logPath, st.Size()-3); err != nil { // a torn tail
		t.Fatal(err)
	}
	ro, err := shale.Open(dir, &shale.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := ro.Verify(context.Background()); err != nil {
		t.Fatalf("a read-only DB whose log ends in a torn write: %v", err)
	}
	ro.Close()
	flipByte(t, logPath, 100)
	ro, err = shale.Open(dir, &shale.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	var ve *shale.VerifyError
	if err := ro.Verify(context.Background()); !errors.As(err, &ve) || ve.Damage[0].File != filepath.Base(logPath) {
		t.Fatalf("a read-only DB with a damaged log: %v", err)
	}
}

// TestVerifyReadOnlyRecoveryVerdicts: on a read-only DB, Verify takes a
// torn tail as recovery took it. A crash just after a memtable switch
// leaves the torn log followed by an empty one; recovery accepts the tear
// there, and so must Verify. And the MANIFEST, loaded rather than
// written, is read whole: damage to it is found.
func TestVerifyReadOnlyRecoveryVerdicts(t *testing.T) {
	db, dir := verifyDB(t)
	s, _ := db.Stats()
	logPath := filepath.Join(dir, fmt.Sprintf("%06d.log", s.LogNum))
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(logPath)
	if err := os.Truncate(logPath, st.Size()-3); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, fmt.Sprintf("%06d.log", s.LogNum+50))
	if err := os.WriteFile(empty, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	ro, err := shale.Open(dir, &shale.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if err := ro.Verify(context.Background()); err != nil {
		t.Fatalf("read-only Verify of a torn log followed by an empty one: %v", err)
	}
	cur, _ := os.ReadFile(filepath.Join(dir, "CURRENT"))
	manifest := filepath.Join(dir, strings.TrimSpace(string(cur)))
	flipByte(t, manifest, 20)
	var ve *shale.VerifyError
	if err := ro.Verify(context.Background()); !errors.As(err, &ve) || ve.Damage[0].File != filepath.Base(manifest) {
		t.Fatalf("read-only Verify of a damaged MANIFEST: %v", err)
	}
}
