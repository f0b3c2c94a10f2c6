package fusetest_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/shale-db/shale"
	"github.com/shale-db/shale/fusetest"
)

// A fault scenario: a child process writes to shale on the FUSE mount;
// after some writes the parent arms a fault; the child keeps writing
// until its writes are refused (or a bound), reads back what was
// acknowledged, and closes. The parent then disarms the fault and a
// second child reopens the database on the same mount and checks that
// every acknowledged write is there. What shale promises (DESIGN.md,
// Guarantees): whatever a call shale makes returns (EIO, ENOSPC, a short
// count), the write in flight is refused and nothing after it is
// acknowledged until a reopen; every write acknowledged before it
// survives.

type scenario struct {
	name  string
	fault fusetest.Fault
	// foreground is set when the write path itself meets the fault
	// (a WAL write, or every write on a full disk): then no write that
	// starts after the fault fired may be acknowledged, and the write
	// in flight when it fired is refused. Faults in background work
	// (flushes, the MANIFEST) need only stop the writes from the first
	// refused one on. syncOnly restricts that to Sync writers.
	foreground, syncOnly bool
}

var scenarios = []scenario{
	{name: "wal-write-eio", fault: fusetest.Fault{Op: fusetest.OpWrite, Pattern: "*.log", Err: syscall.EIO}, foreground: true},
	// A transient fault: the next two WAL writes fail, then writes work
	// again. Two, because the kernel turns an error on a later chunk of
	// a write(2) (the fault armed while the chunk before it was served)
	// into a short count, which the writer rightly retries: a single
	// failure would then not reach it.
	{name: "wal-write-eio-transient", fault: fusetest.Fault{Op: fusetest.OpWrite, Pattern: "*.log", Err: syscall.EIO, Times: 2}, foreground: true},
	{name: "wal-write-short", fault: fusetest.Fault{Op: fusetest.OpWrite, Pattern: "*.log", Err: syscall.EIO, Short: true, Times: 1}, foreground: true},
	{name: "wal-enospc-at-offset", fault: fusetest.Fault{Op: fusetest.OpWrite, Pattern: "*.log", Err: syscall.ENOSPC, FromOffset: 40 << 10}, foreground: true},
	{name: "disk-full-enospc", fault: fusetest.Fault{Full: true, Err: syscall.ENOSPC}, foreground: true},
	{name: "quota-edquot", fault: fusetest.Fault{Full: true, Err: syscall.EDQUOT}, foreground: true},
	{name: "wal-fsync-eio-once", fault: fusetest.Fault{Op: fusetest.OpFsync, Pattern: "*.log", Err: syscall.EIO, Times: 1}, foreground: true, syncOnly: true},
	{name: "wal-create-eio", fault: fusetest.Fault{Op: fusetest.OpCreate, Pattern: "*.log", Err: syscall.EIO}},
	{name: "dir-fsync-eio", fault: fusetest.Fault{Op: fusetest.OpFsyncDir, Pattern: ".", Err: syscall.EIO}},
	{name: "manifest-write-eio", fault: fusetest.Fault{Op: fusetest.OpWrite, Pattern: "MANIFEST-*", Err: syscall.EIO}},
	{name: "manifest-fsync-eio", fault: fusetest.Fault{Op: fusetest.OpFsync, Pattern: "MANIFEST-*", Err: syscall.EIO}},
	{name: "current-rename-eio", fault: fusetest.Fault{Op: fusetest.OpRename, Pattern: "CURRENT", Err: syscall.EIO}},
	{name: "table-write-eio", fault: fusetest.Fault{Op: fusetest.OpWrite, Pattern: "*.ldb", Err: syscall.EIO}},
	{name: "table-fsync-eio", fault: fusetest.Fault{Op: fusetest.OpFsync, Pattern: "*.ldb", Err: syscall.EIO}},
}

