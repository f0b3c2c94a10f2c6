package main

// The tests build kvcli once and run it as a user would, checking its
// output, its exit status and the files it leaves.

import (
	"bytes"
	"crypto/sha256"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shale-db/shale"
)

// kvcliBin is the binary under test, built by TestMain.
var kvcliBin string

func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.fuzzworker"); f != nil && f.Value.String() == "true" {
		// A fuzzing worker runs only a fuzz target, which needs no binary;
		// the coordinator starts workers again and again, and a build at
		// each start left FuzzRecords' worker idle most of a run.
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "kvcli-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	kvcliBin = filepath.Join(dir, "kvcli")
	if out, err := exec.Command("go", "build", "-o", kvcliBin, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// result is what one run of kvcli did.
type result struct {
	stdout, stderr string
	code           int
}

// kv runs kvcli with args and stdin; KVCLI_DB is unset unless env sets it.
func kv(t testing.TB, stdin string, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(kvcliBin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KVCLI_DB=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	if x, ok := err.(*exec.ExitError); ok {
		r.code = x.ExitCode()
	} else if err != nil {
		t.Fatalf("kvcli %q: %v", args, err)
	}
	return r
}

// ok runs kvcli and fails the test unless it exits 0; it returns stdout.
func ok(t testing.TB, stdin string, args ...string) string {
	t.Helper()
	r := kv(t, stdin, nil, args...)
	if r.code != 0 {
		t.Fatalf("kvcli %q: exit status %d, stderr %q", args, r.code, r.stderr)
	}
	return r.stdout
}

// want runs kvcli and checks its exit status and that stderr contains
// errPart.
func want(t testing.TB, code int, errPart string, args ...string) result {
	t.Helper()
	r := kv(t, "", nil, args...)
	if r.code != code {
		t.Fatalf("kvcli %q: exit status %d, want %d; stderr %q", args, r.code, code, r.stderr)
	}
	if !strings.Contains(r.stderr, errPart) {
		t.Fatalf("kvcli %q: stderr %q, want it to contain %q", args, r.stderr, errPart)
	}
	return r
}

// fill opens (creating) the database in dir with shale itself, applies
// fn, and closes it.
func fill(t testing.TB, dir string, fn func(db *shale.DB)) {
	t.Helper()
	db, err := shale.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	fn(db)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

func put(t testing.TB, db *shale.DB, k, v string) {
	t.Helper()
	if err := db.Put([]byte(k), []byte(v), shale.NoSync); err != nil {
		t.Fatal(err)
	}
}

// contents returns every entry of the database in dir, read with shale.
func contents(t testing.TB, dir string) map[string]string {
	t.Helper()
	db, err := shale.Open(dir, &shale.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	m := map[string]string{}
	for e, err := range db.All(nil) {
		if err != nil {
			t.Fatal(err)
		}
		m[string(e.Key)] = string(e.Value)
	}
	return m
}

// snapshot describes every file under dir: name, size, mode, modification
// time and a hash of the contents.
func snapshot(t testing.TB, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		desc := fmt.Sprintf("%v %d %v", fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		if !d.IsDir() {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			desc += fmt.Sprintf(" %x", sha256.Sum256(b))
		}
		m[path] = desc
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// files returns the paths in dir whose names end in suffix, sorted.
func files(t testing.TB, dir, suffix string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), suffix) || (suffix == "MANIFEST" && strings.HasPrefix(e.Name(), "MANIFEST-")) {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out
}

// flipByte inverts one byte of the file at path.
func flipByte(t testing.TB, path string, off int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if off >= int64(len(b)) {
		t.Fatalf("%s has %d bytes, cannot flip byte %d", path, len(b), off)
	}
	b[off] ^= 0xff
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
