package shale

import (
	"fmt"
	"strings"
	"testing"

	"github.com/shale-db/shale/internal/vfs"
)

// TestCheckpointDurableAtReturn: a crash right after Checkpoint returns
// (everything not synced is lost) leaves a copy that opens with every key
// written before it, on a file system with hard links (MemFS).
func TestCheckpointDurableAtReturn(t *testing.T) {
	fsys := vfs.NewMem()
	o, err := (&Options{WriteBufferSize: 16 << 10}).withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	db, err := open("/db", o, fsys)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const n = 2000
	for i := range n {
		if err := db.Put(fmt.Appendf(nil, "k%05d", i), fmt.Appendf(nil, "v%d", i), NoSync); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Checkpoint("/backups/ck"); err != nil {
		t.Fatal(err)
	}
	crashed := fsys.CrashClone()
	cp, err := open("/backups/ck", o, crashed)
	if err != nil {
		t.Fatalf("open the checkpoint after a crash: %v", err)
	}
	defer cp.Close()
	for i := range n {
		v, err := cp.Get(fmt.Appendf(nil, "k%05d", i))
		if err != nil || string(v) != fmt.Sprint("v", i) {
			t.Fatalf("k%05d after the crash: %q, %v", i, v, err)
		}
	}
	if r := cp.Recovery(); len(r.Logs) == 0 {
		t.Errorf("the checkpoint replayed no WAL: the test did not cover the WAL copy")
	}
}

// openFault opens a database in /db on a FaultFS over a MemFS, with
// tables and a live WAL.
func openFault(t *testing.T) (*DB, *vfs.FaultFS, Options) {
	t.Helper()
	ffs := vfs.NewFault(vfs.NewMem(), nil)
	o, err := (&Options{WriteBufferSize: 16 << 10}).withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	db, err := open("/db", o, ffs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for i := range 1000 {
		if err := db.Put(fmt.Appendf(nil, "k%05d", i), fmt.Appendf(nil, "v%d", i), NoSync); err != nil {
			t.Fatal(err)
		}
	}
	return db, ffs, o
}

func checkCopy(t *testing.T, fsys vfs.FS, o Options, dir string) {
	t.Helper()
	cp, err := open(dir, o, fsys)
	if err != nil {
		t.Fatalf("open %s: %v", dir, err)
	}
	defer cp.Close()
	for i := range 1000 {
		v, err := cp.Get(fmt.Appendf(nil, "k%05d", i))
		if err != nil || string(v) != fmt.Sprint("v", i) {
			t.Fatalf("%s: k%05d = %q, %v", dir, i, v, err)
		}
	}
}

// TestCheckpointCopiesWhenLinkFails: on a file system without hard links
// (or across file systems), tables are copied.
func TestCheckpointCopiesWhenLinkFails(t *testing.T) {
	db, ffs, o := openFault(t)
	ffs.SetInjector(vfs.FailWhen(func(c vfs.Call) bool { return c.Op == vfs.OpLink }, nil))
	if err := db.Checkpoint("/ck"); err != nil {
		t.Fatal(err)
	}
	if n := ffs.Count(vfs.OpLink); n != 1 {
		t.Errorf("%d link attempts, want 1 (then copies)", n)
	}
	ffs.SetInjector(nil)
	checkCopy(t, ffs, o, "/ck")
}

// TestCheckpointFailuresLeaveSourceWorking fails each file-system call a
// checkpoint makes in its destination in turn: Checkpoint returns the
// error, the source keeps taking writes, and a later checkpoint into a new
// directory succeeds. (Calls on the source are shared with background
// work, whose failures are another matter: they stop writes.)
func TestCheckpointFailuresLeaveSourceWorking(t *testing.T) {
	db, ffs, o := openFault(t)
	inDest := func(dir string, c vfs.Call) bool {
		return c.Path == dir || strings.HasPrefix(c.Path, dir+"/")
	}
	count := 0
	ffs.SetInjector(func(c vfs.Call) error {
		if inDest("/probe", c) {
			count++
		}
		return nil
	})
	if err := db.Checkpoint("/probe"); err != nil {
		t.Fatal(err)
	}
	// Background work between checkpoints changes the tables and WALs, so
	// the nth call differs from run to run: what failed is recorded. A
	// failed link is not an error (the table is copied instead), nor a
	// failed Stat (a parent is synced that need not be).
	for n := 1; n <= count+4; n++ {
		dir, seen := fmt.Sprintf("/ck%d", n), 0
		var failed *vfs.Call
		ffs.SetInjector(func(c vfs.Call) error {
			if inDest(dir, c) {
				if seen++; seen == n {
					failed = &c
					return vfs.ErrInjected
				}
			}
			return nil
		})
		err := db.Checkpoint(dir)
		ffs.SetInjector(nil)
		if err == nil && failed != nil && failed.Op != vfs.OpLink && failed.Op != vfs.OpStat {
			t.Errorf("%s failed, and Checkpoint succeeded", failed)
		}
		if err := db.Put([]byte("after"), []byte("x"), NoSync); err != nil {
			t.Fatalf("call %d failed: the source stopped taking writes: %v", n, err)
		}
	}
	checkCopy(t, ffs, o, "/probe")
	if err := db.Checkpoint("/final"); err != nil {
		t.Fatal(err)
	}
	checkCopy(t, ffs, o, "/final")
}
