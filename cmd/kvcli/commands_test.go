package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shale-db/shale"
)

// TestReadmeDemo runs the kvcli commands of the README's first shell block
// as written (the built binary standing in for "go run ./cmd/kvcli", a
// temporary directory for ./demo-db): the puts create the database and the
// scan prints what they wrote.
func TestReadmeDemo(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile("(?s)```sh\n(.*?)```").FindSubmatch(readme)
	if block == nil {
		t.Fatal("README.md has no ```sh block")
	}
	dir := filepath.Join(t.TempDir(), "shale-demo")
	var puts, scans []string
	for _, line := range strings.Split(string(block[1]), "\n") {
		if !strings.HasPrefix(line, "go run ./cmd/kvcli ") {
			continue
		}
		for _, c := range strings.Split(line, " && ") {
			f := strings.Fields(c)
			if len(f) < 4 || strings.Join(f[:3], " ") != "go run ./cmd/kvcli" {
				t.Fatalf("README command %q is not a go run of kvcli", c)
			}
			args := f[3:]
			for i, a := range args {
				if a == "./demo-db" {
					args[i] = dir
				}
			}
			out := ok(t, "", args...)
			switch {
			case slices.Contains(args, "put") && len(args) >= 2:
				puts = append(puts, args[len(args)-2]+"\t"+args[len(args)-1]+"\n")
			case slices.Contains(args, "scan"):
				scans = append(scans, out)
			}
		}
	}
	if len(puts) == 0 || len(scans) != 1 {
		t.Fatalf("README's first block: %d puts and %d scans, want puts then one scan", len(puts), len(scans))
	}
	slices.Sort(puts)
	if scans[0] != strings.Join(puts, "") {
		t.Errorf("README's scan printed %q, want %q", scans[0], strings.Join(puts, ""))
	}
	if !strings.Contains(string(block[1]), "\ngo test ./...\n") {
		t.Error("README's first block lacks the test command")
	}
}

func TestGetPutDelete(t *testing.T) {
	dir := t.TempDir()
	ok(t, "", "--db", dir, "put", "k1", "v1")
	ok(t, "", "put", "--db", dir, "k2", "v2") // global flags after the command
	if got := ok(t, "", "--db", dir, "get", "k1"); got != "v1\n" {
		t.Errorf("get k1 = %q", got)
	}
	r := kv(t, "", []string{"KVCLI_DB=" + dir}, "get", "k2")
	if r.code != 0 || r.stdout != "v2\n" {
		t.Errorf("get k2 with KVCLI_DB: %+v", r)
	}
	ok(t, "", "--db", dir, "delete", "k1")
	r = want(t, 1, "kvcli: k1: not found\n", "--db", dir, "get", "k1")
	if r.stdout != "" {
		t.Errorf("get of a missing key printed %q", r.stdout)
	}
	// The line names the key as given, even one that reads like a
	// package's prefix or repeats a part: it used to lose "shale: ".
	for _, key := range []string{"shale", "wal: y", "x: x"} {
		want(t, 1, "kvcli: "+key+": not found\n", "--db", dir, "get", key)
	}
	want(t, 2, `kvcli: unknown command "shale: x": try "kvcli help"`+"\n", "--db", dir, "shale: x")
	ok(t, "", "--db", dir, "delete", "never-there")
	if got := contents(t, dir); len(got) != 1 || got["k2"] != "v2" {
		t.Errorf("database holds %q", got)
	}
}

func TestPutValueFromStdin(t *testing.T) {
	dir := t.TempDir()
	ok(t, "two\nlines\n", "--db", dir, "put", "k")
	if got := ok(t, "", "--db", dir, "get", "--raw", "k"); got != "two\nlines\n" {
		t.Errorf("get --raw = %q", got)
	}
	if got := ok(t, "", "--db", dir, "get", "k"); got != `two\nlines\n`+"\n" {
		t.Errorf("get = %q", got)
	}
	ok(t, "00ff\n", "--db", dir, "--hex", "put", "6b32") // "k2", value from stdin in hex
	if got := contents(t, dir)["k2"]; got != "\x00\xff" {
		t.Errorf("k2 = %q", got)
	}
}

func TestHexAndEscapedArguments(t *testing.T) {
	dir := t.TempDir()
	ok(t, "", "--db", dir, "--hex", "put", "00ff", "0a")
	ok(t, "", "--db", dir, "--escaped", "put", `a\tb\\`, `\xc3\xa9\x00`)
	ok(t, "", "--db", dir, "put", `lit\t`, "é")
	got := contents(t, dir)
	wantDB := map[string]string{"\x00\xff": "\n", "a\tb\\": "é\x00", `lit\t`: "é"}
	if len(got) != len(wantDB) {
		t.Fatalf("database holds %q, want %q", got, wantDB)
	}
	for k, v := range wantDB {
		if got[k] != v {
			t.Errorf("%q = %q, want %q", k, got[k], v)
		}
	}
	if out := ok(t, "", "--db", dir, "get", "--hex", "00ff"); out != "0a\n" {
		t.Errorf("get --hex = %q", out)
	}
	if out := ok(t, "", "--db", dir, "--escaped", "get", `a\tb\\`); out != `é\x00`+"\n" {
		t.Errorf("get --escaped = %q", out)
	}
	wantScan := `\x00\xff` + "\t" + `\n` + "\n" + `a\tb\\` + "\t" + `é\x00` + "\n" + `lit\\t` + "\té\n"
	if out := ok(t, "", "--db", dir, "scan"); out != wantScan {
		t.Errorf("scan = %q, want %q", out, wantScan)
	}
}

