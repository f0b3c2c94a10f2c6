package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/shale-db/shale"
)

// TestFlagsAfterArguments: a command's flags may follow its positional
// arguments; "--" ends the flags.
func TestFlagsAfterArguments(t *testing.T) {
	dir := t.TempDir()
	ok(t, "", "--db", dir, "put", "a", "1")
	if got := ok(t, "", "--db", dir, "get", "a", "--raw"); got != "1" {
		t.Errorf("get a --raw = %q, want the raw value", got)
	}
	if got := ok(t, "", "get", "61", "--db", dir, "--hex"); got != "31\n" {
		t.Errorf("get 61 --db DIR --hex = %q", got)
	}
	if got := ok(t, "", "--db", dir, "--hex", "get", "61", "--raw"); got != "1" {
		t.Errorf("get with a global flag first and a command flag last = %q", got)
	}
	ok(t, "", "--db", dir, "put", "--", "-k", "-v") // after --, arguments
	if got := ok(t, "", "--db", dir, "get", "--raw", "--", "-k"); got != "-v" {
		t.Errorf("get -- -k = %q", got)
	}
	if got := ok(t, "", "--db", dir, "scan", "--keys-only", "--start", "-", "--end", "b"); got != "-k\na\n" {
		t.Errorf("scan with flag values beginning with - = %q", got)
	}
	want(t, 2, "flag provided but not defined: -nope", "--db", dir, "get", "a", "--nope")
	want(t, 2, "usage: kvcli get", "--db", dir, "get", "a", "--raw", "b")
	file := writeLog(t, batch(1, "k", "v"))
	if out := ok(t, "", "wal", "dump", file, "--full"); !strings.Contains(out, "1\tPUT\tk\tv\n") {
		t.Errorf("wal dump FILE --full:\n%s", out)
	}
}

// TestHexAndEscapedConflict: --hex and --escaped together are a usage
// error, wherever each is given.
func TestHexAndEscapedConflict(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"--db", dir, "--hex", "--escaped", "put", "61", "62"},
		{"--db", dir, "--hex", "put", "--escaped", "61", "62"},
		{"--db", dir, "put", "61", "62", "--escaped", "--hex"},
		{"--db", dir, "scan", "--hex", "--escaped"},
	} {
		want(t, 2, "kvcli: --hex and --escaped exclude each other", args...)
	}
	if _, err := os.Stat(filepath.Join(dir, "CURRENT")); err == nil {
		t.Error("a refused put created the database")
	}
}

// TestReversedRange: --start after --end is a usage error naming both; an
// equal start and end select nothing. DB.Compact refuses a reversed range
// too.
func TestReversedRange(t *testing.T) {
	dir := t.TempDir()
	ok(t, "", "--db", dir, "put", "a", "1")
	ok(t, "", "--db", dir, "put", "c", "3")
	for _, cmd := range []string{"scan", "dump"} {
		r := want(t, 2, "kvcli: --start c is after --end b", "--db", dir, cmd, "--start", "c", "--end", "b")
		if r.stdout != "" {
			t.Errorf("%s with a reversed range printed %q", cmd, r.stdout)
		}
	}
	want(t, 2, "--start 63 is after --end 62", "--db", dir, "--hex", "scan", "--start", "63", "--end", "62")
	if got := ok(t, "", "--db", dir, "scan", "--start", "c", "--end", "c"); got != "" {
		t.Errorf("scan of an empty range = %q", got)
	}
	if got := ok(t, "", "--db", dir, "scan", "--start", "a", "--end", "c"); got != "a\t1\n" {
		t.Errorf("scan [a, c) = %q", got)
	}
	want(t, 2, "kvcli: --start c is after --end b", "--db", dir, "compact", "--start", "c", "--end", "b")
}

