// Package worker runs one phase of one workload on one store, in a process of
// its own, and prints what it measured as one line of JSON on stdout.
//
// The driver starts a worker by running its own executable with the
// arguments Args returns. Phases:
//   - prepare: the untimed fill a workload starts from (fillrandom), then
//     Close;
//   - crash: the recovery workload's fill; the worker then prints "ready"
//     and waits to be killed;
//   - run: the timed workload. The figures cover this process only: wchar
//     and write_bytes from /proc/self/io, taken before Open and after
//     Close, and the bytes of every file in the directory after Close.
//
// Nothing else may write to stdout in a worker.
package worker

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/shale-db/shale/bench/internal/gen"
	"github.com/shale-db/shale/bench/internal/hist"
	"github.com/shale-db/shale/bench/internal/kv"
)

// Phase names, as passed to -phase.
const (
	PhasePrepare = "prepare"
	PhaseCrash   = "crash"
	PhaseRun     = "run"
)

// Ready is the line a crash-phase worker prints when its puts have all
// returned.
const Ready = "ready"

// Result is what a run-phase worker measured.
type Result struct {
	Ops     int64   `json:"ops"`     // operations timed (entries, for readseq)
	Seconds float64 `json:"seconds"` // the timed span
	Writes  int64   `json:"writes"`  // puts made in this process
	// Found counts lookups that found their key (for recovery: 1 if the
	// last acknowledged put survived the kill).
	Found int64 `json:"found"`
	// For recovery: Acked is how many distinct keys the killed process's
	// acknowledged puts wrote, and Kept how many the store holds after the
	// timed Open (counted by a scan outside the timed span). A store that
	// buffers unsynced puts in its own memory loses some at the kill.
	Acked      int64         `json:"acked,omitempty"`
	Kept       int64         `json:"kept,omitempty"`
	WChar      int64         `json:"wchar"`       // bytes handed to write syscalls
	WriteBytes int64         `json:"write_bytes"` // bytes sent toward storage
	DiskBytes  int64         `json:"disk_bytes"`  // files in the directory after Close
	Latency    *hist.Summary `json:"latency,omitempty"`
	// StallSeconds is how long writes were delayed or held by the store's
	// flow control during the timed span, for stores that say (shale).
	StallSeconds float64 `json:"stall_seconds,omitempty"`
	// Stalls breaks StallSeconds down by kind.
	Stalls map[string]kv.Stall `json:"stalls,omitempty"`
	// Conflicts counts the transactions the store refused for a conflict
	// (the transaction workloads); Ops counts those committed.
	Conflicts int64 `json:"conflicts,omitempty"`
	// Cgroup is the memory cgroup the timed process ran in, as
	// /proc/self/cgroup names it, when it joined one (Spec.Cgroup).
	Cgroup string `json:"cgroup,omitempty"`
}

// Spec names one worker's job.
type Spec struct {
	Store, Workload string // names from kv.Names and Workloads
	Phase           string // PhasePrepare, PhaseCrash or PhaseRun
	Dir             string // the database directory
	N               int    // operations (db_bench's num)
	Seed            uint64 // of the random keys
	// CPUProfile, if set, is where a run-phase worker writes a CPU profile
	// of its timed process (Open to Close).
	CPUProfile string
	// Reads, if positive, is how many lookups readrandom and seekrandom
	// make (N otherwise), over the key space of N.
	Reads int
	// Cgroup, if set, is a cgroup directory the run-phase worker moves
	// itself into before it opens the store.
	Cgroup string
	// CacheBytes, if positive, sizes every store's block cache (bbolt has
	// none), except where the workload sets it (readrandom4x).
	CacheBytes int64
}

// Args returns the arguments that make Main run spec.
func Args(s Spec) []string {
	return []string{"-store", s.Store, "-workload", s.Workload, "-phase", s.Phase,
		"-dir", s.Dir, "-n", strconv.Itoa(s.N), "-seed", strconv.FormatUint(s.Seed, 10),
		"-cpuprofile", s.CPUProfile, "-reads", strconv.Itoa(s.Reads), "-cgroup", s.Cgroup,
		"-cache", strconv.FormatInt(s.CacheBytes, 10)}
}

// Main parses args (as Args makes them), runs the phase and writes its
// output to stdout. It returns the process's exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	s, err := parseSpec(args, stderr)
	if err != nil {
		return 2
	}
	if err := run(s, stdout); err != nil {
		fmt.Fprintf(stderr, "worker %s %s %s: %v\n", s.Phase, s.Workload, s.Store, err)
		return 1
	}
	return 0
}

// parseSpec is Args's inverse.
func parseSpec(args []string, stderr io.Writer) (Spec, error) {
	var s Spec
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&s.Store, "store", "", "store name")
	fs.StringVar(&s.Workload, "workload", "", "workload name")
	fs.StringVar(&s.Phase, "phase", PhaseRun, "prepare, crash or run")
	fs.StringVar(&s.Dir, "dir", "", "database directory")
	fs.IntVar(&s.N, "n", 0, "operations")
	fs.Uint64Var(&s.Seed, "seed", 1, "random seed")
	fs.StringVar(&s.CPUProfile, "cpuprofile", "", "write a CPU profile of the run phase to this file")
	fs.IntVar(&s.Reads, "reads", 0, "lookups of readrandom and seekrandom (0: n)")
	fs.StringVar(&s.Cgroup, "cgroup", "", "cgroup directory to join before the timed phase")
	fs.Int64Var(&s.CacheBytes, "cache", 0, "block cache bytes of every store (0: each store's default)")
	return s, fs.Parse(args)
}

