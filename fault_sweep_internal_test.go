package shale

// The error sweep: every file-system call of the workload (fault_workload_
// internal_test.go) fails in turn, one per run, and disk full: every write
// and sync fails with ENOSPC from some point on.

import (
	stderrors "errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shale-db/shale/internal/filename"
	"github.com/shale-db/shale/internal/manifest"
	"github.com/shale-db/shale/internal/vfs"
)

// sweepFull runs every case of the sweeps instead of a sample of them.
var sweepFull = os.Getenv("SHALE_FAULT_SWEEP") == "full"

// faultCase is one run of the workload under faults.
type faultCase struct {
	name string
	// injector returns the Injector for the run, given the counts of the
	// calls Open made (faults start after Open: TestOpenUnderFaults
	// covers Open itself).
	injector func(open *vfs.FaultFS) vfs.Injector
	// target is matched by every error the injector returns.
	target error
	// left, if set, checks the files as the run left them, before the
	// reopens, and returns what is wrong.
	left func(fsys vfs.FS, r *faultResult) []string
}

// faultResult is what one case saw.
type faultResult struct {
	injected int  // faults the injector returned
	surfaced bool // one reached an API call, Close or the log
	checked  int  // keys checked after the reopens
	failed   []vfs.Call
}

// mustSurface reports whether the faults of r must reach the caller: all
// but the failed close of a file opened for reading, which loses nothing
// (the table cache closes tables it evicts and has no one to tell).
func (r *faultResult) mustSurface() bool {
	for _, c := range r.failed {
		if c.Op != vfs.OpClose || c.Handle != vfs.OpOpen {
			return true
		}
	}
	return false
}

// sweepStats adds up a sweep.
type sweepStats struct {
	cases, injected, waived, checked int
}

// add counts r, and fails t if its faults should have surfaced and did not.
func (s *sweepStats) add(t *testing.T, name string, r faultResult) {
	t.Helper()
	s.cases++
	s.injected += r.injected
	s.checked += r.checked
	switch {
	case r.injected == 0 || r.surfaced:
	case r.mustSurface():
		t.Errorf("%s: the fault (%v) reached no API call, Close or log", name, r.failed)
	default:
		s.waived++
	}
}

// runFaultCase runs the workload on a fresh MemFS with fc's faults, then
// checks what this process saw and what a reopen finds, both of the files
// as the process left them and after a power loss, without faults.
func runFaultCase(t *testing.T, fc faultCase) faultResult {
	t.Helper()
	mem := vfs.NewMem()
	ffs := vfs.NewFault(mem, nil)
	logs := &errLog{}
	db, err := reviewOpen(t, ffs, sweepOptions(slog.New(logs)))
	if err != nil {
		t.Fatalf("%s: open: %v", fc.name, err)
	}
	var res faultResult
	var mu sync.Mutex
	inject := fc.injector(ffs)
	ffs.SetInjector(func(c vfs.Call) error {
		err := inject(c)
		if err != nil {
			mu.Lock()
			res.injected++
			res.failed = append(res.failed, c)
			mu.Unlock()
		}
		return err
	})
	w := newSweepRun(db)
	w.run()
	ffs.SetInjector(nil)
	mu.Lock()
	defer mu.Unlock()
	for _, err := range w.errs {
		res.surfaced = res.surfaced || stderrors.Is(err, fc.target)
	}
	res.surfaced = res.surfaced || logs.logged(fc.target)
	where := fmt.Sprintf("%s (failed %v)", fc.name, res.failed)
	for _, p := range w.problems {
		t.Errorf("%s: in this process: %s", where, p)
	}
	if w.ackedAfter > 0 {
		t.Errorf("%s: %d writes, flushes or compactions succeeded after one failed (call %d); errors %v",
			where, w.ackedAfter, w.failedAt, w.errs)
	}
	if w.failedAt >= 0 && w.closeErr == nil {
		t.Errorf("%s: a write failed (call %d), yet Close returned nil", where, w.failedAt)
	}
	if fc.left != nil {
		for _, p := range fc.left(mem, &res) {
			t.Errorf("%s: as left: %s", where, p)
		}
	}
	n := len(w.writes)
	res.checked += reopenCheck(t, mem, valueCheck{writes: w.writes, acked: n, started: n, required: n}, where+", reopened as left")
	res.checked += reopenCheck(t, mem.CrashClone(), valueCheck{writes: w.writes, acked: n, started: n,
		required: int(w.durable.Load())}, where+", reopened after a power loss")
	return res
}