// TestVersion: --version prints the module path and the version the go
// command stamped into the binary (as "go version -m" reads it).
func TestVersion(t *testing.T) {
	out := ok(t, "", "--version")
	m, err := exec.Command("go", "version", "-m", kvcliBin).Output()
	if err != nil {
		t.Fatal(err)
	}
	mod := regexp.MustCompile(`(?m)^\s+mod\s+(\S+)\s+(\S+)`).FindStringSubmatch(string(m))
	if mod == nil {
		t.Fatalf("go version -m gives no mod line:\n%s", m)
	}
	if wantPrefix := "kvcli " + mod[1] + " " + mod[2] + " (go"; !strings.HasPrefix(out, wantPrefix) || !strings.HasSuffix(out, ")\n") {
		t.Errorf("--version = %q, want %q...", out, wantPrefix)
	}
	if mod[1] != "github.com/shale-db/shale" {
		t.Errorf("module path %q", mod[1])
	}
	if !strings.Contains(ok(t, "", "help"), "--version") {
		t.Error("help does not mention --version")
	}
}

// TestPutStdinHintOnlyOnTerminal: put KEY without VALUE reads stdin
// silently when it is not a terminal (TestPutStdinHintOnTerminal covers
// the terminal).
func TestPutStdinHintOnlyOnTerminal(t *testing.T) {
	dir := t.TempDir()
	r := kv(t, "piped", nil, "--db", dir, "put", "k")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("put from a pipe: exit %d, stderr %q", r.code, r.stderr)
	}
	if got := contents(t, dir)["k"]; got != "piped" {
		t.Fatalf("value from a pipe = %q", got)
	}
}

// commandFlags returns the flags a command's help lists.
func commandFlags(t *testing.T, name string) []string {
	t.Helper()
	h := ok(t, "", "help", name)
	var flags []string
	for _, m := range regexp.MustCompile(`(?m)^  -(\S+)`).FindAllStringSubmatch(h, -1) {
		flags = append(flags, m[1])
	}
	return flags
}

// TestCommandHelpListsItsFlags: each command's help lists the flags it
// uses and no other; a global flag a command does not use is an error
// after its name.
func TestCommandHelpListsItsFlags(t *testing.T) {
	for name, want := range map[string]string{
		"get":       "db escaped hex raw recovery",
		"put":       "db escaped hex recovery",
		"load":      "batch db hex json recovery",
		"check":     "db",
		"stats":     "db hex recovery",
		"wal":       "db full hex",
		"sst":       "db full hex no-entries",
		"manifest":  "db",
		"crashtest": "cycles db fault keep max-ms max-ops min-ms seed writers",
		"help":      "",
	} {
		if got := strings.Join(commandFlags(t, name), " "); got != want {
			t.Errorf("help %s lists flags %q, want %q", name, got, want)
		}
	}
	want(t, 2, "flag provided but not defined: -escaped", "manifest", "dump", "--escaped", "x")
	want(t, 2, "flag provided but not defined: -hex", "check", "--hex")
}

// TestErrorLineIsOneSentence: kvcli's error line drops the library's
// package prefixes and the closing corruption sentinel.
func TestErrorLineIsOneSentence(t *testing.T) {
	dir := t.TempDir()
	fill(t, dir, func(db *shale.DB) {
		put(t, db, "a", "1")
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	})
	tables := files(t, dir, ".ldb")
	if len(tables) != 1 {
		t.Fatalf("tables %q, want one", tables)
	}
	if err := os.Remove(tables[0]); err != nil {
		t.Fatal(err)
	}
	num := strings.TrimSuffix(filepath.Base(tables[0]), ".ldb")
	r := kv(t, "", nil, "--db", dir, "get", "a")
	if r.code != 3 {
		t.Fatalf("get with a table missing: exit %d, stderr %q", r.code, r.stderr)
	}
	line := strings.TrimSuffix(r.stderr, "\n")
	if !strings.HasPrefix(line, "kvcli: MANIFEST-") || !strings.Contains(line, "("+num+".ldb)") ||
		!strings.HasSuffix(line, " (damaged data)") || strings.Contains(line, "\n") {
		t.Errorf("error line %q, want \"kvcli: MANIFEST-... (%s.ldb) ... (damaged data)\"", line, num)
	}
	for _, p := range modulePackages {
		if strings.HasPrefix(line[len("kvcli: "):], p+": ") || strings.Contains(line, ": "+p+": ") {
			t.Errorf("error line %q keeps the package prefix %q", line, p+": ")
		}
	}
}