// newEnv is the environment of s's workload w.
func newEnv(s Spec, w Workload) *env {
	e := &env{dir: s.Dir, store: s.Store, n: s.N, seed: s.Seed, reads: s.Reads, cfg: kv.Config{Sync: w.Sync, CacheBytes: s.CacheBytes}}
	if w.CacheQuarter {
		e.cfg.CacheBytes = max(int64(s.N)*gen.UserBytes/4, 1)
	}
	return e
}

func run(s Spec, stdout io.Writer) error {
	w, ok := Lookup(s.Workload)
	if !ok {
		return errorf("unknown workload %q", s.Workload)
	}
	if !kv.Known(s.Store) || s.Dir == "" || s.N <= 0 {
		return errorf("need a known -store, a -dir and a positive -n")
	}
	e := newEnv(s, w)
	switch s.Phase {
	case PhasePrepare:
		return prepare(e, w)
	case PhaseCrash:
		return crash(e, stdout)
	case PhaseRun:
		if s.Cgroup != "" {
			// Before anything of the store is allocated or read: the
			// cgroup charges what this process uses from here on.
			pid := []byte(strconv.Itoa(os.Getpid()))
			if err := os.WriteFile(filepath.Join(s.Cgroup, "cgroup.procs"), pid, 0o644); err != nil {
				return errorf("join cgroup %s: %v", s.Cgroup, err)
			}
			e.res.Cgroup = memoryCgroup()
		}
		if s.CPUProfile != "" {
			stop, err := startCPUProfile(s.CPUProfile)
			if err != nil {
				return err
			}
			defer stop()
		}
		return timed(e, w, stdout)
	}
	return errorf("unknown phase %q", s.Phase)
}

func prepare(e *env, w Workload) error {
	if w.Prepare != FillRandom && w.Prepare != FillLog {
		return errorf("%s has no prepare phase", w.Name)
	}
	db, err := kv.Open(e.store, e.dir, kv.Config{})
	if err != nil {
		return err
	}
	e.db = db
	fill := func() error { return e.fill(e.n, e.keys(streamFill), false, false) }
	if w.Prepare == FillLog {
		// n entries of a log, then a tail of n/10 that stays.
		fill = func() error { return e.fill(e.n+e.n/10, func(i int) uint64 { return uint64(i) }, false, false) }
	}
	if err := fill(); err != nil {
		db.Close()
		return err
	}
	return db.Close()
}

// crash makes the recovery workload's puts, says so, and waits to be killed.
func crash(e *env, stdout io.Writer) error {
	db, err := kv.Open(e.store, e.dir, kv.Config{})
	if err != nil {
		return err
	}
	e.db = db
	if err := e.fill(crashPuts(e.n), e.keys(streamFill), false, false); err != nil {
		return err
	}
	if _, err := fmt.Fprintln(stdout, Ready); err != nil {
		return err
	}
	if f, ok := stdout.(interface{ Sync() error }); ok {
		_ = f.Sync()
	}
	for {
		// Sleeping, not blocking on a channel: the runtime must not take
		// the stillness for a deadlock and exit before the kill.
		time.Sleep(time.Hour)
	}
}

func timed(e *env, w Workload, stdout io.Writer) error {
	before, err := readIOCounters()
	if err != nil {
		return err
	}
	if !w.TimesOpen {
		if e.db, err = kv.Open(e.store, e.dir, e.cfg); err != nil {
			return err
		}
	}
	err = w.run(e)
	if s, ok := e.db.(kv.Staller); ok && err == nil {
		e.res.StallSeconds, e.res.Stalls = s.StallSeconds(), s.Stalls()
	}
	if e.db != nil {
		if cerr := e.db.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return err
	}
	after, err := readIOCounters()
	if err != nil {
		return err
	}
	e.res.WChar = after.wchar - before.wchar
	e.res.WriteBytes = after.writeBytes - before.writeBytes
	if e.res.DiskBytes, err = dirBytes(e.dir); err != nil {
		return err
	}
	if w.Latency {
		s := e.lat.Summary()
		e.res.Latency = &s
	}
	bw := bufio.NewWriter(stdout)
	if err := json.NewEncoder(bw).Encode(e.res); err != nil {
		return err
	}
	return bw.Flush()
}

// startCPUProfile starts profiling into path; stop ends it and closes the
// file.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

func errorf(format string, args ...any) error { return errors.Newf(format, args...) }

// memoryCgroup returns this process's memory cgroup from /proc/self/cgroup:
// cgroup v1's memory line, or v2's single one; "" if there is neither.
func memoryCgroup() string {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return ""
	}
	var v2 string
	for _, line := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if slices.Contains(strings.Split(parts[1], ","), "memory") {
			return parts[2]
		}
		if parts[0] == "0" && parts[1] == "" {
			v2 = parts[2]
		}
	}
	return v2
}
