package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/shale-db/shale"
	"github.com/shale-db/shale/sstable"
)

// makeDB writes a database with one table of several data blocks and a
// log with a few records, and returns the table's and the log's paths.
func makeDB(t *testing.T, dir string) (table, log string) {
	t.Helper()
	fill(t, dir, func(db *shale.DB) {
		for i := range 2000 {
			put(t, db, fmt.Sprintf("key%05d", i), fmt.Sprintf("value %d %s", i, strings.Repeat("x", i%40)))
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
		for i := range 50 {
			put(t, db, fmt.Sprintf("late%03d", i), strings.Repeat("y", 100))
		}
	})
	tables, logs := files(t, dir, ".ldb"), files(t, dir, ".log")
	if len(tables) != 1 || len(logs) != 1 {
		t.Fatalf("want one table and one log, have %q and %q", tables, logs)
	}
	return tables[0], logs[0]
}

func TestCheckHealthy(t *testing.T) {
	dir := t.TempDir()
	makeDB(t, dir)
	out := ok(t, "", "--db", dir, "check")
	for _, s := range []string{"ok: CURRENT: names MANIFEST-", "ok: MANIFEST-", ".ldb: ", "checksums ok (L0)", ".log: 50 records (live)", "no damage"} {
		if !strings.Contains(out, s) {
			t.Errorf("check output lacks %q:\n%s", s, out)
		}
	}
	if strings.Contains(out, "damage:") {
		t.Errorf("check reports damage in a healthy database:\n%s", out)
	}
}

// damageRE matches check's damage lines and captures file and offset.
var damageRE = regexp.MustCompile(`(?m)^damage: (\S+): .* at offset (\d+)`)

// checkDamaged runs check, which must exit 3, and returns the files and
// offsets of the damage it reports.
func checkDamaged(t *testing.T, dir string) (map[string][]string, string) {
	t.Helper()
	r := kv(t, "", nil, "--db", dir, "check")
	if r.code != 3 {
		t.Fatalf("check of a damaged database: exit %d, want 3; stdout:\n%s", r.code, r.stdout)
	}
	if !strings.HasPrefix(r.stderr, "kvcli: check: "+dir+": ") || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("check stderr = %q", r.stderr)
	}
	found := map[string][]string{}
	for _, m := range damageRE.FindAllStringSubmatch(r.stdout, -1) {
		found[m[1]] = append(found[m[1]], m[2])
	}
	return found, r.stdout
}

func TestCheckDamagedTable(t *testing.T) {
	dir := t.TempDir()
	table, _ := makeDB(t, dir)
	// A byte inside the second data block: the report names the block.
	flipByte(t, table, 5000)
	found, out := checkDamaged(t, dir)
	offs := found[filepath.Base(table)]
	if len(offs) != 1 || offs[0] == "0" {
		t.Fatalf("check found %v; want one damaged block of %s:\n%s", found, filepath.Base(table), out)
	}
	if !strings.Contains(out, "block checksum mismatch") {
		t.Errorf("check does not say what is wrong:\n%s", out)
	}
}

// A damaged filter block: reads go on without the filter, and check still
// names the block.
func TestCheckDamagedFilter(t *testing.T) {
	dir := t.TempDir()
	table, _ := makeDB(t, dir)
	f, err := os.Open(table)
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := f.Stat()
	r, err := sstable.Open(f, fi.Size(), sstable.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := r.Layout()
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	var filter sstable.BlockHandle
	for _, b := range l.Blocks {
		if b.Kind == "filter" {
			filter = b.Handle
		}
	}
	if filter.Length == 0 {
		t.Fatal("the table has no filter block")
	}
	flipByte(t, table, int64(filter.Offset+filter.Length/2))
	found, out := checkDamaged(t, dir)
	if offs := found[filepath.Base(table)]; len(offs) != 1 || offs[0] != fmt.Sprint(filter.Offset) {
		t.Fatalf("check found %v; want the filter block at %d:\n%s", found, filter.Offset, out)
	}
	if got := contents(t, dir); len(got) == 0 {
		t.Fatal("the database reads nothing with its filter damaged")
	}
}

func TestCheckDamagedTableFooter(t *testing.T) {
	dir := t.TempDir()
	table, _ := makeDB(t, dir)
	fi, err := os.Stat(table)
	if err != nil {
		t.Fatal(err)
	}
	flipByte(t, table, fi.Size()-1) // the magic number
	found, out := checkDamaged(t, dir)
	if want := fmt.Sprint(fi.Size() - 48); len(found[filepath.Base(table)]) != 1 || found[filepath.Base(table)][0] != want {
		t.Errorf("check found %v, want the footer at offset %s:\n%s", found, want, out)
	}
}

func TestCheckDamagedLog(t *testing.T) {
	dir := t.TempDir()
	_, log := makeDB(t, dir)
	flipByte(t, log, 100) // inside the first record
	found, out := checkDamaged(t, dir)
	offs := found[filepath.Base(log)]
	if len(offs) != 1 || offs[0] != "0" {
		t.Errorf("check found %v; want damage at offset 0 of %s:\n%s", found, filepath.Base(log), out)
	}
	if !strings.Contains(out, "checksum mismatch") {
		t.Errorf("check does not say what is wrong:\n%s", out)
	}
}

func TestCheckDamagedManifest(t *testing.T) {
	dir := t.TempDir()
	makeDB(t, dir)
	m := files(t, dir, "MANIFEST")
	if len(m) != 1 {
		t.Fatalf("manifests: %q", m)
	}
	flipByte(t, m[0], 10)
	found, out := checkDamaged(t, dir)
	if len(found[filepath.Base(m[0])]) == 0 {
		t.Errorf("check found %v, want damage in %s:\n%s", found, filepath.Base(m[0]), out)
	}
}

func TestCheckMissingTable(t *testing.T) {
	dir := t.TempDir()
	table, _ := makeDB(t, dir)
	if err := os.Remove(table); err != nil {
		t.Fatal(err)
	}
	_, out := checkDamaged(t, dir)
	if !strings.Contains(out, "damage: "+filepath.Base(table)+": missing: the MANIFEST lists it in L0") {
		t.Errorf("check does not report the missing table:\n%s", out)
	}
}

// TestCheckTornTail: a log cut inside its last record is what a crash
// leaves; check notes it and exits 0.
func TestCheckTornTail(t *testing.T) {
	dir := t.TempDir()
	_, log := makeDB(t, dir)
	fi, err := os.Stat(log)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(log, fi.Size()-20); err != nil {
		t.Fatal(err)
	}
	out := ok(t, "", "--db", dir, "check")
	if !strings.Contains(out, "note: "+filepath.Base(log)+": torn tail at offset") {
		t.Errorf("check does not note the torn tail:\n%s", out)
	}
}
