package main

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/shale-db/shale"
)

// checkedDB writes keys, flushed to a table, and more in the WAL, then
// closes; it returns the directory.
func checkedDB(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	db, err := shale.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2000 {
		if err := db.Put(fmt.Appendf(nil, "k%05d", i), []byte(strings.Repeat("v", 50)), shale.NoSync); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if err := db.Put(fmt.Appendf(nil, "w%05d", i), []byte("in the log"), shale.Sync); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestCheckSaysWhatItKnows: check does not claim what it cannot know. A
// damaged data block is damage Open gets past (only reads of its keys
// fail); a table missing from a damaged MANIFEST may be live; a log that
// ends inside a record may have been cut short after the fact.
func TestCheckSaysWhatItKnows(t *testing.T) {
	t.Run("damaged data block", func(t *testing.T) {
		dir := checkedDB(t)
		tb := files(t, dir, ".ldb")[0]
		b, err := os.ReadFile(tb)
		if err != nil {
			t.Fatal(err)
		}
		b[100] ^= 0xff // inside the first data block
		os.WriteFile(tb, b, 0o644)
		r := kv(t, "", nil, "--db", dir, "check")
		if r.code == 0 || strings.Contains(r.stdout, "Open cannot get past") || !strings.Contains(r.stdout, "Open works") {
			t.Fatalf("check of a damaged data block (exit %d):\n%s", r.code, r.stdout)
		}
	})
	t.Run("torn log", func(t *testing.T) {
		dir := checkedDB(t)
		logs := files(t, dir, ".log")
		lg := logs[len(logs)-1]
		fi, _ := os.Stat(lg)
		os.Truncate(lg, fi.Size()-5)
		out := ok(t, "", "--db", dir, "check")
		if strings.Contains(out, "never acknowledged; not damage") || !strings.Contains(out, "cannot tell apart") {
			t.Fatalf("check of a log cut inside a record:\n%s", out)
		}
	})
	t.Run("damaged MANIFEST", func(t *testing.T) {
		dir := checkedDB(t)
		m := files(t, dir, "MANIFEST")[0]
		b, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		b[20] ^= 0xff // the snapshot edit that lists the tables
		os.WriteFile(m, b, 0o644)
		r := kv(t, "", nil, "--db", dir, "check")
		if strings.Contains(r.stdout, "left over by an interrupted flush") || !strings.Contains(r.stdout, "may hold live data") {
			t.Fatalf("check with a damaged MANIFEST (exit %d):\n%s", r.code, r.stdout)
		}
	})
}