// reopenCheck opens the database on fsys without faults and checks it
// against the model; it returns the number of keys checked.
func reopenCheck(t *testing.T, fsys vfs.FS, c valueCheck, where string) int {
	t.Helper()
	db, err := reviewOpen(t, fsys, nil)
	if err != nil {
		t.Errorf("%s: open: %v", where, err)
		return 0
	}
	defer db.Close()
	for _, p := range c.check(db) {
		t.Errorf("%s: %s", where, p)
	}
	return c.checked
}

// sweepCounts runs the workload without faults, checks it, and returns how
// many calls of each kind it made after Open.
func sweepCounts(t *testing.T) [vfs.NumOps]int {
	var counts [vfs.NumOps]int
	var base *vfs.FaultFS
	var open [vfs.NumOps]int
	runFaultCase(t, faultCase{
		name: "no fault",
		injector: func(ffs *vfs.FaultFS) vfs.Injector {
			base = ffs
			for op := range vfs.NumOps {
				open[op] = ffs.Count(op)
			}
			return func(vfs.Call) error { return nil }
		},
		target: vfs.ErrInjected,
	})
	for op := range vfs.NumOps {
		counts[op] = base.Count(op) - open[op]
	}
	return counts
}

// sweepPoints returns the call numbers to fail among n: all of them in a
// full sweep or when there are at most limit, else limit of them spread
// evenly, the first and the last included.
func sweepPoints(n, limit int) []int {
	var pts []int
	if sweepFull || n <= limit {
		for i := 1; i <= n; i++ {
			pts = append(pts, i)
		}
		return pts
	}
	for i := range limit {
		pts = append(pts, 1+i*(n-1)/(limit-1))
	}
	return pts
}

// failAfterOpen fails the nth call of kind op after Open with err.
func failAfterOpen(op vfs.Op, n int, err error) func(*vfs.FaultFS) vfs.Injector {
	return func(ffs *vfs.FaultFS) vfs.Injector {
		return vfs.FailNth(op, ffs.Count(op)+n, err)
	}
}

// sweepLimit is how many calls of each kind the CI sweep fails; a full
// sweep (SHALE_FAULT_SWEEP=full) fails every one.
const sweepLimit = 20

// TestFaultSweep fails each kind of call at each of its calls in the
// workload (a sample of them unless SHALE_FAULT_SWEEP=full), one fault per
// run. Every run must: show no wrong answer in the process; surface the
// error (through an API call, Close, or the log for the cleanup that only
// logs); acknowledge no write after a failed one; and reopen, as the
// process left the files and after a power loss, holding every
// acknowledged (resp. durable) write, every batch whole or absent.
func TestFaultSweep(t *testing.T) {
	start := time.Now()
	counts := sweepCounts(t)
	var stats sweepStats
	for op := range vfs.NumOps {
		for _, n := range sweepPoints(counts[op], sweepLimit) {
			target := fmt.Errorf("injected: %s call %d", op, n)
			fc := faultCase{name: fmt.Sprintf("%s call %d of %d", op, n, counts[op]),
				injector: failAfterOpen(op, n, target), target: target}
			stats.add(t, fc.name, runFaultCase(t, fc))
		}
		if t.Failed() {
			break
		}
	}
	t.Logf("calls per kind after Open: %v", countsString(counts))
	t.Logf("%d runs, %d faults injected (%d unreported closes of files read), %d keys checked after reopens, %v (full sweep: %v)",
		stats.cases, stats.injected, stats.waived, stats.checked, time.Since(start).Round(time.Millisecond), sweepFull)
}

func countsString(counts [vfs.NumOps]int) string {
	s := ""
	for op, n := range counts {
		if n > 0 {
			s += fmt.Sprintf("%s=%d ", vfs.Op(op), n)
		}
	}
	return s
}

// TestFaultSweepDiskFull fills the disk at each write (a sample unless
// SHALE_FAULT_SWEEP=full): from there on every write fails with ENOSPC
// (half of them after writing half their bytes) and so does every sync.
// The error must reach the caller and stop writes; once space is freed,
// a reopen holds every acknowledged write; no table the MANIFEST does not
// name is left behind unless a MANIFEST write failed (then its fate is
// unknown and the table must stay); and the database does not retry
// writes in a loop.
func TestFaultSweepDiskFull(t *testing.T) {
	counts := sweepCounts(t)
	var stats sweepStats
	for _, n := range sweepPoints(counts[vfs.OpWrite], 2*sweepLimit) {
		fc := faultCase{
			name:     fmt.Sprintf("disk full from write %d of %d", n, counts[vfs.OpWrite]),
			injector: diskFullAfter(n),
			target:   syscall.ENOSPC,
			left:     checkNoOrphanTables,
		}
		r := runFaultCase(t, fc)
		stats.add(t, fc.name, r)
		if r.injected > 40 {
			t.Errorf("%s: %d calls failed with ENOSPC: the database retries a full disk", fc.name, r.injected)
		}
	}
	t.Logf("%d runs, %d calls failed with ENOSPC, %d keys checked after reopens", stats.cases, stats.injected, stats.checked)
}

