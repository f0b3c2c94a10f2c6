package worker

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestParseIOCounters(t *testing.T) {
	in := "rchar: 6976\nwchar: 10001695\nsyscr: 10\nsyscw: 30\nread_bytes: 0\n" +
		"write_bytes: 10002432\ncancelled_write_bytes: 4096\n"
	got := parseIOCounters([]byte(in))
	if got != (ioCounters{wchar: 10001695, writeBytes: 10002432}) {
		t.Fatalf("got %+v", got)
	}
}

// wchar counts what this process writes.
func TestIOCountersSeeWrites(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc/self/io is Linux's")
	}
	before, err := readIOCounters()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(t.TempDir(), "f"), make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	after, _ := readIOCounters()
	if d := after.wchar - before.wchar; d < 1<<20 {
		t.Fatalf("wchar grew by %d after writing 1 MiB", d)
	}
}

func TestDirBytes(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "sub"), 0o755)
	os.WriteFile(filepath.Join(dir, "a"), make([]byte, 100), 0o644)
	os.WriteFile(filepath.Join(dir, "sub", "b"), make([]byte, 23), 0o644)
	if n, err := dirBytes(dir); n != 123 || err != nil {
		t.Fatalf("dirBytes = %d, %v; want 123", n, err)
	}
}

// One worker, in this process: a fillseq over shale prints one JSON result
// whose figures hold together.
func TestRunPhase(t *testing.T) {
	var out, errb bytes.Buffer
	args := Args(Spec{Store: "shale", Workload: "fillseq", Phase: PhaseRun, Dir: t.TempDir(), N: 500, Seed: 1})
	if code := Main(args, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var r Result
	if err := json.Unmarshal(out.Bytes(), &r); err != nil || strings.Count(out.String(), "\n") != 1 {
		t.Fatalf("output %q: %v", out.String(), err)
	}
	if r.Ops != 500 || r.Writes != 500 || r.Seconds <= 0 || r.DiskBytes <= 0 || r.Latency == nil ||
		r.Latency.Count != 500 || r.Latency.Max < r.Latency.P50 {
		t.Fatalf("result %+v", r)
	}
}

// -cache reaches every store's Config through the worker's arguments,
// except where the workload sizes the cache itself.
func TestCacheFlag(t *testing.T) {
	spec := Spec{Store: "shale", Workload: "readrandom", Phase: PhaseRun, Dir: "d", N: 4000, Seed: 1, CacheBytes: 3 << 20}
	got, err := parseSpec(Args(spec), io.Discard)
	if err != nil || got != spec {
		t.Fatalf("parseSpec(Args(%+v)) = %+v, %v", spec, got, err)
	}
	for name, want := range map[string]int64{"readrandom": 3 << 20, "readrandom4x": 4000 * 116 / 4} {
		w, _ := Lookup(name)
		if e := newEnv(got, w); e.cfg.CacheBytes != want {
			t.Errorf("%s: cache %d bytes, want %d", name, e.cfg.CacheBytes, want)
		}
	}
}

func TestMainRejects(t *testing.T) {
	for _, args := range [][]string{
		{"-store", "shale", "-workload", "nope", "-dir", t.TempDir(), "-n", "1"},
		{"-store", "nope", "-workload", "fillseq", "-dir", t.TempDir(), "-n", "1"},
		{"-store", "shale", "-workload", "fillseq", "-dir", t.TempDir(), "-n", "0"},
		{"-store", "shale", "-workload", "fillseq", "-phase", "prepare", "-dir", t.TempDir(), "-n", "1"},
	} {
		var out, errb bytes.Buffer
		if code := Main(args, &out, &errb); code == 0 || out.Len() != 0 {
			t.Errorf("%q: exit %d, stdout %q", args, code, out.String())
		}
	}
}

// seekrandom's found counts seeks that land on the key sought, as readrandom
// counts Gets that find theirs (and as db_bench counts them): both look up
// the same keys over the same fill, so the shares agree.
func TestSeekRandomFoundMatchesReadRandom(t *testing.T) {
	found := map[string]int64{}
	for _, wl := range []string{"readrandom", "seekrandom"} {
		dir := t.TempDir()
		var out, errb bytes.Buffer
		for _, phase := range []string{PhasePrepare, PhaseRun} {
			out.Reset()
			args := Args(Spec{Store: "shale", Workload: wl, Phase: phase, Dir: dir, N: 2000, Seed: 1})
			if code := Main(args, &out, &errb); code != 0 {
				t.Fatalf("%s %s: exit %d: %s", wl, phase, code, errb.String())
			}
		}
		var r Result
		if err := json.Unmarshal(out.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		found[wl] = r.Found
	}
	if found["seekrandom"] != found["readrandom"] {
		t.Fatalf("found: readrandom %d, seekrandom %d of 2000 lookups of the same keys", found["readrandom"], found["seekrandom"])
	}
}
