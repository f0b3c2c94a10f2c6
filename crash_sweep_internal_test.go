package shale

// The crash sweep: the workload of fault_workload_internal_test.go, crashed
// (a power loss, in each of vfs.MemFS's crash modes) after every call that
// changes the file system.

import (
	stderrors "errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/shale-db/shale/internal/vfs"
)

// crashPoint is the file system a power loss would leave at one moment of
// a run, and how far the run had gone then.
type crashPoint struct {
	name string // the call about to be made, the crash mode and seed
	fs   *vfs.MemFS
	// writes[:acked] had returned and writes[started:] had not begun;
	// every acknowledged write in writes[:required] was durable.
	acked, started, required int
}

// crashPoints runs the workload and takes a crash image just before every
// call that changes the file system, and one after Close. The image of
// the kth such call crashes in mode(k) with seed k.
func crashPoints(t *testing.T, mode func(k int) vfs.CrashMode) (*sweepRun, []crashPoint) {
	t.Helper()
	mem := vfs.NewMem()
	ffs := vfs.NewFault(mem, nil)
	db, err := reviewOpen(t, ffs, sweepOptions(nil))
	if err != nil {
		t.Fatal(err)
	}
	w := newSweepRun(db)
	var mu sync.Mutex
	var points []crashPoint
	snap := func(what string) {
		mu.Lock()
		defer mu.Unlock()
		k := len(points)
		acked, required := int(w.done.Load()), int(w.durable.Load())
		m := mode(k)
		img := mem.CrashCloneWith(m, uint64(k))
		points = append(points, crashPoint{
			name:  fmt.Sprintf("crash %d, before %s (%s crash, seed %d)", k, what, m, k),
			fs:    img,
			acked: acked, required: required,
			started: int(w.done.Load()) + 1, // the write under way may be in the image
		})
	}
	ffs.SetInjector(func(c vfs.Call) error {
		if c.Op.Mutates() {
			snap(c.String())
		}
		return nil
	})
	w.run()
	ffs.SetInjector(nil)
	snap("nothing: after Close")
	if len(w.problems) > 0 || w.closeErr != nil {
		t.Fatalf("the workload without faults: %v; Close: %v", w.problems, w.closeErr)
	}
	return w, points
}

// checkCrashPoint opens the database a crash left and checks it against
// the model: it opens, and holds every write durable at the crash, no
// write that had not begun, every batch whole or absent. With again, it
// then crashes once more, right after that Open, and checks that the
// database holds the same: what Open recovered must itself be durable.
func checkCrashPoint(t *testing.T, w *sweepRun, p crashPoint, again bool) int {
	t.Helper()
	c := valueCheck{writes: w.writes, acked: p.acked, started: min(p.started, len(w.writes)), required: p.required}
	db, err := reviewOpen(t, p.fs, nil)
	if err != nil {
		t.Errorf("%s: open: %v", p.name, err)
		return 0
	}
	for _, msg := range c.check(db) {
		t.Errorf("%s: %s", p.name, msg)
	}
	var second *vfs.MemFS
	var recovered map[string]string
	if again {
		recovered = contents(t, db, w.keysSoFar())
		second = p.fs.CrashCloneWith(vfs.CrashAny, uint64(p.acked))
	}
	if err := db.Close(); err != nil {
		t.Errorf("%s: Close: %v", p.name, err)
	}
	if second == nil {
		return c.checked
	}
	db2, err := reviewOpen(t, second, nil)
	if err != nil {
		t.Errorf("%s, crashed again after Open: open: %v", p.name, err)
		return c.checked
	}
	defer db2.Close()
	got := contents(t, db2, w.keysSoFar())
	for _, k := range w.keysSoFar() {
		if got[k] != recovered[k] {
			t.Errorf("%s, crashed again after Open: %s = %.20q; the Open before recovered %.20q", p.name, k, got[k], recovered[k])
		}
	}
	return c.checked + len(recovered)
}

// contents returns the values of keys in db; absent keys are left out.
func contents(t *testing.T, db *DB, keys []string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, k := range keys {
		v, err := db.Get([]byte(k))
		if err == nil {
			m[k] = string(v)
		} else if !stderrors.Is(err, ErrNotFound) {
			t.Fatalf("Get(%s): %v", k, err)
		}
	}
	return m
}

// TestCrashSweep crashes the workload after every call that changes the
// file system: in CI each crash in one mode, the modes taken in turn, and
// every fifth crashed again right after the Open that recovers it; with
// SHALE_FAULT_SWEEP=full, every crash in every mode, each crashed again.
func TestCrashSweep(t *testing.T) {
	start := time.Now()
	type pass struct {
		name string
		mode func(k int) vfs.CrashMode
	}
	passes := []pass{{"modes in turn", func(k int) vfs.CrashMode { return vfs.CrashMode(k % int(vfs.NumCrashModes)) }}}
	if sweepFull {
		passes = nil
		for m := range vfs.NumCrashModes {
			passes = append(passes, pass{m.String(), func(int) vfs.CrashMode { return m }})
		}
	}
	crashes, checked := 0, 0
	for _, ps := range passes {
		w, points := crashPoints(t, ps.mode)
		for i, p := range points {
			checked += checkCrashPoint(t, w, p, sweepFull || i%5 == 0)
			if t.Failed() {
				t.Fatalf("%s: stopped at the first failure", ps.name)
			}
		}
		crashes += len(points)
	}
	t.Logf("%d crashes, %d keys checked after reopens, %v (full sweep: %v)",
		crashes, checked, time.Since(start).Round(time.Millisecond), sweepFull)
}
