// Package driver runs the benchmark: every selected workload on every
// selected store, each in fresh worker processes and a fresh directory, and
// reports the median of each figure over the passes. Each pass runs every
// workload, and each workload every store in turn, so the stores alternate
// (A B C, A B C, ...) and the machine's drift hits them alike.
package driver

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/shale-db/shale/bench/internal/kv"
	"github.com/shale-db/shale/bench/internal/worker"
)

// Config says what to run.
type Config struct {
	N         int      // operations per workload (db_bench's num)
	Passes    int      // runs of each store and workload; the median is reported
	Workloads []string // names, in the order of worker.Workloads
	Stores    []string // names, in the order of kv.Names
	Seed      uint64
	// Dir holds the databases, one fresh directory per job, removed after.
	Dir string
	// Exe, WorkerArgs and Env start a worker: Exe WorkerArgs... worker
	// flags..., with environment Env (nil: this process's).
	Exe        string
	WorkerArgs []string
	Env        []string
	// CPUProfiles, if set, is a directory where each timed process writes
	// a CPU profile, named workload-store-pass.pprof.
	CPUProfiles string
	// Progress, if set, receives a line per timed process.
	Progress io.Writer
	// Cold runs the timed process of each read workload after dropping the
	// page cache, in a memory cgroup of MemLimit bytes (see cold.go).
	Cold     bool
	MemLimit int64
	// Reads, if positive, is how many lookups readrandom and seekrandom
	// make, over the key space of N.
	Reads int
	// CacheBytes, if positive, sizes every store's block cache (see
	// worker.Spec).
	CacheBytes int64
}

type driver struct{ cfg Config }

// Run runs the benchmark and returns its report. If a job fails, it stops
// there and returns the error with a report of the samples taken so far.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if cfg.N <= 0 || cfg.Passes <= 0 || len(cfg.Workloads) == 0 || len(cfg.Stores) == 0 {
		return nil, errors.New("driver: need positive N and Passes, a workload and a store")
	}
	d := &driver{cfg: cfg}
	r := newReport(cfg)
	total, done := 0, 0
	for _, wname := range cfg.Workloads {
		w, _ := worker.Lookup(wname)
		for _, store := range cfg.Stores {
			if w.Runs(store) {
				total += cfg.Passes
			}
		}
	}
	// Pass by pass, so that a disturbance lasting minutes lands in one pass
	// of each workload, which the median discards, rather than in every
	// pass of one workload.
	for pass := range cfg.Passes {
		for _, wname := range cfg.Workloads {
			w, ok := worker.Lookup(wname)
			if !ok {
				return nil, errors.Newf("driver: unknown workload %q", wname)
			}
			for _, store := range cfg.Stores {
				if !w.Runs(store) {
					continue
				}
				smp, err := d.job(ctx, w, store, pass)
				if err != nil {
					r.summarize()
					return r, err
				}
				r.add(w.Name, store, smp)
				done++
				d.progress(done, total, w, pass, store, smp)
			}
		}
	}
	r.summarize()
	return r, nil
}

// job runs one store on one workload in a fresh directory: the untimed
// phase if the workload has one, then the timed one.
func (d *driver) job(ctx context.Context, w worker.Workload, store string, pass int) (Sample, error) {
	if !kv.Known(store) {
		return Sample{}, errors.Newf("driver: unknown store %q", store)
	}
	dir, err := os.MkdirTemp(d.cfg.Dir, "shalebench-"+w.Name+"-"+store+"-")
	if err != nil {
		return Sample{}, err
	}
	defer os.RemoveAll(dir)
	spec := worker.Spec{Store: store, Workload: w.Name, Dir: dir, N: d.cfg.N, Seed: d.cfg.Seed, Reads: d.cfg.Reads, CacheBytes: d.cfg.CacheBytes}
	if d.cfg.CPUProfiles != "" {
		spec.CPUProfile = filepath.Join(d.cfg.CPUProfiles, fmt.Sprintf("%s-%s-%d.pprof", w.Name, store, pass+1))
	}
	switch w.Prepare {
	case worker.FillRandom, worker.FillLog:
		prep := spec
		prep.Phase, prep.CPUProfile = worker.PhasePrepare, ""
		_, _, _, err = d.runWorker(ctx, prep)
	case worker.Crash:
		err = d.crash(ctx, spec)
	}
	if err != nil {
		return Sample{}, err
	}
	// Write back what earlier processes left dirty, so that the kernel does
	// not do it during this one's timed span.
	syscall.Sync()
	if d.cfg.Cold && coldApplies(w) {
		undo, err := d.coldSpec(&spec, pass)
		if err != nil {
			return Sample{}, err
		}
		defer undo()
	}
	return d.measure(ctx, spec)
}

func (d *driver) progress(done, total int, w worker.Workload, pass int, store string, s Sample) {
	if d.cfg.Progress == nil {
		return
	}
	conflicts := ""
	if s.Conflicts > 0 {
		conflicts = fmt.Sprintf(" (%.2f%% refused for conflicts)", 100*ratio(s.Conflicts, s.Ops+s.Conflicts))
	}
	fmt.Fprintf(d.cfg.Progress, "[%d/%d] %s pass %d/%d %s: %s %s in %s%s\n", done, total, w.Name,
		pass+1, d.cfg.Passes, store, formatRate(s.throughput()), w.Unit,
		formatDuration(time.Duration(s.Seconds*float64(time.Second))), conflicts)
}