func TestScanFlags(t *testing.T) {
	dir := t.TempDir()
	fill(t, dir, func(db *shale.DB) {
		for _, k := range []string{"a", "b/1", "b/2", "b/3", "c", "d"} {
			put(t, db, k, "v"+k)
		}
	})
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--prefix", "b/"}, "b/1\tvb/1\nb/2\tvb/2\nb/3\tvb/3\n"},
		{[]string{"--start", "b/2", "--end", "d"}, "b/2\tvb/2\nb/3\tvb/3\nc\tvc\n"},
		{[]string{"--prefix", "b/", "--start", "b/2"}, "b/2\tvb/2\nb/3\tvb/3\n"},
		{[]string{"--prefix", "b/", "--end", "b/3"}, "b/1\tvb/1\nb/2\tvb/2\n"},
		{[]string{"--limit", "2"}, "a\tva\nb/1\tvb/1\n"},
		{[]string{"--reverse", "--limit", "2"}, "d\tvd\nc\tvc\n"},
		{[]string{"--reverse", "--prefix", "b/", "--keys-only"}, "b/3\nb/2\nb/1\n"},
		{[]string{"--start", "c", "--json"}, `{"key":"c","value":"vc"}` + "\n" + `{"key":"d","value":"vd"}` + "\n"},
		{[]string{"--end", ""}, ""},
		{[]string{"--hex", "--prefix", "62", "--limit", "1"}, "622f31\t76622f31\n"},
	}
	for _, tc := range tests {
		got := ok(t, "", append([]string{"--db", dir, "scan"}, tc.args...)...)
		if got != tc.want {
			t.Errorf("scan %q = %q, want %q", tc.args, got, tc.want)
		}
	}
}

func TestExitStatuses(t *testing.T) {
	dir := t.TempDir()
	ok(t, "", "--db", dir, "put", "k", "v")
	missing := filepath.Join(t.TempDir(), "nothing-here")
	tests := []struct {
		code    int
		errPart string
		args    []string
	}{
		{2, "no command", nil},
		{2, `unknown command "frob"`, []string{"frob"}},
		{2, "flag provided but not defined", []string{"--db", dir, "get", "--frob", "k"}},
		{2, "usage: kvcli get", []string{"--db", dir, "get"}},
		{2, "usage: kvcli get", []string{"--db", dir, "get", "a", "b"}},
		{2, "no database directory", []string{"get", "k"}},
		{2, "invalid byte", []string{"--db", dir, "--hex", "get", "zz"}},
		{2, "unknown escape", []string{"--db", dir, "--escaped", "get", `\q`}},
		{2, "--limit must not be negative", []string{"--db", dir, "scan", "--limit", "-1"}},
		{2, "usage: kvcli wal", []string{"wal", "show", "x"}},
		{1, "not found", []string{"--db", dir, "get", "absent"}},
		{3, "kvcli: no database in " + missing, []string{"--db", missing, "get", "k"}},
		{3, "kvcli: no database in " + missing, []string{"--db", missing, "scan"}},
		{3, "kvcli: no database in " + missing, []string{"--db", missing, "delete", "k"}},
		{3, "kvcli: no database in " + missing, []string{"--db", missing, "check"}},
		{3, "no such file", []string{"wal", "dump", missing}},
	}
	for _, tc := range tests {
		r := kv(t, "", nil, tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.errPart) {
			t.Errorf("kvcli %q: exit %d, stderr %q; want exit %d and %q", tc.args, r.code, r.stderr, tc.code, tc.errPart)
		}
		if r.code != 0 && strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("kvcli %q: stderr is not one line: %q", tc.args, r.stderr)
		}
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Errorf("read commands created %s (stat: %v)", missing, err)
	}
}

func TestHelp(t *testing.T) {
	out := ok(t, "", "help")
	for _, s := range []string{"get KEY", "scan", "dump", "load", "stats", "check", "wal dump FILE",
		"sst dump FILE", "manifest dump FILE", "crashtest", "Exit status", "1  get: the key has no value",
		"3  any other failure", "kvcli help escaping", "KVCLI_DB"} {
		if !strings.Contains(out, s) {
			t.Errorf("help lacks %q", s)
		}
	}
	if strings.Contains(out, "crashtest-writer") {
		t.Errorf("help lists the internal crashtest-writer")
	}
	if got := ok(t, "", "--help"); got != out {
		t.Errorf("--help differs from help")
	}
	esc := ok(t, "", "help", "escaping")
	for _, s := range []string{`\xNN`, `\\`, "key_base64", "dump | kvcli --db NEW load"} {
		if !strings.Contains(esc, s) {
			t.Errorf("help escaping lacks %q", s)
		}
	}
	for _, c := range commands {
		if c.hidden {
			continue
		}
		h := ok(t, "", c.name, "-h")
		if !strings.HasPrefix(h, "Usage: kvcli "+c.name) || strings.Contains(h, "-db") != (c.name != "help") {
			t.Errorf("%s -h = %q", c.name, h)
		}
		if h2 := ok(t, "", "help", c.name); h2 != h {
			t.Errorf("help %s differs from %s -h", c.name, c.name)
		}
	}
	if !strings.Contains(ok(t, "", "check", "-h"), "Exit status 3 if anything is damaged") {
		t.Errorf("check -h does not give its exit status")
	}
}

