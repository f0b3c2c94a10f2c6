package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// copyFile copies src to dst.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestDumpRefusesWrongKindByName: the dumps refuse, with exit status 2 and
// nothing on stdout, a directory and a file that shale names as another
// kind, and say what to run instead.
func TestDumpRefusesWrongKindByName(t *testing.T) {
	dir := t.TempDir()
	table, log := makeDB(t, dir)
	m := files(t, dir, "MANIFEST")[0]
	current := filepath.Join(dir, "CURRENT")
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"wal", "dump", table}, "kvcli: " + table + " is a table, not a write-ahead log: use kvcli sst dump"},
		{[]string{"manifest", "dump", table}, " is a table, not a MANIFEST: use kvcli sst dump"},
		{[]string{"sst", "dump", log}, "kvcli: " + log + " is a write-ahead log, not a table: use kvcli wal dump"},
		{[]string{"manifest", "dump", log}, " is a write-ahead log, not a MANIFEST: use kvcli wal dump"},
		{[]string{"wal", "dump", m}, " is a MANIFEST, not a write-ahead log: use kvcli manifest dump"},
		{[]string{"manifest", "dump", current}, "kvcli: " + current + " is not a MANIFEST: it holds the name of the current MANIFEST (kvcli manifest dump " + m + ")"},
		{[]string{"wal", "dump", filepath.Join(dir, "LOCK")}, "LOCK is the database's lock file, not a write-ahead log"},
		{[]string{"sst", "dump", dir}, "kvcli: " + dir + " is a directory: sst dump takes a table file, such as " + table},
		{[]string{"wal", "dump", dir}, "kvcli: " + dir + " is a directory: wal dump takes a write-ahead log file, such as " + log},
		{[]string{"manifest", "dump", dir}, "kvcli: " + dir + " is a directory: manifest dump takes a MANIFEST file, such as " + m},
	} {
		if r := want(t, 2, c.msg, c.args...); r.stdout != "" {
			t.Errorf("kvcli %q printed %q", c.args, r.stdout)
		}
	}
}

// TestDumpChecksContent: a file under a name shale does not use is judged
// by its content: a table given to the log dumps is refused (exit 2), a
// MANIFEST given to wal dump, a log given to manifest dump and a text file
// given to any dump fail (exit 3), and each dump accepts its own kind.
func TestDumpChecksContent(t *testing.T) {
	dir := t.TempDir()
	table, log := makeDB(t, dir)
	m := files(t, dir, "MANIFEST")[0]
	other := t.TempDir()
	names := map[string]string{"table": table, "log": log, "manifest": m}
	for kind, src := range names {
		names[kind] = filepath.Join(other, kind+".bin")
		copyFile(t, src, names[kind])
	}
	text := filepath.Join(other, "notes.txt")
	if err := os.WriteFile(text, []byte(strings.Repeat("not a database file\n", 100)), 0o644); err != nil {
		t.Fatal(err)
	}
	want(t, 2, "kvcli: "+names["table"]+" ends in a table's magic number: it is a table, not a write-ahead log; use kvcli sst dump",
		"wal", "dump", names["table"])
	want(t, 2, "it is a table, not a MANIFEST", "manifest", "dump", names["table"])
	r := want(t, 3, "kvcli: "+names["manifest"]+": no record in it is a write batch (", "wal", "dump", names["manifest"])
	if !strings.Contains(r.stderr, " records): it is not a write-ahead log (a MANIFEST? try kvcli manifest dump)\n") {
		t.Errorf("wal dump of a MANIFEST: stderr %q", r.stderr)
	}
	want(t, 3, "kvcli: "+names["log"]+": no record in it is a VersionEdit (50 records): it is not a MANIFEST (a write-ahead log? try kvcli wal dump)",
		"manifest", "dump", names["log"])
	want(t, 3, "kvcli: "+text+": no fragment is intact: it is not a record log, or it is damaged throughout", "wal", "dump", text)
	want(t, 3, "no fragment is intact", "manifest", "dump", text)
	want(t, 3, "kvcli: "+text+" does not end in a table's footer and magic number: it is not a table", "sst", "dump", text)
	ok(t, "", "sst", "dump", names["table"])
	ok(t, "", "wal", "dump", names["log"])
	ok(t, "", "manifest", "dump", names["manifest"])
}

// TestDumpBareNameInDB: a FILE without a directory part is taken inside
// --db (or $KVCLI_DB); with a directory part, or without a database, as
// given.
func TestDumpBareNameInDB(t *testing.T) {
	dir := t.TempDir()
	table, log := makeDB(t, dir)
	m := files(t, dir, "MANIFEST")[0]
	if out := ok(t, "", "--db", dir, "sst", "dump", "--no-entries", filepath.Base(table)); !strings.Contains(out, "properties:") {
		t.Errorf("sst dump by bare name:\n%s", out)
	}
	if out := ok(t, "", "--db", dir, "manifest", "dump", filepath.Base(m)); !strings.Contains(out, "version after ") {
		t.Errorf("manifest dump by bare name:\n%s", out)
	}
	r := kv(t, "", []string{"KVCLI_DB=" + dir}, "wal", "dump", filepath.Base(log))
	if r.code != 0 || !strings.Contains(r.stdout, "50 records") {
		t.Errorf("wal dump by bare name with KVCLI_DB: exit %d, stderr %q", r.code, r.stderr)
	}
	want(t, 3, "no such file", "wal", "dump", filepath.Base(log)) // no database: the working directory
	want(t, 3, "no such file", "--db", dir, "wal", "dump", "./"+filepath.Base(log))
}
