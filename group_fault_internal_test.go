package shale

import (
	stderrors "errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/shale-db/shale/internal/filename"
	"github.com/shale-db/shale/internal/vfs"
)

// TestGroupCommitFaults: eight writers commit batches of three keys at
// once, Sync and not, while the Nth write or sync of a WAL fails. Every
// writer whose batch shared the failed commit gets the error, none of
// those batches becomes visible, no write is acknowledged after it, and
// after a reopen every acknowledged batch is there whole and every batch
// is whole or absent.
func TestGroupCommitFaults(t *testing.T) {
	const writers, perWriter = 8, 80 // enough Sync writes that the 40th WAL sync comes mid-way
	for op, ns := range map[vfs.Op][]int{vfs.OpWrite: {5, 20, 60}, vfs.OpSync: {3, 15, 40}} {
		for _, n := range ns {
			t.Run(fmt.Sprint(op, n), func(t *testing.T) {
				mem := vfs.NewMem()
				isLog := func(c vfs.Call) bool { return isType(filepath.Base(c.Path), filename.Log) }
				count := 0
				ffs := vfs.NewFault(mem, func(c vfs.Call) error {
					if c.Op == op && isLog(c) {
						if count++; count == n {
							return vfs.ErrInjected
						}
					}
					return nil
				})
				db := reviewMustOpen(t, ffs, &Options{WriteBufferSize: 8 << 10})
				acked := make([][]bool, writers)
				var failed [writers]bool
				var wg sync.WaitGroup
				for w := range writers {
					acked[w] = make([]bool, perWriter)
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := range perWriter {
							var b Batch
							for k := range 3 {
								b.Put(groupKey(w, i, k), []byte(fmt.Sprint("v", w, ".", i)))
							}
							d := NoSync
							if (w+i)%3 == 0 {
								d = Sync
							}
							if err := db.Write(&b, d); err != nil {
								failed[w] = true
								return
							}
							acked[w][i] = true
						}
					}()
				}
				wg.Wait()
				if count < n {
					t.Fatalf("the workload made only %d calls of kind %v: call %d never failed", count, op, n)
				}
				anyFailed := false
				for w := range writers {
					anyFailed = anyFailed || failed[w]
				}
				if !anyFailed {
					t.Fatalf("the injected %v failure reached no writer", op)
				}
				checkGroupState(t, db, acked, "in the process")
				db.Close()
				db2 := reviewMustOpen(t, mem, nil)
				checkGroupState(t, db2, acked, "after reopening")
				db3 := reviewMustOpen(t, mem.CrashClone(), nil)
				checkGroupStateAtomic(t, db3, "after a power loss")
			})
		}
	}
}

func groupKey(w, i, k int) []byte { return []byte(fmt.Sprintf("w%d/%03d/%d", w, i, k)) }

// checkGroupState checks that every acknowledged batch is there whole,
// that no batch is there in part, and, in the process that saw the
// failure, that no unacknowledged batch is visible.
func checkGroupState(t *testing.T, db *DB, acked [][]bool, where string) {
	t.Helper()
	for w := range acked {
		for i, ok := range acked[w] {
			present := groupPresent(t, db, w, i, where)
			switch {
			case ok && present != 3:
				t.Fatalf("%s: writer %d batch %d was acknowledged; %d of its 3 keys are there", where, w, i, present)
			case !ok && where == "in the process" && present != 0:
				t.Fatalf("%s: writer %d batch %d failed or never ran; %d of its keys are visible", where, w, i, present)
			case present != 0 && present != 3:
				t.Fatalf("%s: writer %d batch %d is there in part (%d of 3 keys)", where, w, i, present)
			}
		}
	}
}

// checkGroupStateAtomic checks only that no batch is there in part.
func checkGroupStateAtomic(t *testing.T, db *DB, where string) {
	t.Helper()
	for w := range 8 {
		for i := range 40 {
			if p := groupPresent(t, db, w, i, where); p != 0 && p != 3 {
				t.Fatalf("%s: writer %d batch %d is there in part (%d of 3 keys)", where, w, i, p)
			}
		}
	}
}

func groupPresent(t *testing.T, db *DB, w, i int, where string) int {
	t.Helper()
	present := 0
	for k := range 3 {
		v, err := db.Get(groupKey(w, i, k))
		switch {
		case err == nil && string(v) == fmt.Sprint("v", w, ".", i):
			present++
		case err == nil:
			t.Fatalf("%s: %s = %q, a value never written", where, groupKey(w, i, k), v)
		case !stderrors.Is(err, ErrNotFound):
			t.Fatalf("%s: Get(%s): %v", where, groupKey(w, i, k), err)
		}
	}
	return present
}

// TestFailedManifestSyncKeepsTheTable: a flush whose MANIFEST sync fails
// may have its edit on disk all the same, so its table must survive any
// later cleanup in this process; the next Open, which reads that edit,
// finds the table. (The fault sweep found a cleanup deleting it.)
func TestFailedManifestSyncKeepsTheTable(t *testing.T) {
	mem := vfs.NewMem()
	ffs := vfs.NewFault(mem, nil)
	db := reviewMustOpen(t, ffs, nil)
	for i := range 200 {
		if err := db.Put(reviewKey(i), reviewValue(i), NoSync); err != nil {
			t.Fatal(err)
		}
	}
	ffs.SetInjector(func(c vfs.Call) error {
		if c.Op == vfs.OpSync && isType(filepath.Base(c.Path), filename.Manifest) {
			return vfs.ErrInjected
		}
		return nil
	})
	if err := db.Flush(); !stderrors.Is(err, vfs.ErrInjected) {
		t.Fatalf("Flush with a failing MANIFEST sync = %v, want the injected fault", err)
	}
	ffs.SetInjector(nil)
	db.deleteObsoleteFiles() // what any later flush, compaction or read would start
	db.Close()
	db2 := reviewMustOpen(t, mem, nil)
	reviewCheck(t, db2, 200, "reopened after the failed MANIFEST sync")
}
