package driver

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/cockroachdb/errors"

	"github.com/shale-db/shale/bench/internal/kv"
	"github.com/shale-db/shale/bench/internal/worker"
)

// WorkerCommand is the first argument that makes the benchmark's executable
// a worker: exe worker -store ... (see worker.Args).
const WorkerCommand = "worker"

// Main is the shalebench command: with args[0] == WorkerCommand it is a
// worker, otherwise it parses the flags, runs the benchmark with this
// executable as its workers, and prints the report. It returns the exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == WorkerCommand {
		return worker.Main(args[1:], stdout, stderr)
	}
	cfg, md, jsonPath, err := parseFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "shalebench:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	r, err := Run(ctx, cfg)
	if r != nil {
		// A run that failed part way still shows what it measured.
		if jerr := writeReport(r, md, jsonPath, stdout); err == nil {
			err = jerr
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "shalebench:", err)
		return 1
	}
	return 0
}

func writeReport(r *Report, md bool, jsonPath string, stdout io.Writer) error {
	if jsonPath != "" {
		if err := writeJSON(jsonPath, r); err != nil {
			return err
		}
	}
	if md {
		return r.WriteMarkdown(stdout)
	}
	return r.WriteText(stdout)
}

func parseFlags(args []string, stderr io.Writer) (cfg Config, md bool, jsonPath string, err error) {
	var workloads, stores string
	var quiet bool
	fs := flag.NewFlagSet("shalebench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: shalebench [flags]\n\nworkloads:\n")
		for _, w := range worker.Workloads {
			fmt.Fprintf(stderr, "  %-17s %s\n", w.Name, w.Doc)
		}
		fmt.Fprintf(stderr, "\nflags:\n")
		fs.PrintDefaults()
	}
	fs.IntVar(&cfg.N, "n", 1_000_000, "operations per workload (db_bench's num)")
	fs.IntVar(&cfg.Passes, "passes", 5, "passes over the stores; the median is reported")
	fs.StringVar(&workloads, "workloads", "all", "comma-separated workloads to run")
	fs.StringVar(&stores, "stores", "all", "comma-separated stores: "+strings.Join(kv.Names, ","))
	fs.Uint64Var(&cfg.Seed, "seed", 1, "seed of the random keys")
	fs.StringVar(&cfg.Dir, "dir", "", "directory for the databases (default: the system's temporary directory)")
	fs.BoolVar(&md, "markdown", false, "print the report as Markdown")
	fs.StringVar(&jsonPath, "json", "", "also write every sample as JSON to this file")
	fs.BoolVar(&quiet, "q", false, "no progress lines on stderr")
	fs.BoolVar(&cfg.Cold, "cold", false, "run each read workload's timed process after dropping the page cache, in a memory cgroup of -mem (root only)")
	mem := fs.Int64("mem", 512, "with -cold, the timed process's memory cgroup limit, in MiB")
	fs.IntVar(&cfg.Reads, "reads", 0, "lookups of readrandom, seekrandom and readwhilewriting (0: -n), over the key space of -n")
	cache := fs.Int64("cache", 0, "every store's block cache, in MiB (bbolt has none; readrandom4x sets its own); 0 leaves each store's default")
	fs.StringVar(&cfg.CPUProfiles, "cpuprofile", "", "write a CPU profile of each timed process into this directory (workload-store-pass.pprof)")
	if err = fs.Parse(args); err != nil {
		return cfg, md, jsonPath, err
	}
	if fs.NArg() > 0 {
		return cfg, md, jsonPath, errors.Newf("unexpected arguments %q", fs.Args())
	}
	if *mem <= 0 || cfg.Reads < 0 || *cache < 0 {
		return cfg, md, jsonPath, errors.Newf("-mem must be positive, -reads and -cache not negative")
	}
	cfg.MemLimit = *mem << 20
	cfg.CacheBytes = *cache << 20
	all := make([]string, len(worker.Workloads))
	for i, w := range worker.Workloads {
		all[i] = w.Name
	}
	if cfg.Workloads, err = selectNames("workload", workloads, all); err != nil {
		return cfg, md, jsonPath, err
	}
	if cfg.Stores, err = selectNames("store", stores, kv.Names, kv.Variants...); err != nil {
		return cfg, md, jsonPath, err
	}
	if cfg.Exe, err = os.Executable(); err != nil {
		return cfg, md, jsonPath, err
	}
	cfg.WorkerArgs = []string{WorkerCommand}
	if cfg.CPUProfiles != "" {
		if err = os.MkdirAll(cfg.CPUProfiles, 0o755); err != nil {
			return cfg, md, jsonPath, err
		}
	}
	if !quiet {
		cfg.Progress = stderr
	}
	return cfg, md, jsonPath, nil
}

// selectNames returns the names of list ("all" for every one) in the order
// of known, or an error naming one that is unknown.
func selectNames(what, list string, known []string, variants ...string) ([]string, error) {
	if list == "all" {
		return known, nil
	}
	known = append(slices.Clone(known), variants...)
	want := strings.Split(list, ",")
	for _, n := range want {
		if !slices.Contains(known, strings.TrimSpace(n)) {
			return nil, errors.Newf("unknown %s %q (have %s)", what, n, strings.Join(known, ","))
		}
	}
	var out []string
	for _, n := range known {
		if slices.ContainsFunc(want, func(w string) bool { return strings.TrimSpace(w) == n }) {
			out = append(out, n)
		}
	}
	return out, nil
}

func writeJSON(path string, r *Report) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
