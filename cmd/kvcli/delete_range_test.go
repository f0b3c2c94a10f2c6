package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/shale-db/shale"
)

// TestDeleteRange: delete --start/--end with --yes deletes the range as
// one range deletion, which wal dump and sst dump show and check reports
// as the mark; without --yes and without a terminal it refuses and loses
// nothing; bad combinations are usage errors; compact takes the mark off.
func TestDeleteRange(t *testing.T) {
	dir := t.TempDir()
	for _, k := range []string{"a", "b", "c", "d", "e"} {
		ok(t, "", "--db", dir, "put", k, "v"+k)
	}
	want(t, 2, "needs --yes when stdin is not a terminal", "--db", dir, "delete", "--start", "b", "--end", "d")
	if got := contents(t, dir); len(got) != 5 {
		t.Fatalf("a refused range deletion deleted: %v", got)
	}
	want(t, 2, "not both", "--db", dir, "delete", "--start", "b", "c")
	want(t, 2, "--yes goes with --start/--end", "--db", dir, "delete", "--yes", "c")
	want(t, 2, "holds no key", "--db", dir, "delete", "--start", "d", "--end", "b", "--yes")
	ok(t, "", "--db", dir, "delete", "--start", "b", "--end", "d", "--yes")
	logs := files(t, dir, ".log")
	out := ok(t, "", "--db", dir, "wal", "dump", logs[len(logs)-1])
	if !strings.Contains(out, "RANGEDEL\tb\tto d (exclusive)") {
		t.Fatalf("wal dump does not show the range deletion:\n%s", out)
	}
	if got := contents(t, dir); len(got) != 3 || got["b"] != "" || got["c"] != "" || got["d"] != "vd" {
		t.Fatalf("after delete [b, d): %v", got)
	}
	if out := ok(t, "", "--db", dir, "check"); !strings.Contains(out, "marked") {
		t.Fatalf("check does not say the directory is marked:\n%s", out)
	}
	ok(t, "", "--db", dir, "delete", "--start", "e", "--yes") // no end
	if got := contents(t, dir); len(got) != 2 {
		t.Fatalf("after delete [e, ...): %v", got)
	}
	ok(t, "", "--db", dir, "compact")
	if out := ok(t, "", "--db", dir, "check"); strings.Contains(out, "marked") || !strings.Contains(out, "LevelDB's") {
		t.Fatalf("check after compact:\n%s", out)
	}
}

// TestSstDumpRangeDeletion: sst dump lists a table's range deletions. A
// snapshot held while the table is written keeps compaction from dropping
// the deletion before the dump reads it.
func TestSstDumpRangeDeletion(t *testing.T) {
	dir := t.TempDir()
	db, err := shale.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, k := range []string{"a", "b", "c", "d"} {
		db.Put([]byte(k), []byte("v"), shale.NoSync)
	}
	snap := db.NewSnapshot()
	defer snap.Close()
	if err := db.DeleteRange([]byte("b"), []byte("d"), shale.NoSync); err != nil {
		t.Fatal(err)
	}
	// Compact waits for the compactions, so that the tables listed stay;
	// the snapshot keeps the deletion in the last level.
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	var dumps strings.Builder
	for _, tb := range files(t, dir, ".ldb") {
		dumps.WriteString(ok(t, "", "--db", dir, "sst", "dump", tb))
	}
	if !strings.Contains(dumps.String(), "[b, d) deleted at sequence numbers") {
		t.Fatalf("no sst dump shows the range deletion:\n%s", dumps.String())
	}
}

// TestWalDumpCompressed: wal dump decodes the records of a WAL written
// with Options.WALCompression (shale's SNAPPY fragment types).
func TestWalDumpCompressed(t *testing.T) {
	dir := t.TempDir()
	db, err := shale.Open(dir, &shale.Options{WALCompression: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Put([]byte("key"), bytes.Repeat([]byte("compress me "), 10), shale.Sync); err != nil {
		t.Fatal(err)
	}
	db.Close()
	logs := files(t, dir, ".log")
	out := ok(t, "", "--db", dir, "wal", "dump", logs[len(logs)-1])
	if !strings.Contains(out, "SNAPPY-FULL fragment") || !strings.Contains(out, "snappy-compressed") || !strings.Contains(out, "PUT\tkey") {
		t.Fatalf("wal dump of a compressed WAL:\n%s", out)
	}
}

// TestCheckCompressedWAL: check reads a compressed WAL without damage and
// says the directory is marked.
func TestCheckCompressedWAL(t *testing.T) {
	dir := t.TempDir()
	db, err := shale.Open(dir, &shale.Options{WALCompression: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b"} {
		if err := db.Put([]byte(k), bytes.Repeat([]byte("compress me "), 10), shale.Sync); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	out := ok(t, "", "--db", dir, "check")
	if !strings.Contains(out, "no damage") || !strings.Contains(out, "marked") {
		t.Fatalf("check of a compressed WAL:\n%s", out)
	}
}
