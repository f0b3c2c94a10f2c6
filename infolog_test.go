package shale_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shale-db/shale"
)

// damageNewestLog leaves a database whose WAL has a damaged block in the
// middle (a later block intact), as a bad sector would.
func damageNewestLog(t *testing.T, dir string) {
	t.Helper()
	db, err := shale.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	val := bytes.Repeat([]byte("v"), 1000)
	for i := range 200 {
		if err := db.Put([]byte{byte(i)}, val, shale.NoSync); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	if len(logs) != 1 {
		t.Fatalf("logs %v, want one", logs)
	}
	b, err := os.ReadFile(logs[0])
	if err != nil {
		t.Fatal(err)
	}
	for i := 40000; i < 40100; i++ {
		b[i] ^= 0x55
	}
	if err := os.WriteFile(logs[0], b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// With no Logger, a writable Open records what recovery dropped in LOG,
// and keeps the previous LOG as LOG.old; a read-only Open writes nothing.
func TestDefaultLoggerWritesLOG(t *testing.T) {
	dir := t.TempDir()
	damageNewestLog(t, dir)
	db, err := shale.Open(dir, &shale.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := os.Stat(filepath.Join(dir, "LOG.old")); err == nil {
		t.Fatal("a read-only Open rotated LOG")
	}
	before, _ := os.ReadFile(filepath.Join(dir, "LOG"))
	db, err = shale.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	log, err := os.ReadFile(filepath.Join(dir, "LOG"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "recovery dropped damaged bytes") {
		t.Fatalf("LOG does not record the drop:\n%s", log)
	}
	old, err := os.ReadFile(filepath.Join(dir, "LOG.old"))
	if err != nil || !bytes.Equal(old, before) {
		t.Fatalf("LOG.old = %q, %v; want the previous LOG %q", old, err, before)
	}
}

// TestLogRecordsFlushesAndCompactions: the LOG file says what flushes and
// compactions did, as LevelDB's does.
func TestLogRecordsFlushesAndCompactions(t *testing.T) {
	db, dir := openDB(t, &shale.Options{WriteBufferSize: 16 << 10})
	for i := range 2000 {
		if err := db.Put(fmt.Appendf(nil, "k%05d", i), make([]byte, 100), shale.NoSync); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "LOG"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"shale: flushed", "shale: compacted"} {
		if !strings.Contains(string(b), want) {
			t.Fatalf("LOG does not say %q:\n%s", want, b)
		}
	}
}