// dbOptions are the Options the children open shale with: small, so
// that WAL switches, flushes, compactions and new MANIFESTs happen within
// a few hundred writes.
type dbOptions struct {
	WriteBufferSize, TargetFileSize, MaxManifestFileSize int64
	Recovery                                             shale.RecoveryMode
}

func (o dbOptions) options() *shale.Options {
	return &shale.Options{
		WriteBufferSize:     o.WriteBufferSize,
		TargetFileSize:      o.TargetFileSize,
		MaxManifestFileSize: o.MaxManifestFileSize,
		Recovery:            o.Recovery,
	}
}

var smallDB = dbOptions{WriteBufferSize: 64 << 10, TargetFileSize: 32 << 10, MaxManifestFileSize: 4 << 10}

type faultWriterSpec struct {
	Dir        string
	Work       workload
	Opts       dbOptions
	Goroutines int
	// ArmAfter is how many writes goroutine 0 makes before it asks for
	// the fault and waits until it is armed.
	ArmAfter int
	// After the fault is armed, a goroutine stops at its first refused
	// write plus AfterRefusal more, or after MaxAfterArm writes, or
	// after TimeAfterArm.
	AfterRefusal, MaxAfterArm int
	TimeAfterArm              time.Duration
}

// faultRun is what one run of a scenario saw.
type faultRun struct {
	acked, refused, lost int
	fired                bool
	problems             []string
}

func (r *faultRun) problem(format string, args ...any) {
	r.problems = append(r.problems, fmt.Sprintf(format, args...))
}

