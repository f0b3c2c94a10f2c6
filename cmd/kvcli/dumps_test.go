package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/shale-db/shale/internal/batchrepr"
	"github.com/shale-db/shale/wal"
)

// writeLog writes records to a new log file and returns its path.
func writeLog(t *testing.T, recs ...[]byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "000007.log")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := wal.NewWriter(f)
	for _, r := range recs {
		if err := w.WriteRecord(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func batch(seq uint64, ops ...string) []byte {
	var b []byte
	for i := 0; i < len(ops); i += 2 {
		if ops[i+1] == "DEL" {
			b = batchrepr.AppendDelete(b, []byte(ops[i]))
		} else {
			b = batchrepr.AppendPut(b, []byte(ops[i]), []byte(ops[i+1]))
		}
	}
	batchrepr.SetSeq(b, seq)
	return b
}

func TestWALDump(t *testing.T) {
	big := strings.Repeat("z", 40000) // spans two blocks: FIRST, LAST
	path := writeLog(t, batch(1, "hello", "world", "gone", "DEL"), batch(3, "tab\tkey", big))
	out := ok(t, "", "wal", "dump", path)
	want := []string{
		"@0 FULL fragment, 31 bytes, checksum ok\n",
		"  record @0, 31 bytes:\n    batch: sequence 1, 2 entries\n",
		"    1\tPUT\thello\tworld\n",
		"    2\tDEL\tgone\n",
		"@38 FIRST fragment, 32723 bytes, checksum ok\n",
		"@32768 LAST fragment, 7301 bytes, checksum ok\n  record @38, 40024 bytes:\n",
		"    3\tPUT\ttab\\tkey\t" + strings.Repeat("z", 64) + "... (40000 bytes)\n",
		"000007.log: 3 fragments, 2 records, 0 damaged stretches, 0 torn tails\n",
	}
	for _, s := range want {
		if !strings.Contains(out, s) {
			t.Errorf("wal dump lacks %q:\n%s", s, out)
		}
	}
	full := ok(t, "", "wal", "dump", "--full", path)
	if !strings.Contains(full, big+"\n") {
		t.Errorf("wal dump --full does not print the whole value")
	}
}

func TestWALDumpDamage(t *testing.T) {
	path := writeLog(t, batch(1, "a", "1"), batch(2, "b", "2"))
	flipByte(t, path, 10) // first record's payload
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b[:len(b)-3], 0o644); err != nil {
		t.Fatal(err)
	}
	out := ok(t, "", "wal", "dump", path)
	if !regexp.MustCompile(`@0 damage: checksum mismatch, \d+ bytes skipped`).MatchString(out) {
		t.Errorf("wal dump does not show the damage:\n%s", out)
	}
	if !strings.Contains(out, "1 damaged stretches") {
		t.Errorf("wal dump summary:\n%s", out)
	}
}

func TestSSTAndManifestDump(t *testing.T) {
	dir := t.TempDir()
	table, _ := makeDB(t, dir)
	out := ok(t, "", "sst", "dump", table)
	for _, s := range []string{
		filepath.Base(table) + ": ", "footer: metaindex ", "filter: filter.leveldb.BuiltinBloomFilter2",
		"  data      @0+", "  index     @", "  metaindex @", "  filter    @",
		"entries:\n  key00000#1,PUT\tvalue 0 \n",
		"properties:\n  entries: 2000 (2000 puts, 0 deletions)\n",
		"  sequence numbers: 1..2000\n  smallest: key00000#1,PUT\n  largest: key01999#2000,PUT\n",
	} {
		if !strings.Contains(out, s) {
			t.Errorf("sst dump lacks %q:\n%.3000s", s, out)
		}
	}
	if strings.Contains(out, "DAMAGED") {
		t.Errorf("sst dump reports damage:\n%s", out)
	}
	if n := ok(t, "", "sst", "dump", "--no-entries", table); strings.Contains(n, "key00001#") {
		t.Errorf("sst dump --no-entries prints entries")
	}
	flipByte(t, table, 100)
	r := kv(t, "", nil, "sst", "dump", table)
	if r.code != 3 || !strings.Contains(r.stdout, "DAMAGED: "+filepath.Base(table)+": block checksum mismatch") {
		t.Errorf("sst dump of a damaged table: exit %d\n%s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	m := files(t, dir, "MANIFEST")[0]
	out = ok(t, "", "manifest", "dump", m)
	for _, s := range []string{"@0 FULL fragment", "comparator: leveldb.BytewiseComparator", "new-file: L0 ",
		"version after ", "  L0 "} {
		if !strings.Contains(out, s) {
			t.Errorf("manifest dump lacks %q:\n%s", s, out)
		}
	}
}
