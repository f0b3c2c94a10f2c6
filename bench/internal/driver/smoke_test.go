package driver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shale-db/shale/bench/internal/kv"
	"github.com/shale-db/shale/bench/internal/worker"
)

// TestMain lets the test binary serve as the benchmark's worker, as the
// shalebench executable does.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == WorkerCommand {
		args := os.Args[2:]
		if w := os.Getenv("SHALEBENCH_TEST_FAIL_WORKLOAD"); w != "" && slices.Contains(args, w) {
			args = append(args, "-dir", "/dev/null/cannot-exist")
		}
		os.Exit(worker.Main(args, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

func allWorkloads() []string {
	var out []string
	for _, w := range worker.Workloads {
		out = append(out, w.Name)
	}
	return out
}

// Every workload on every store at a tiny size, one pass: the report renders
// as text and as Markdown, both parse back to the same cells, and every
// figure that applies is a positive number.
func TestSmoke(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{N: 2000, Passes: 1, Workloads: allWorkloads(), Stores: kv.Names, Seed: 1,
		Dir: t.TempDir(), Exe: exe, WorkerArgs: []string{WorkerCommand}}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var text, md bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	tSum, tDet := parseText(t, text.String())
	mSum, mDet := parseMarkdown(t, md.String())
	if fmt.Sprint(tSum) != fmt.Sprint(mSum) || fmt.Sprint(tDet) != fmt.Sprint(mDet) {
		t.Fatalf("text and Markdown disagree:\n%s\n%s", text.String(), md.String())
	}
	checkSummary(t, tSum, cfg)
	checkDetails(t, tDet, cfg)
	if entries, _ := os.ReadDir(cfg.Dir); len(entries) != 0 {
		t.Errorf("%d database directories left behind", len(entries))
	}
	t.Log("\n" + text.String())
}

var cellSep = regexp.MustCompile(`\s{2,}`)

// parseText returns the rows (header first) of the text report's two tables.
func parseText(t *testing.T, s string) (summary, details [][]string) {
	var tables [][][]string
	var cur [][]string
	for _, line := range strings.Split(s, "\n") {
		switch {
		case strings.HasPrefix(line, "workload "):
			cur = [][]string{cellSep.Split(strings.TrimSpace(line), -1)}
		case cur != nil && strings.TrimSpace(line) == "":
			tables, cur = append(tables, cur), nil
		case cur != nil:
			cur = append(cur, cellSep.Split(strings.TrimSpace(line), -1))
		}
	}
	if len(tables) != 2 {
		t.Fatalf("found %d tables in the text report:\n%s", len(tables), s)
	}
	return tables[0], tables[1]
}

// parseMarkdown returns the rows (header first, separator dropped) of the
// Markdown report's two tables.
func parseMarkdown(t *testing.T, s string) (summary, details [][]string) {
	var tables [][][]string
	var cur [][]string
	for _, line := range strings.Split(s, "\n") {
		if !strings.HasPrefix(line, "|") {
			if cur != nil {
				tables, cur = append(tables, cur), nil
			}
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if !strings.HasPrefix(cells[0], "---") {
			cur = append(cur, cells)
		}
	}
	if len(tables) != 2 {
		t.Fatalf("found %d tables in the Markdown report:\n%s", len(tables), s)
	}
	return tables[0], tables[1]
}

func checkSummary(t *testing.T, rows [][]string, cfg Config) {
	want := append(append([]string{"workload", "unit"}, cfg.Stores...),
		"shale/goleveldb", "shale/pebble", "shale/badger", "shale/bbolt")
	if fmt.Sprint(rows[0]) != fmt.Sprint(want) {
		t.Fatalf("summary header %q, want %q", rows[0], want)
	}
	if len(rows)-1 != len(cfg.Workloads) {
		t.Fatalf("summary has %d rows for %d workloads", len(rows)-1, len(cfg.Workloads))
	}
	for i, row := range rows[1:] {
		if len(row) != len(want) || row[0] != cfg.Workloads[i] {
			t.Fatalf("summary row %q", row)
		}
		w, _ := worker.Lookup(row[0])
		for j := 2; j < len(row); j++ {
			if store := strings.TrimPrefix(want[j], "shale/"); !w.Runs(store) {
				if row[j] != NA {
					t.Fatalf("summary %s: %s has %q for a workload it does not run", row[0], store, row[j])
				}
				continue
			}
			positive(t, func(string) (string, string) { return row[0] + " " + want[j], row[j] }, "", parseRate)
		}
	}
}

func checkDetails(t *testing.T, rows [][]string, cfg Config) {
	if fmt.Sprint(rows[0]) != fmt.Sprint(DetailHeader) {
		t.Fatalf("detail header %q", rows[0])
	}
	want := 0
	for _, wname := range cfg.Workloads {
		w, _ := worker.Lookup(wname)
		for _, s := range cfg.Stores {
			if w.Runs(s) {
				want++
			}
		}
	}
	if len(rows)-1 != want {
		t.Fatalf("%d detail rows, want %d", len(rows)-1, want)
	}
	col := map[string]int{}
	for i, h := range DetailHeader {
		col[h] = i
	}
	for _, row := range rows[1:] {
		if len(row) != len(DetailHeader) {
			t.Fatalf("detail row %q", row)
		}
		w, ok := worker.Lookup(row[0])
		if !ok || !kv.Known(row[1]) {
			t.Fatalf("detail row names %q, %q", row[0], row[1])
		}
		label := row[0] + " " + row[1] + " "
		get := func(h string) (string, string) { return label + h, row[col[h]] }
		for _, h := range []string{"throughput", "RSS MiB", "anon MiB", "disk MiB"} {
			positive(t, get, h, parseRate)
		}
		if rss, anon := positive(t, get, "RSS MiB", parseRate), positive(t, get, "anon MiB", parseRate); anon > rss {
			t.Errorf("%sanon %v MiB above RSS %v MiB", label, anon, rss)
		}
		positive(t, get, "time", parseDuration)
		applies(t, get, "shale/store", row[1] != "shale", parseRate)
		applies(t, get, "puts", w.Writes, parseRate)
		applies(t, get, "WA", w.Writes, parseRate)
		// write_bytes is 0 where the directory is on tmpfs: only that it
		// parses is checked.
		applies(t, get, "WA dev", w.Writes, func(s string) (float64, error) {
			v, err := parseRate(s)
			return v + 1, err
		})
		var prev float64
		for _, h := range []string{"p50", "p99", "p99.9", "p99.99", "max"} {
			v := applies(t, get, h, w.Latency, parseDuration)
			if v < prev {
				t.Errorf("%s%s below the percentile before it", label, h)
			}
			prev = v
		}
		checkFound(t, w, row[1], row[col["found"]])
	}
}

func checkFound(t *testing.T, w worker.Workload, store, cell string) {
	var share float64
	switch {
	case strings.HasSuffix(cell, "% conflicts"):
		// A transaction workload's share refused: only where writers race.
		var c float64
		if _, err := fmt.Sscanf(cell, "%f%% conflicts", &c); err == nil && c > 0 && c < 100 && w.Writes {
			share = 1
		}
	case !w.Reads:
		share = map[bool]float64{true: 1}[cell == NA]
	case w.Name == "recovery":
		var kept, of int
		var keys float64
		_, err := fmt.Sscanf(cell, "kept %d/%d, keys ≥ %f%%", &kept, &of, &keys)
		if err == nil && of == 1 && kept <= 1 && keys > 0 && keys <= 100 {
			share = 1
		}
		// shale's unsynced puts reach the OS before they return: every
		// acknowledged key survives the kill.
		if store == "shale" && (kept != 1 || keys != 100) {
			t.Errorf("recovery shale: %q, want the last put and every key kept", cell)
		}
	default:
		fmt.Sscanf(cell, "%f%%", &share)
	}
	if share <= 0 {
		t.Errorf("%s %s: found %q", w.Name, store, cell)
	}
}

func parseDuration(s string) (float64, error) {
	d, err := time.ParseDuration(s)
	return float64(d), err
}

// positive checks that column h of a row parses to a positive number.
func positive(t *testing.T, get func(string) (string, string), h string, parse func(string) (float64, error)) float64 {
	t.Helper()
	name, cell := get(h)
	v, err := parse(cell)
	if err != nil || v <= 0 {
		t.Errorf("%s = %q: want a positive figure", name, cell)
	}
	return v
}

// applies checks that column h is positive where the figure applies and NA
// where it does not.
func applies(t *testing.T, get func(string) (string, string), h string, ok bool, parse func(string) (float64, error)) float64 {
	t.Helper()
	if ok {
		return positive(t, get, h, parse)
	}
	if name, cell := get(h); cell != NA {
		t.Errorf("%s = %q: want %s", name, cell, NA)
	}
	return 0
}

// The command: flags select a workload and two stores, -markdown prints
// Markdown, -json writes every sample, and the workers are this executable.
func TestMainCommand(t *testing.T) {
	jsonPath, profiles := filepath.Join(t.TempDir(), "r.json"), filepath.Join(t.TempDir(), "prof")
	var out, errb bytes.Buffer
	args := []string{"-n", "300", "-passes", "2", "-workloads", "fillseq", "-stores", "goleveldb,shale",
		"-dir", t.TempDir(), "-markdown", "-json", jsonPath, "-cpuprofile", profiles}
	if code := Main(args, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "| fillseq | puts/s |") || !strings.Contains(out.String(), "| shale/goleveldb |") {
		t.Errorf("Markdown report:\n%s", out.String())
	}
	if n := strings.Count(errb.String(), "] fillseq pass "); n != 4 {
		t.Errorf("%d progress lines, want 4:\n%s", n, errb.String())
	}
	for _, name := range []string{"fillseq-shale-1", "fillseq-goleveldb-1", "fillseq-shale-2", "fillseq-goleveldb-2"} {
		if fi, err := os.Stat(filepath.Join(profiles, name+".pprof")); err != nil || fi.Size() == 0 {
			t.Errorf("profile %s: %v", name, err)
		}
	}
	var r Report
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	// shale first: the stores' order, not the flag's.
	if fmt.Sprint(r.Stores) != "[shale goleveldb]" || len(r.Cells["fillseq"]["shale"].Samples) != 2 {
		t.Fatalf("JSON report: stores %v, cells %+v", r.Stores, r.Cells)
	}
	for _, bad := range [][]string{{"-stores", "rocksdb"}, {"-workloads", "fill"}, {"extra"}} {
		if code := Main(bad, &out, &errb); code != 2 {
			t.Errorf("%q: exit %d, want 2", bad, code)
		}
	}
}

// A worker that fails stops the run with an error naming the job, and the
// report of what was measured so far still comes back.
func TestRunStopsAtFailedWorker(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{N: 100, Passes: 1, Workloads: []string{"fillseq", "readrandom"}, Stores: []string{"shale"},
		Dir: t.TempDir(), Exe: exe, WorkerArgs: []string{WorkerCommand}}
	// The readrandom workers are handed a directory that cannot exist.
	cfg.Env = append(os.Environ(), "SHALEBENCH_TEST_FAIL_WORKLOAD=readrandom")
	r, err := Run(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "readrandom") {
		t.Fatalf("err = %v, want one naming readrandom", err)
	}
	if r == nil || len(r.Cells["fillseq"]["shale"].Samples) != 1 || len(r.Cells["readrandom"]["shale"].Samples) != 0 {
		t.Fatalf("partial report %+v", r)
	}
}

func TestStatusKiB(t *testing.T) {
	status := []byte("Name:\tshalebench\nVmRSS:\t   61236 kB\nRssAnon:\t   35812 kB\nRssFile:\t   25424 kB\n")
	if got := statusKiB(status, "RssAnon:"); got != 35812 {
		t.Errorf("RssAnon = %d, want 35812", got)
	}
	if got := statusKiB(status, "VmSwap:"); got != 0 {
		t.Errorf("a missing field = %d, want 0", got)
	}
}