func TestStats(t *testing.T) {
	dir := t.TempDir()
	fill(t, dir, func(db *shale.DB) {
		put(t, db, "a", "1")
		put(t, db, "z", "2")
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
		put(t, db, "m", "3")
	})
	out := ok(t, "", "--db", dir, "stats")
	for _, s := range []string{"database: " + dir, "last sequence: 3", "tables: 1,", "[a .. z]", "logs: ", ".log", "recovery (SkipCorrupt"} {
		if !strings.Contains(out, s) {
			t.Errorf("stats lacks %q:\n%s", s, out)
		}
	}
}

// TestLocked holds the database open in this process: kvcli must fail at
// once with the lock error, writers and readers alike.
func TestLocked(t *testing.T) {
	dir := t.TempDir()
	db, err := shale.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	line := "kvcli: database " + dir + " is locked by another process\n"
	for _, args := range [][]string{{"put", "k", "v"}, {"get", "k"}, {"scan"}, {"check"}, {"load"}} {
		r := want(t, 3, "", append([]string{"--db", dir}, args...)...)
		if r.stderr != line {
			t.Errorf("kvcli %q: stderr %q, want %q", args, r.stderr, line)
		}
	}
}

// TestReadCommandsChangeNothing runs every read command and compares the
// directory, file by file, before and after.
func TestReadCommandsChangeNothing(t *testing.T) {
	dir := t.TempDir()
	fill(t, dir, func(db *shale.DB) {
		for i := range 500 {
			put(t, db, fmt.Sprintf("key%03d", i), strings.Repeat("v", i%50))
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
		put(t, db, "after-flush", "in the log")
	})
	before := snapshot(t, dir)
	table, log, manifest := files(t, dir, ".ldb")[0], files(t, dir, ".log")[0], files(t, dir, "MANIFEST")[0]
	for _, args := range [][]string{
		{"get", "key007"}, {"scan"}, {"dump"}, {"dump", "--json"}, {"stats"}, {"check"},
		{"wal", "dump", log}, {"sst", "dump", table}, {"manifest", "dump", manifest},
	} {
		ok(t, "", append([]string{"--db", dir}, args...)...)
	}
	after := snapshot(t, dir)
	for p, d := range before {
		if after[p] != d {
			t.Errorf("%s changed: %s -> %s", p, d, after[p])
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("%s appeared", p)
		}
	}
}

func TestCompact(t *testing.T) {
	dir := t.TempDir()
	for i := range 4 { // each put opens, recovers and closes: the writes stay in the WAL
		ok(t, "", "--db", dir, "put", fmt.Sprint("k", i), fmt.Sprint("v", i))
	}
	ok(t, "", "--db", dir, "delete", "k1")
	out := ok(t, "", "--db", dir, "compact")
	if !strings.Contains(out, "tables after:  L6: 1\n") || !strings.Contains(out, "tables before: none\n") ||
		!strings.Contains(out, "compacted: ") || !strings.Contains(out, "write amplification: ") {
		t.Fatalf("compact printed %q", out)
	}
	if got := contents(t, dir); len(got) != 3 || got["k0"] != "v0" || got["k3"] != "v3" {
		t.Fatalf("after compact the database holds %q", got)
	}
	ok(t, "", "--db", dir, "compact", "--start", "k2", "--end", "k3")
	want(t, 2, "kvcli: usage", "--db", dir, "compact", "extra-arg")
	want(t, 2, "the range is reversed", "--db", dir, "compact", "--start", "k3", "--end", "k2")
}

// TestPutChecksFlagsBeforeStdin: put KEY without VALUE, with no --db or a
// bad --recovery, fails with a usage error at once; it used to wait for
// the whole value on stdin first (forever, on a terminal left open).
func TestPutChecksFlagsBeforeStdin(t *testing.T) {
	for _, args := range [][]string{
		{"put", "k"},
		{"--db", t.TempDir(), "--recovery", "bogus", "put", "k"},
	} {
		cmd := exec.Command(kvcliBin, args...)
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "KVCLI_DB=") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		stdin, err := cmd.StdinPipe() // held open, never written
		if err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			var x *exec.ExitError
			if !errors.As(err, &x) || x.ExitCode() != 2 {
				t.Errorf("kvcli %q: %v (stderr %q); want exit status 2", args, err, stderr.String())
			}
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Errorf("kvcli %q still waits for stdin after 10 s", args)
		}
		stdin.Close()
	}
}
