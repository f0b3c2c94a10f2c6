package shale

// Crashes inside the Open that recovers a crash, and the checks every
// crash image must pass: it opens in every recovery mode, Open reports no
// damage (no byte was damaged, only cut short), and what survives is a
// prefix of the writes.

import (
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/shale-db/shale/internal/vfs"
)

// damageIn returns a description of the first damage a recovery report
// lists, or "" if it lists none.
func damageIn(r RecoveryReport) string {
	for _, lr := range r.Logs {
		if lr.Damaged() {
			return fmt.Sprintf("log %06d: drops %+v, stopped %v", lr.FileNum, lr.Drops, lr.Stopped)
		}
	}
	return ""
}

// prefixHeld returns the n in [lo, hi] such that got, the values of keys
// in a reopened database, is what writes[:n] leave, or -1 if there is
// none: the writes that survived a crash are then not a prefix of the
// writes (a later one is there, an earlier one lost).
func prefixHeld(writes []sweepWrite, got map[string]string, lo, hi int) int {
	state := map[string]string{}
	for n := 0; n <= hi; n++ {
		if n >= lo && maps.Equal(state, got) {
			return n
		}
		if n == len(writes) {
			break
		}
		for j, k := range writes[n].keys {
			if v := writes[n].vals[j]; v == "" {
				delete(state, k)
			} else {
				state[k] = v
			}
		}
	}
	return -1
}

// checkCrashImage opens a copy of img in each recovery mode and checks
// that it opens, reports no damage and holds a prefix of w's writes that
// p allows: every required write, no write that had not begun.
func checkCrashImage(t *testing.T, w *sweepRun, p crashPoint, img *vfs.MemFS, name string) {
	t.Helper()
	for _, mode := range []RecoveryMode{SkipCorrupt, PointInTime, Strict} {
		db, err := reviewOpen(t, img.CrashClone(), &Options{Recovery: mode})
		if err != nil {
			t.Errorf("%s, %v recovery: open: %v", name, mode, err)
			continue
		}
		if d := damageIn(db.Recovery()); d != "" {
			t.Errorf("%s, %v recovery: damage reported after a crash: %s", name, mode, d)
		}
		c := valueCheck{writes: w.writes, acked: p.acked, started: min(p.started, len(w.writes)), required: p.required}
		for _, msg := range c.check(db) {
			t.Errorf("%s, %v recovery: %s", name, mode, msg)
		}
		got := contents(t, db, w.keysSoFar())
		if prefixHeld(w.writes, got, p.required, c.started) < 0 {
			t.Errorf("%s, %v recovery: the writes that survived are not a prefix of the writes (%d required, %d begun)",
				name, mode, p.required, c.started)
		}
		if err := db.Close(); err != nil {
			t.Errorf("%s, %v recovery: Close: %v", name, mode, err)
		}
	}
}

// crashesInsideOpen opens a copy of img and returns the images a crash
// would leave just before each call of that Open that changes the file
// system (the crash mode taken in turn), and one after it returned.
func crashesInsideOpen(t *testing.T, img *vfs.MemFS, seed int) (names []string, imgs []*vfs.MemFS) {
	t.Helper()
	mem := img.CrashClone()
	ffs := vfs.NewFault(mem, nil)
	ffs.SetInjector(func(c vfs.Call) error {
		if c.Op.Mutates() {
			k := len(imgs)
			m := vfs.CrashMode((k + seed) % int(vfs.NumCrashModes))
			names = append(names, fmt.Sprintf("crashed in Open before %s (%s crash)", c, m))
			imgs = append(imgs, mem.CrashCloneWith(m, uint64(seed*100+k)))
		}
		return nil
	})
	db, err := reviewOpen(t, ffs, nil)
	ffs.SetInjector(nil)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	names = append(names, "crashed right after Open")
	imgs = append(imgs, mem.CrashCloneWith(vfs.CrashAny, uint64(seed)))
	if err := db.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	return names, imgs
}

// TestCrashImagesOpenCleanly: every crash image of the sweep's workload
// (a power loss before each call that changes the file system, in each
// crash mode in turn: every unsynced byte lost, a prefix of each file's
// unsynced appends kept, or that prefix followed by zeros) opens in all
// three recovery modes, reports no damage, and holds a prefix of the
// writes with every durable one. The workload switches WALs every few
// writes under NoSync traffic, so this covers power loss across a switch.
// With SHALE_FAULT_SWEEP=full, every image in every crash mode.
func TestCrashImagesOpenCleanly(t *testing.T) {
	start := time.Now()
	n := 0
	for _, mode := range crashModePasses() {
		w, points := crashPoints(t, mode)
		for _, p := range points {
			checkCrashImage(t, w, p, p.fs, p.name)
			n++
			if t.Failed() {
				t.Fatalf("stopped at the first failure")
			}
		}
	}
	t.Logf("%d crash images opened in 3 modes, %v", n, time.Since(start).Round(time.Millisecond))
}

// crashModePasses returns the crash modes of the sweeps' passes: in CI one
// pass, the modes taken in turn crash by crash; with SHALE_FAULT_SWEEP=full,
// a pass in every mode.
func crashModePasses() []func(k int) vfs.CrashMode {
	if !sweepFull {
		return []func(k int) vfs.CrashMode{func(k int) vfs.CrashMode { return vfs.CrashMode(k % int(vfs.NumCrashModes)) }}
	}
	var passes []func(k int) vfs.CrashMode
	for m := range vfs.NumCrashModes {
		passes = append(passes, func(int) vfs.CrashMode { return m })
	}
	return passes
}

// TestCrashInsideOpen: the Open that recovers a crash image is itself
// crashed before each of its calls that change the file system (after
// its new WAL is synced with the records it carries forward, before and
// after the MANIFEST names it, while it deletes the old logs...). Every
// image that leaves opens in all three recovery modes, reports no damage
// and holds a prefix of the writes with every durable one. In CI the
// first 16 crash images of the sweep and every 12th after, in every crash
// mode; with SHALE_FAULT_SWEEP=full, every one.
func TestCrashInsideOpen(t *testing.T) {
	start := time.Now()
	// In CI: a pass in every crash mode, each taking the first 16 images
	// (a database with one or two WALs, where Open carries records
	// forward) and every 12th after.
	passes := []func(k int) vfs.CrashMode{}
	for m := range vfs.NumCrashModes {
		passes = append(passes, func(int) vfs.CrashMode { return m })
	}
	take := func(i int) bool { return sweepFull || i < 16 || i%12 == 0 }
	outer, inner := 0, 0
	for _, mode := range passes {
		w, points := crashPoints(t, mode)
		for i, p := range points {
			if !take(i) {
				continue
			}
			names, imgs := crashesInsideOpen(t, p.fs, i)
			for j, img := range imgs {
				checkCrashImage(t, w, p, img, p.name+"; "+names[j])
				if t.Failed() {
					t.Fatalf("stopped at the first failure")
				}
			}
			outer++
			inner += len(imgs)
		}
	}
	t.Logf("%d crash images, %d crashes inside their Opens, each opened in 3 modes, %v",
		outer, inner, time.Since(start).Round(time.Millisecond))
}
