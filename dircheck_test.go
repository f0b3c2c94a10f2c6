package shale_test

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shale-db/shale"
	"github.com/shale-db/shale/internal/filename"
	"github.com/shale-db/shale/internal/manifest"
	"github.com/shale-db/shale/internal/vfs"
	"github.com/shale-db/shale/wal"
)

// A writable Open refuses a directory that holds anything a database does
// not, and changes nothing in it.
func TestOpenRefusesForeignDirectory(t *testing.T) {
	for _, name := range []string{"notes.txt", "000003.txt", "CURRENT.backup", "subdir"} {
		dir := t.TempDir()
		p := filepath.Join(dir, name)
		var err error
		if name == "subdir" {
			err = os.Mkdir(p, 0o755)
		} else {
			err = os.WriteFile(p, []byte("mine"), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
		db, err := shale.Open(dir, nil)
		if err == nil {
			db.Close()
			t.Fatalf("Open of a directory holding %s succeeded", name)
		}
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error %q does not name %s", err, name)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 1 {
			t.Errorf("Open of a foreign directory left %d entries, want the one", len(ents))
		}
	}
}

// The names LevelDB and goleveldb leave beside a database do not make it
// foreign.
func TestOpenAcceptsOtherStoresNames(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"CURRENT.bak", "CURRENT.7", "000009.tmp", "LOG", "LOG.old", "000005.dbtmp"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "lost"), 0o755); err != nil {
		t.Fatal(err)
	}
	db, err := shale.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestErrorIfNotExists(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	opts := &shale.Options{ErrorIfNotExists: true}
	if _, err := shale.Open(dir, opts); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Open of a missing directory = %v, want fs.ErrNotExist", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the directory was created: %v", err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := shale.Open(dir, opts); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Open of an empty directory = %v, want fs.ErrNotExist", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("Open created %d entries", len(ents))
	}
	db, err := shale.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	db, err = shale.Open(dir, opts)
	if err != nil {
		t.Fatalf("Open of an existing database with ErrorIfNotExists: %v", err)
	}
	db.Close()
}

// A file named like a log that holds no valid record is not deleted: it
// moves to lost/, and the database opens.
func TestLogWithoutRecordsMovesToLost(t *testing.T) {
	dir := t.TempDir()
	db, err := shale.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	junk := []byte("a small file that is not a log\n")
	if err := os.WriteFile(filepath.Join(dir, "999999.log"), junk, 0o644); err != nil {
		t.Fatal(err)
	}
	db, err = shale.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	got, err := os.ReadFile(filepath.Join(dir, "lost", "999999.log"))
	if err != nil || string(got) != string(junk) {
		t.Fatalf("lost/999999.log = %q, %v; want the file's bytes", got, err)
	}
}

// A log whose first write a kill cut short (a FIRST fragment's header and
// part of its payload, then the zeros reserved ahead of appends) is a torn
// tail, not a stranger: Open drops it as it drops any torn tail, deletes
// the log and moves nothing to lost/. A crash test's kill during the first
// write to a new WAL left one, which Open used to move to lost/.
func TestTornFirstWriteIsDropped(t *testing.T) {
	dir := t.TempDir()
	db, err := shale.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Put([]byte("before"), []byte("v"), shale.Sync); err != nil {
		t.Fatal(err)
	}
	db.Close()
	var log bytes.Buffer
	w := wal.NewWriter(&log)
	rec := make([]byte, 100<<10)
	for i := range rec {
		rec[i] = byte(i*7 + 1)
	}
	if err := w.WriteRecord(rec); err != nil {
		t.Fatal(err)
	}
	torn := make([]byte, 1<<20+4096) // the first 20,000 bytes written, then the reserved zeros
	copy(torn, log.Bytes()[:20000])
	name := filepath.Join(dir, "999999.log")
	if err := os.WriteFile(name, torn, 0o644); err != nil {
		t.Fatal(err)
	}
	db, err = shale.Open(dir, &shale.Options{Recovery: shale.Strict})
	if err != nil {
		t.Fatalf("Strict Open after a torn first write: %v", err)
	}
	defer db.Close()
	found := false
	for _, lr := range db.Recovery().Logs {
		if lr.FileNum != 999999 {
			continue
		}
		found = true
		if lr.Damaged() || lr.MovedTo != "" || lr.Records != 0 || lr.TornTail == nil || lr.TornTail.Offset != 0 {
			t.Fatalf("log 999999: %+v; want a torn tail from offset 0, nothing moved", lr)
		}
	}
	if !found {
		t.Fatal("the recovery report does not name log 999999")
	}
	if _, err := os.Stat(name); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the torn log is still there (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "lost")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("lost/ exists (%v)", err)
	}
	if v, err := db.Get([]byte("before")); err != nil || string(v) != "v" {
		t.Errorf("Get(before) = %q, %v", v, err)
	}
	if err := db.Put([]byte("after"), []byte("w"), shale.Sync); err != nil {
		t.Fatal(err)
	}
}

// dbFiles lists dir as dirListing does, less LOG, LOG.old and LOCK, which a
// writable Open touches even when it refuses the database.
func dbFiles(t testing.TB, dir string) string {
	var b strings.Builder
	for _, f := range strings.Fields(dirListing(t, dir)) {
		if !strings.HasPrefix(f, "LOG") && !strings.HasPrefix(f, "LOCK") {
			b.WriteString(f + " ")
		}
	}
	return b.String()
}

