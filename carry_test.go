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

// An Open that replays a sixteenth of the write buffer or more (here, the
// writes of a process that ended without a flush) still carries them
// forward, and flushes them in the background at once: Close waits for
// the table, and the next Open replays nothing. Open does not wait for
// the table, and every write reads back from it, before and after.
func TestOpenFlushesLargeCarry(t *testing.T) {
	dir := t.TempDir()
	opts := &shale.Options{WriteBufferSize: 1 << 20} // flushes carries of 64 KiB and up
	value := strings.Repeat("v", 200)
	const n = 500 // about 110 KiB of WAL records
	db, err := shale.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := db.Put([]byte(fmt.Sprintf("key%04d", i)), []byte(value), shale.NoSync); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	tables := func() int {
		t.Helper()
		m, err := filepath.Glob(filepath.Join(dir, "*.ldb"))
		if err != nil {
			t.Fatal(err)
		}
		return len(m)
	}
	if got := tables(); got != 0 {
		t.Fatalf("%d tables before the reopen, want none", got)
	}
	check := func(db *shale.DB) {
		t.Helper()
		for i := range n {
			if v, err := db.Get([]byte(fmt.Sprintf("key%04d", i))); err != nil || string(v) != value {
				t.Fatalf("key%04d: %d bytes, %v", i, len(v), err)
			}
		}
	}
	db, err = shale.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	if r := db.Recovery(); len(r.Logs) != 1 || r.Logs[0].Records != n {
		t.Fatalf("first reopen replayed %+v, want %d records", r.Logs, n)
	}
	check(db)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if got := tables(); got != 1 {
		t.Fatalf("%d tables after the reopen, want the carried writes' one", got)
	}
	db, err = shale.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, l := range db.Recovery().Logs {
		if l.Records != 0 {
			t.Fatalf("second reopen replayed %d records of log %d, want none", l.Records, l.FileNum)
		}
	}
	check(db)
}