// diskFullAfter fails, from the nth write after Open on, every write with
// ENOSPC (every other one a short write) and every sync.
func diskFullAfter(n int) func(*vfs.FaultFS) vfs.Injector {
	return func(ffs *vfs.FaultFS) vfs.Injector {
		first := ffs.Count(vfs.OpWrite) + n
		full := false
		return func(c vfs.Call) error {
			full = full || (c.Op == vfs.OpWrite && c.N >= first)
			switch {
			case !full:
				return nil
			case c.Op == vfs.OpWrite && c.N%2 == 0:
				return &vfs.ShortWriteError{Err: syscall.ENOSPC}
			case c.Op == vfs.OpWrite, c.Op == vfs.OpSync, c.Op == vfs.OpSyncDir:
				return syscall.ENOSPC
			}
			return nil
		}
	}
}

// checkNoOrphanTables reports the tables in the directory that the
// MANIFEST does not name, unless a MANIFEST write failed: then whether the
// edit naming a table reached the disk is unknown, and it must stay.
func checkNoOrphanTables(fsys vfs.FS, r *faultResult) []string {
	for _, c := range r.failed {
		if typ, _, ok := filename.Parse(filepath.Base(c.Path)); ok && typ == filename.Manifest {
			return nil
		}
	}
	vs, err := manifest.Load(fsys, reviewDir, true)
	if err != nil {
		return []string{fmt.Sprintf("load the MANIFEST: %v", err)}
	}
	defer vs.Close()
	live := vs.LiveFiles()
	names, err := fsys.List(reviewDir)
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	for _, name := range names {
		typ, num, ok := filename.Parse(name)
		if _, isLive := live[num]; ok && typ == filename.Table && !isLive {
			out = append(out, fmt.Sprintf("table %s left behind, which no version names", name))
		}
	}
	return out
}

// TestSweepChecksCatchLoss: the sweeps' checks fail when something is
// lost: the writes of a removed WAL, half a batch, a stray table.
func TestSweepChecksCatchLoss(t *testing.T) {
	mem := vfs.NewMem()
	db, err := reviewOpen(t, mem, sweepOptions(nil))
	if err != nil {
		t.Fatal(err)
	}
	w := newSweepRun(db)
	w.run()
	if len(w.problems) > 0 || w.closeErr != nil {
		t.Fatalf("the workload without faults: %v, Close: %v", w.problems, w.closeErr)
	}
	n := len(w.writes)
	all := valueCheck{writes: w.writes, acked: n, started: n, required: n}
	noLogs, halfBatch := mem.CrashClone(), mem.CrashClone() // before a reopen replays the WALs
	if c := all; reopenProblems(t, mem, &c) != 0 {
		t.Fatal("the workload without faults fails its own check")
	}
	if p := checkNoOrphanTables(mem, &faultResult{}); len(p) > 0 {
		t.Fatalf("the workload without faults leaves orphans: %v", p)
	}
	for _, name := range must1(noLogs.List(reviewDir)) {
		if typ, _, _ := filename.Parse(name); typ == filename.Log {
			noLogs.Remove(filepath.Join(reviewDir, name))
		}
	}
	if c := all; reopenProblems(t, noLogs, &c) == 0 {
		t.Error("the writes of removed WALs went unnoticed")
	}
	db2 := reviewMustOpen(t, halfBatch, nil)
	if err := db2.Delete([]byte(fmt.Sprintf("b%04d-%d", 9, 2)), Sync); err != nil {
		t.Fatal(err)
	}
	db2.Close()
	if c := all; reopenProblems(t, halfBatch, &c) == 0 {
		t.Error("half a batch went unnoticed")
	}
	memRewrite(t, mem, filepath.Join(reviewDir, "000999.ldb"), []byte("stray"))
	if p := checkNoOrphanTables(mem, &faultResult{}); len(p) != 1 {
		t.Errorf("a stray table: %v", p)
	}
}

// reopenProblems opens fsys and returns how many problems c finds.
func reopenProblems(t *testing.T, fsys vfs.FS, c *valueCheck) int {
	t.Helper()
	db, err := reviewOpen(t, fsys, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	return len(c.check(db))
}

func must1[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
