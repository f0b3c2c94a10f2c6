package manifest

import (
	"errors"
	"strings"
	"testing"

	"github.com/shale-db/shale/internal/filename"
	"github.com/shale-db/shale/internal/vfs"
)

// churn records a flush of a new level-0 table that replaces the previous
// one (as a compaction would), so that the state stays small while the
// MANIFEST grows by an edit each call.
func churn(t testing.TB, vs *VersionSet, prev uint64) uint64 {
	t.Helper()
	num := vs.NewFileNum()
	vs.SetLastSequence(vs.LastSequence() + 10)
	e := new(VersionEdit)
	if prev != 0 {
		e.DeleteFile(0, prev)
	}
	e.AddFile(0, meta(num, 1000, "a#1,PUT", "b#1,PUT"))
	if err := vs.LogAndApply(e); err != nil {
		t.Fatal(err)
	}
	return num
}

func manifestSize(m *testFS, num uint64) int { return len(m.data(manifestPath(num))) }

// A set with a roll policy keeps its MANIFEST near the limit: it switches
// to a new one holding the state, names it in CURRENT, reports each switch,
// and a Load of the directory at any point finds the state it had.
func TestRollBoundsManifest(t *testing.T) {
	m := newTestFS()
	vs := mustCreate(t, m)
	defer vs.Close()
	const limit = 2048
	type rolled struct {
		oldNum, newNum uint64
		size           int64
	}
	var rolls []rolled
	vs.SetRollPolicy(RollPolicy{MaxSize: limit, Rolled: func(o, n uint64, size int64, err error) {
		if err != nil {
			t.Errorf("roll from %d: %v", o, err)
		}
		rolls = append(rolls, rolled{o, n, size})
	}})
	var prev uint64
	for i := range 300 {
		prev = churn(t, vs, prev)
		num := vs.ManifestNumber()
		if got := string(m.data(currentPath)); got != filename.Name(filename.Manifest, num)+"\n" {
			t.Fatalf("edit %d: CURRENT = %q, set appends to %d", i, got, num)
		}
		if size := manifestSize(m, num); size > limit+200 {
			t.Fatalf("edit %d: MANIFEST-%06d holds %d bytes; limit %d", i, num, size, limit)
		}
		if i%37 == 0 {
			want := state(vs)
			ro := mustLoad(t, m.mem.CrashClone(), true)
			if got := state(ro); got != want {
				t.Fatalf("edit %d: Load after a crash:\n%s\nwant\n%s", i, got, want)
			}
			ro.Close()
		}
	}
	if len(rolls) < 5 {
		t.Fatalf("%d rolls in 300 edits of a limit of %d bytes", len(rolls), limit)
	}
	for i, r := range rolls {
		if r.size < limit || r.newNum <= r.oldNum || (i > 0 && r.oldNum != rolls[i-1].newNum) {
			t.Fatalf("roll %d: %+v after %+v", i, r, rolls[max(i-1, 0)])
		}
	}
	// Without a policy, the same edits make one MANIFEST grow throughout.
	m2 := newTestFS()
	vs2 := mustCreate(t, m2)
	defer vs2.Close()
	prev = 0
	for range 300 {
		prev = churn(t, vs2, prev)
	}
	if vs2.ManifestNumber() != 1 || manifestSize(m2, 1) < 5*limit {
		t.Fatalf("without a policy: MANIFEST-%06d of %d bytes", vs2.ManifestNumber(), manifestSize(m2, 1))
	}
}

// The limit is at least twice the snapshot a new MANIFEST starts with: a
// state larger than the limit does not make every edit start another.
func TestRollLimitFollowsState(t *testing.T) {
	m := newTestFS()
	vs := mustCreate(t, m)
	defer vs.Close()
	for i := range 200 { // 200 tables: a snapshot of several KB
		k := string(rune('a'+i%26)) + strings.Repeat("x", i)
		flush(t, vs, k+"#1,PUT", k+"#1,PUT")
	}
	vs.Close()
	vs = mustLoad(t, m, false)
	snap := manifestSize(m, vs.ManifestNumber())
	rolls := 0
	vs.SetRollPolicy(RollPolicy{MaxSize: 100, Rolled: func(uint64, uint64, int64, error) { rolls++ }})
	var prev uint64
	for range 50 {
		prev = churn(t, vs, prev)
	}
	if edits := manifestSize(m, vs.ManifestNumber()); rolls > 50*100/snap+1 {
		t.Fatalf("%d rolls in 50 edits with a %d-byte snapshot (MANIFEST now %d bytes)", rolls, snap, edits)
	}
}

