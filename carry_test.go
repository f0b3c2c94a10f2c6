package shale_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shale-db/shale"
)

// One-shot writers (kvcli put, a cron job) open the database, write once
// and close: each Open carries the few replayed records forward in its new
// WAL instead of writing a level-0 table per run.
func TestOneShotOpensWriteNoTables(t *testing.T) {
	dir := t.TempDir()
	const n = 1000
	for i := range n {
		db, err := shale.Open(dir, nil)
		if err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
		if err := db.Put([]byte(fmt.Sprintf("key%04d", i)), []byte("value"), shale.NoSync); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
	names, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var tables, logs []string
	for _, e := range names {
		switch filepath.Ext(e.Name()) {
		case ".ldb", ".sst":
			tables = append(tables, e.Name())
		case ".log":
			logs = append(logs, e.Name())
		}
	}
	if len(tables) > 3 {
		t.Errorf("%d one-shot Opens left %d tables: %s", n, len(tables), strings.Join(tables, " "))
	}
	if len(logs) != 1 {
		t.Errorf("logs left: %v, want one", logs)
	}
	db, err := shale.Open(dir, &shale.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	got := scanPrefix(t, db, "key")
	if len(got) != n {
		t.Fatalf("read back %d keys, want %d", len(got), n)
	}
	if st, err := db.Stats(); err != nil || st.LastSequence != n {
		t.Errorf("last sequence %d (%v), want %d", st.LastSequence, err, n)
	}
}
