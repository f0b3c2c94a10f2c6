package shale

import (
	"fmt"
	"testing"

	"github.com/shale-db/shale/internal/vfs"
)

// openFaultBase returns a durable database on a MemFS: n Sync writes, some
// flushed to a table and some only in the WAL, then Close.
func openFaultBase(t *testing.T, n int) *vfs.MemFS {
	t.Helper()
	fsys := vfs.NewMem()
	db := reviewMustOpen(t, fsys, &Options{WriteBufferSize: 4 << 10})
	for i := range n {
		if err := db.Put(reviewKey(i), reviewValue(i), Sync); err != nil {
			t.Fatal(err)
		}
		if i == n/2 {
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return fsys.CrashClone()
}

// countOpenCalls returns how many file-system calls a fault-free Open of
// a copy of base makes.
func countOpenCalls(t *testing.T, base *vfs.MemFS) int {
	t.Helper()
	ffs := vfs.NewFault(base.CrashClone(), nil)
	db, err := reviewOpen(t, ffs, nil)
	if err != nil {
		t.Fatal(err)
	}
	n := ffs.Total()
	db.Close()
	return n
}

// TestOpenUnderFaults fails every call Open makes, one per run, on a new
// database and on one with tables and WALs. Whatever Open answers, the
// directory it leaves must open again, both as the process left it and
// after a power loss, with every acknowledged write. (A failed directory
// sync after CURRENT's rename once made Open delete the MANIFEST that
// CURRENT named, so that no later Open succeeded.)
func TestOpenUnderFaults(t *testing.T) {
	const n = 120
	for _, tc := range []struct {
		name string
		base *vfs.MemFS
		keys int
	}{
		{"new database", vfs.NewMem(), 0},
		{"existing database", openFaultBase(t, n), n},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := countOpenCalls(t, tc.base)
			failed := 0
			for seq := 1; seq <= calls; seq++ {
				mem := tc.base.CrashClone()
				ffs := vfs.NewFault(mem, vfs.FailSeq(seq, nil))
				db, err := reviewOpen(t, ffs, nil)
				if err == nil {
					db.Close()
				} else {
					failed++
				}
				for _, state := range []struct {
					name string
					fs   *vfs.MemFS
				}{{"as left", mem}, {"after power loss", mem.CrashClone()}} {
					where := fmt.Sprintf("call %d of %d failed (Open: %v), reopened %s", seq, calls, err, state.name)
					db2, err2 := reviewOpen(t, state.fs, nil)
					if err2 != nil {
						t.Fatalf("%s: %v", where, err2)
					}
					reviewCheck(t, db2, tc.keys, where)
					if err := db2.Close(); err != nil {
						t.Fatalf("%s: Close: %v", where, err)
					}
				}
			}
			if failed == 0 {
				t.Fatalf("none of %d injected faults failed Open", calls)
			}
			t.Logf("%d calls swept, %d made Open fail", calls, failed)
		})
	}
}