// A crash at any step of a switch loads the state with the edit that
// triggered it: that edit was durable in the old MANIFEST before the
// switch began, and the new one names it in its snapshot.
func TestRollCrashAtEachStep(t *testing.T) {
	m := newTestFS()
	vs := mustCreate(t, m)
	defer vs.Close()
	var prev uint64
	for range 5 {
		prev = churn(t, vs, prev)
	}
	size := int64(manifestSize(m, vs.ManifestNumber()))
	before := state(vs)
	var clones []*vfs.MemFS
	var ops []string
	m.SetInjector(vfs.Chain(m.rec.Inject, func(c vfs.Call) error {
		clones = append(clones, m.mem.CrashClone())
		ops = append(ops, opString(c))
		return nil
	}))
	vs.SetRollPolicy(RollPolicy{MaxSize: size + 1})
	old := vs.ManifestNumber()
	churn(t, vs, prev)
	want := state(vs)
	m.setFail("")
	if vs.ManifestNumber() == old {
		t.Fatal("the edit past the limit did not start a new MANIFEST")
	}
	start := -1
	for i, op := range ops {
		if strings.HasPrefix(op, "create MANIFEST") && start < 0 {
			start = i
		}
	}
	if start < 1 || !strings.Contains(strings.Join(ops[start:], "\n"), "rename") {
		t.Fatalf("calls %q: no switch recorded after the edit", ops)
	}
	for i, c := range clones {
		ro, err := Load(c, testDir, true)
		if err != nil {
			t.Fatalf("crash before %q: Load: %v", ops[i], err)
		}
		got := state(ro)
		ro.Close()
		if got != want && (i >= start || got != before) {
			t.Fatalf("crash before %q (call %d of %q): state\n%s\nwant\n%s", ops[i], i, ops, got, want)
		}
	}
	// And once the switch is done, the old MANIFEST is no longer needed.
	final := m.mem.CrashClone()
	if err := final.Remove(manifestPath(old)); err != nil {
		t.Fatal(err)
	}
	ro := mustLoad(t, final, true)
	if got := state(ro); got != want {
		t.Fatalf("without the old MANIFEST: state\n%s\nwant\n%s", got, want)
	}
	ro.Close()
}

// A switch that fails before CURRENT could name the new MANIFEST is no
// error: the edits go on to the old one, the new file is removed, and the
// next attempt waits for the MANIFEST to grow by the limit again. One that
// fails at or after the rename of CURRENT is sticky, as a failed write is:
// CURRENT may name either file.
func TestRollFailure(t *testing.T) {
	for _, op := range []string{"create MANIFEST", "sync MANIFEST", "create 0", "sync 0", "rename", "syncdir"} {
		m := newTestFS()
		vs := mustCreate(t, m)
		var prev uint64
		for range 5 {
			prev = churn(t, vs, prev)
		}
		size := int64(manifestSize(m, vs.ManifestNumber()))
		var errs []error
		vs.SetRollPolicy(RollPolicy{MaxSize: size + 1, Rolled: func(_, _ uint64, _ int64, err error) { errs = append(errs, err) }})
		e := new(VersionEdit)
		num := vs.NewFileNum()
		e.DeleteFile(0, prev)
		e.AddFile(0, meta(num, 1000, "a#1,PUT", "b#1,PUT"))
		switch op {
		case "create MANIFEST", "sync MANIFEST":
			// The switch's MANIFEST, not the one the edit goes to.
			m.setFail(op + "-" + filename.Name(filename.Manifest, num+1)[len("MANIFEST-"):])
		default:
			m.setFail(op)
		}
		if op == "syncdir" {
			// The first syncdir of a switch is the new MANIFEST's entry
			// (before the rename); fail only the one after the rename.
			n := 0
			m.SetInjector(vfs.Chain(m.rec.Inject, vfs.FailWhen(func(c vfs.Call) bool {
				if c.Op == vfs.OpSyncDir {
					n++
					return n == 2
				}
				return false
			}, nil)))
		}
		if err := vs.LogAndApply(e); err != nil {
			t.Fatalf("%s fails: the edit that triggered the switch failed: %v", op, err)
		}
		want := state(vs)
		m.setFail("")
		if len(errs) != 1 || !errors.Is(errs[0], vfs.ErrInjected) {
			t.Fatalf("%s fails: Rolled got %v", op, errs)
		}
		sticky := op == "rename" || op == "syncdir"
		err := vs.LogAndApply(new(VersionEdit))
		if sticky != (err != nil) {
			t.Fatalf("%s fails: next LogAndApply: %v (sticky %v)", op, err, sticky)
		}
		if !sticky {
			want = state(vs)
			if vs.ManifestNumber() != 1 {
				t.Fatalf("%s fails: set appends to MANIFEST-%06d", op, vs.ManifestNumber())
			}
			names, _ := m.List(testDir)
			if len(names) != 2 {
				t.Fatalf("%s fails: directory holds %v, want CURRENT and MANIFEST-000001", op, names)
			}
			// Retried only once the MANIFEST has grown by the limit.
			if len(errs) != 1 {
				t.Fatalf("%s fails: retried at once", op)
			}
		}
		vs.Close()
		ro := mustLoad(t, m.mem.CrashClone(), true)
		if got := state(ro); got != want {
			t.Fatalf("%s fails: after a crash, state\n%s\nwant\n%s", op, got, want)
		}
		ro.Close()
	}
}