// wantRefused opens dir with opts and wants an error that contains every
// one of parts (and matches ErrCorruption if corrupt), with the database's
// files left as they were.
func wantRefused(t *testing.T, dir string, opts *shale.Options, corrupt bool, parts ...string) {
	t.Helper()
	before := dbFiles(t, dir)
	db, err := shale.Open(dir, opts)
	if err == nil {
		db.Close()
		t.Fatalf("Open(%s) succeeded; want an error naming %q", dir, parts)
	}
	if corrupt && !errors.Is(err, shale.ErrCorruption) {
		t.Errorf("Open = %v; want ErrCorruption", err)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("Open = %v; want an error naming %q", err, p)
		}
	}
	if after := dbFiles(t, dir); after != before {
		t.Errorf("the refused Open changed the directory:\n%s\nwant\n%s", after, before)
	}
}

// Open refuses, in every recovery mode and read-only, a database whose
// MANIFEST names a table that is gone, as LevelDB does: it names the table
// and points to Repair, and changes nothing. Repair then brings the rest
// back and Open accepts the result.
func TestOpenRefusesMissingTable(t *testing.T) {
	dir := t.TempDir()
	db, err := shale.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		mustPut(t, db, fmt.Sprintf("k%d", i), "v")
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	tables := files(t, dir, ".ldb")
	if len(tables) != 3 {
		t.Fatalf("%d tables, want 3", len(tables))
	}
	victim := tables[1]
	rm(t, filepath.Join(dir, victim))
	for _, o := range []shale.Options{
		{Recovery: shale.Strict}, {Recovery: shale.SkipCorrupt}, {Recovery: shale.PointInTime}, {ReadOnly: true},
	} {
		wantRefused(t, dir, &o, true, victim, "Repair")
	}
	rep := repairOK(t, dir)
	if len(rep.Missing) != 1 || rep.Missing[0] != victim {
		t.Errorf("Repair reports missing %v, want [%s]", rep.Missing, victim)
	}
	db = reopen(t, dir, nil)
	wantGet(t, db, "k0", []byte("v"))
	wantGet(t, db, "k2", []byte("v"))
}

// File numbers near 2^64 would wrap the file number counter to zero, and
// new files would take (and truncate) the numbers of live ones. Open
// refuses a MANIFEST that records one (damage, naming the field) and a
// directory that holds a file named with one, and writes nothing.
func TestOpenRefusesHugeFileNumbers(t *testing.T) {
	fill := func(t *testing.T) string {
		dir := t.TempDir()
		db := reopen(t, dir, nil)
		for i := range 100 {
			mustPut(t, db, fmt.Sprintf("old%03d", i), "v")
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	setNext := func(t *testing.T, dir string, next uint64) {
		vs, err := manifest.Load(vfs.OS(), dir, true)
		if err != nil {
			t.Fatal(err)
		}
		v, _, seq := vs.State()
		err = manifest.WriteState(vfs.OS(), dir, manifest.DirState{
			Version: v, LastSequence: seq, ManifestNum: 50, NextFileNumber: next,
		})
		v.Unref()
		vs.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	// Read-only, the database opens and reads.
	readOnly := func(t *testing.T, dir string) {
		t.Helper()
		db, err := shale.Open(dir, &shale.Options{ReadOnly: true})
		if err != nil {
			t.Fatalf("read-only Open: %v", err)
		}
		wantGet(t, db, "old000", []byte("v"))
		db.Close()
	}
	for _, next := range []uint64{math.MaxUint64, filename.MaxNum + 2} {
		t.Run(fmt.Sprintf("MANIFEST next %d", next), func(t *testing.T) {
			dir := fill(t)
			setNext(t, dir, next)
			wantRefused(t, dir, nil, true, "next file number")
		})
	}
	// A database whose file numbers reach the last 2^32 (filename.MaxStartNum)
	// opens to be written until they pass it; then it opens read-only only,
	// with an error that says why, and nothing changes.
	t.Run("numbers used up", func(t *testing.T) {
		dir := fill(t)
		setNext(t, dir, filename.MaxStartNum+1)
		db := reopen(t, dir, nil)
		mustPut(t, db, "new", "v")
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		wantRefused(t, dir, nil, true, "used up")
		readOnly(t, dir)
	})
	// A file numbered between the limit and MaxNum is a database file's
	// name, but one that leaves no room: Open and Repair refuse it, naming
	// it, and change nothing.
	t.Run("file above the limit", func(t *testing.T) {
		dir := fill(t)
		stray := fmt.Sprintf("%d.dbtmp", uint64(filename.MaxNum))
		if err := os.WriteFile(filepath.Join(dir, stray), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		wantRefused(t, dir, nil, false, stray)
		before := dbFiles(t, dir)
		if _, err := shale.Repair(dir, nil); err == nil || !strings.Contains(err.Error(), stray) {
			t.Errorf("Repair = %v; want an error naming %s", err, stray)
		}
		if after := dbFiles(t, dir); after != before {
			t.Errorf("the refused Repair changed the directory:\n%s\nwant\n%s", after, before)
		}
		readOnly(t, dir)
	})
	t.Run("file name", func(t *testing.T) {
		dir := fill(t)
		stray := "MANIFEST-18446744073709551615"
		if err := os.WriteFile(filepath.Join(dir, stray), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		wantRefused(t, dir, nil, false, stray)
	})
}