// TestFaults runs every scenario with Sync and NoSync writers, from one
// goroutine and from four (under the race detector, four only), and fails
// if any acknowledged write is lost or a promise above is broken.
// SHALE_FAULT_SCENARIOS=a,b runs only the named scenarios.
func TestFaults(t *testing.T) {
	requireFUSE(t)
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("SHALE_FAULT_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (SHALE_FAULT_SEED)", seed)
	only := map[string]bool{}
	for _, s := range strings.Split(os.Getenv("SHALE_FAULT_SCENARIOS"), ",") {
		if s != "" {
			only[s] = true
		}
	}
	type total struct {
		runs, fired, acked, refused, lost, failed int
	}
	var mu sync.Mutex
	totals := map[string]*total{}
	var names []string
	deadline, notRun := time.Now().Add(faultsBudget), 0
	for _, sc := range scenarios {
		if len(only) > 0 && !only[sc.name] {
			continue
		}
		names = append(names, sc.name)
		totals[sc.name] = &total{}
		for _, syncWrites := range []bool{true, false} {
			for _, goroutines := range []int{1, 4} {
				if raceEnabled && goroutines == 1 {
					continue
				}
				mode := "nosync"
				if syncWrites {
					mode = "sync"
				}
				name := fmt.Sprintf("%s/%s/g%d", sc.name, mode, goroutines)
				if time.Now().After(deadline) {
					notRun++
					continue
				}
				t.Run(name, func(t *testing.T) {
					r := runScenario(t, sc, syncWrites, goroutines, seed)
					mu.Lock()
					tt := totals[sc.name]
					tt.runs++
					tt.acked += r.acked
					tt.refused += r.refused
					tt.lost += r.lost
					if r.fired {
						tt.fired++
					}
					if len(r.problems) > 0 {
						tt.failed++
					}
					mu.Unlock()
					for i, p := range r.problems {
						if i == 12 {
							t.Errorf("... and %d more", len(r.problems)-i)
							break
						}
						t.Error(p)
					}
				})
				seed++
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-22s %5s %6s %9s %8s %5s %7s\n", "scenario", "runs", "fired", "acked", "refused", "lost", "failed")
	for _, n := range names {
		tt := totals[n]
		fmt.Fprintf(&b, "%-22s %5d %6d %9d %8d %5d %7d\n", n, tt.runs, tt.fired, tt.acked, tt.refused, tt.lost, tt.failed)
	}
	t.Log(b.String())
	if notRun > 0 {
		t.Errorf("the time budget of %v ran out with %d runs not made", faultsBudget, notRun)
	}
}

// faultsBudget bounds TestFaults: a run takes well under a second when
// the writes are refused at once, up to TimeAfterArm plus two process
// starts when they are not.
const faultsBudget = 2 * time.Minute

// runScenario runs one scenario once.
func runScenario(t *testing.T, sc scenario, syncWrites bool, goroutines int, seed uint64) faultRun {
	fsys := mount(t, nil)
	ctl := fsys.Controller()
	w := workload{Seed: seed}
	armAfter := 150
	if syncWrites {
		w.SyncEvery = 1
		armAfter = 40
	}
	spec := faultWriterSpec{
		Dir: fsys.Mountpoint(), Work: w, Opts: smallDB, Goroutines: goroutines,
		ArmAfter: armAfter, AfterRefusal: 5, MaxAfterArm: 3000, TimeAfterArm: 1500 * time.Millisecond,
	}
	c := startChild(t, "faultwriter", spec, time.Minute)
	var run faultRun
	writes := map[[2]int]writeRecord{}
	closeErr, closed := "", false
	for c.lines.Scan() {
		line := c.lines.Text()
		switch f := strings.Fields(line); {
		case line == "arm":
			ctl.Arm(sc.fault)
			fmt.Fprintln(c.stdin, "armed")
		case len(f) >= 6 && f[0] == "w":
			r := parseWriteRecord(f)
			writes[[2]int{r.g, r.i}] = r
		case len(f) >= 3 && f[0] == "getfail":
			run.problem("before Close, Get of acknowledged write %s/%s: %s", f[1], f[2], strings.Join(f[3:], " "))
		case len(f) >= 2 && f[0] == "close":
			closed = true
			closeErr = strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(line, "close"), " ok"))
		default:
			run.problem("writer said %q", line)
		}
	}
	if _, err := c.wait(); err != nil {
		t.Fatalf("writer: %v", err)
	}
	ctl.Disarm()
	if !closed {
		t.Fatalf("writer did not reach Close")
	}
	fired, firedOK := ctl.FirstFired()
	run.fired = firedOK
	checkRefusals(&run, sc, syncWrites, goroutines, writes, fired, firedOK, closeErr)

	// Reopen, disarmed, on the same mount.
	var vs faultVerifySpec
	vs.Dir, vs.Work, vs.Opts = fsys.Mountpoint(), w, smallDB
	for k, r := range writes {
		if r.ok {
			vs.Acked = append(vs.Acked, k)
		} else {
			vs.Refused = append(vs.Refused, k)
		}
	}
	vc := startChild(t, "faultverify", vs, time.Minute)
	var res faultVerifyResult
	gotResult := false
	for vc.lines.Scan() {
		if js, ok := strings.CutPrefix(vc.lines.Text(), "result "); ok {
			if err := json.Unmarshal([]byte(js), &res); err != nil {
				t.Fatalf("verifier: %v", err)
			}
			gotResult = true
		}
	}
	if _, err := vc.wait(); err != nil || !gotResult {
		t.Fatalf("verifier: %v (result: %v)", err, gotResult)
	}
	run.lost = len(res.Lost)
	if res.OpenErr != "" {
		run.problem("reopen after the fault failed: %s", res.OpenErr)
		run.lost = run.acked // none could be checked
	}
	for _, l := range res.Lost {
		run.problem("LOST: acknowledged write %s", l)
	}
	for _, l := range res.Torn {
		run.problem("refused batch %s is in the database in part", l)
	}
	if res.NewWriteErr != "" {
		run.problem("after reopening, a new write failed: %s", res.NewWriteErr)
	}
	if res.CloseErr != "" {
		run.problem("after reopening, Close failed: %s", res.CloseErr)
	}
	if len(run.problems) > 0 {
		t.Logf("fault fired: %v; calls: %s; close: %q; damage found at reopen: %v; first calls failed:\n%s",
			firedOK, callCounts(ctl), closeErr, res.Damage, strings.Join(ctl.FiredCalls(), "\n"))
	}
	return run
}

func callCounts(ctl *fusetest.Controller) string {
	var parts []string
	for op := fusetest.OpWrite; op <= fusetest.OpTruncate; op++ {
		parts = append(parts, fmt.Sprintf("%s=%d", op, ctl.Calls(op)))
	}
	return strings.Join(parts, " ")
}

// writeRecord is one write the writer made: when (CLOCK_MONOTONIC) and
// whether it was acknowledged.
type writeRecord struct {
	g, i       int
	start, end int64
	ok         bool
	err        string
}

func parseWriteRecord(f []string) writeRecord {
	var r writeRecord
	r.g, _ = strconv.Atoi(f[1])
	r.i, _ = strconv.Atoi(f[2])
	r.start, _ = strconv.ParseInt(f[3], 10, 64)
	r.end, _ = strconv.ParseInt(f[4], 10, 64)
	r.ok = f[5] == "ok"
	if !r.ok {
		r.err = strings.Join(f[6:], " ")
	}
	return r
}

// checkRefusals checks the writer's record against the promises: no
// write acknowledged after the first refused one (nor, for a foreground
// fault, after the fault fired), the write in flight when the fault
// fired refused, the fault not swallowed, and Close's error.
func checkRefusals(run *faultRun, sc scenario, syncWrites bool, goroutines int, writes map[[2]int]writeRecord, fired int64, firedOK bool, closeErr string) {
	var first *writeRecord
	for _, r := range writes {
		if r.ok {
			run.acked++
			continue
		}
		run.refused++
		if first == nil || r.end < first.end {
			first = &r
		}
	}
	if !firedOK {
		run.problem("the fault never fired: the workload did not reach it")
		return
	}
	fg := sc.foreground && (syncWrites || !sc.syncOnly)
	var inFlight, inFlightRefused int
	for _, r := range writes {
		if first != nil && r.ok && r.start > first.end {
			run.problem("write %d/%d acknowledged after write %d/%d was refused (%s)", r.g, r.i, first.g, first.i, first.err)
		}
		if !fg {
			continue
		}
		if r.ok && r.start > fired {
			run.problem("write %d/%d acknowledged, started %v after the fault fired", r.g, r.i, time.Duration(r.start-fired))
		}
		if r.start <= fired && fired <= r.end {
			inFlight++
			if !r.ok {
				inFlightRefused++
			}
		}
	}
	// On a full disk the first call to fail may be a background one (a
	// table, the LOG) while the writes in flight are past their WAL
	// writes, rightly acknowledged; a fault on WAL calls alone fails the
	// commit leader's call, refusing its whole group.
	if fg && !sc.fault.Full && inFlight > 0 && inFlightRefused == 0 {
		run.problem("none of the %d writes in flight when the fault fired was refused", inFlight)
	}
	if run.refused == 0 && closeErr == "" {
		run.problem("the fault fired, yet no write was refused and Close returned nil: the error was swallowed")
	}
	if run.refused > 0 && closeErr == "" {
		run.problem("writes were refused (%s), yet Close returned nil", first.err)
	}
}

// faultWriter is the child that writes until refused: see
// faultWriterSpec. It prints "arm" and waits for "armed", then
// "w G I START END ok|err MSG" after each write, "getfail G I MSG" for an
// acknowledged write that Get does not return whole, and "close ok" or
// "close err MSG".
func faultWriter(js string) error {
	var s faultWriterSpec
	if err := json.Unmarshal([]byte(js), &s); err != nil {
		return err
	}
	db, err := shale.Open(s.Dir, s.Opts.options())
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	out := &lineWriter{}
	stdin := bufio.NewReader(os.Stdin)
	var armedAt atomic.Int64
	var stop atomic.Bool
	var mu sync.Mutex
	var acked []write
	var wg sync.WaitGroup
	for g := range s.Goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if g == 0 {
				defer stop.Store(true)
			}
			refusedAt, sinceArm := -1, 0
			for i := 0; i < 1_000_000; i++ {
				if g == 0 && i == s.ArmAfter {
					out.println("arm")
					if line, err := stdin.ReadString('\n'); err != nil || line != "armed\n" {
						out.println("no armed reply: %q %v", line, err)
						return
					}
					armedAt.Store(fusetest.Now())
				}
				wr := s.Work.write(g, i)
				start := fusetest.Now()
				err := wr.apply(db)
				end := fusetest.Now()
				if err != nil {
					out.println("w %d %d %d %d err %s", g, i, start, end, oneLine(err))
					if refusedAt < 0 {
						refusedAt = i
					}
				} else {
					out.println("w %d %d %d %d ok", g, i, start, end)
					mu.Lock()
					acked = append(acked, wr)
					mu.Unlock()
				}
				if refusedAt >= 0 && i-refusedAt >= s.AfterRefusal {
					return
				}
				if at := armedAt.Load(); at != 0 {
					sinceArm++
					if sinceArm > s.MaxAfterArm || time.Duration(fusetest.Now()-at) > s.TimeAfterArm {
						return
					}
				} else if stop.Load() {
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, wr := range acked {
		if p, err := wr.presenceIn(db); err != nil || p != whole {
			out.println("getfail %d %d %v %v", wr.g, wr.i, p, err)
		}
	}
	if err := db.Close(); err != nil {
		out.println("close err %s", oneLine(err))
	} else {
		out.println("close ok")
	}
	return nil
}

func oneLine(err error) string {
	s := strings.ReplaceAll(err.Error(), "\n", " ")
	if s == "" || s == "ok" {
		s = "(" + s + ")"
	}
	return s
}

type faultVerifySpec struct {
	Dir            string
	Work           workload
	Opts           dbOptions
	Acked, Refused [][2]int
}

type faultVerifyResult struct {
	OpenErr string
	// Lost lists the acknowledged writes not there whole; Torn the
	// refused batches there in part.
	Lost, Torn []string
	// Damage lists what the reopen's recovery reported as damaged.
	Damage                []string
	NewWriteErr, CloseErr string
}

// faultVerify is the child that reopens the database and checks the
// writes; it prints "result JSON" (faultVerifyResult).
func faultVerify(js string) error {
	var s faultVerifySpec
	if err := json.Unmarshal([]byte(js), &s); err != nil {
		return err
	}
	var res faultVerifyResult
	defer func() {
		b, _ := json.Marshal(res)
		fmt.Printf("result %s\n", b)
	}()
	db, err := shale.Open(s.Dir, s.Opts.options())
	if err != nil {
		res.OpenErr = oneLine(err)
		return nil
	}
	for _, lr := range db.Recovery().Logs {
		if lr.Damaged() {
			res.Damage = append(res.Damage, fmt.Sprintf("%+v", lr))
		}
	}
	for _, k := range s.Acked {
		wr := s.Work.write(k[0], k[1])
		if p, err := wr.presenceIn(db); err != nil || p != whole {
			res.Lost = append(res.Lost, fmt.Sprintf("%d/%d (%d keys, sync %v): %v %v", k[0], k[1], len(wr.keys), wr.sync, p, err))
		}
	}
	for _, k := range s.Refused {
		wr := s.Work.write(k[0], k[1])
		if p, err := wr.presenceIn(db); err != nil || (p != whole && p != absent) {
			res.Torn = append(res.Torn, fmt.Sprintf("%d/%d: %v %v", k[0], k[1], p, err))
		}
	}
	if err := db.Put([]byte("after-reopen"), []byte("v"), shale.Sync); err != nil {
		res.NewWriteErr = oneLine(err)
	} else if v, err := db.Get([]byte("after-reopen")); err != nil || string(v) != "v" {
		res.NewWriteErr = fmt.Sprintf("get after put: %q %v", v, err)
	}
	if err := db.Close(); err != nil {
		res.CloseErr = oneLine(err)
	}
	return nil
}
