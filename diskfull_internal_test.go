package shale

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"
	"testing"

	"github.com/shale-db/shale/internal/filename"
	"github.com/shale-db/shale/internal/manifest"
	"github.com/shale-db/shale/internal/vfs"
)

// TestErrDiskFull: a write that fails because the disk is full (ENOSPC
// from the file system) returns an error matching ErrDiskFull as well as
// ENOSPC; so does every later write, and Close; an error of another kind
// does not match it.
func TestErrDiskFull(t *testing.T) {
	full := false
	ffs := vfs.NewFault(vfs.NewMem(), func(c vfs.Call) error {
		if full && c.Op.Mutates() {
			return syscall.ENOSPC
		}
		return nil
	})
	o, err := (&Options{}).withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	db, err := open("db", o, ffs)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Put([]byte("a"), []byte("1"), Sync); err != nil {
		t.Fatal(err)
	}
	full = true
	err = db.Put([]byte("b"), []byte("2"), Sync)
	if !errors.Is(err, ErrDiskFull) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("a write on a full disk: %v; want ErrDiskFull and ENOSPC", err)
	}
	if err := db.Put([]byte("c"), []byte("3"), NoSync); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("the next write: %v", err)
	}
	if err := db.Close(); err != nil && !errors.Is(err, ErrDiskFull) {
		t.Fatalf("Close: %v", err)
	}
	if errors.Is(markDiskFull(syscall.EIO), ErrDiskFull) {
		t.Fatal("EIO matches ErrDiskFull")
	}
}

// TestOpenPermissionDenied: an Open refused by the file system's
// permissions says so and points at Options.ReadOnly.
func TestOpenPermissionDenied(t *testing.T) {
	mem := vfs.NewMem()
	o, _ := (&Options{}).withDefaults()
	db, err := open("db", o, mem)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	denied := vfs.NewFault(mem, func(c vfs.Call) error {
		if c.Op.Mutates() && c.Op != vfs.OpLock { // a lock on an existing file is taken read-only
			return fs.ErrPermission
		}
		return nil
	})
	_, err = open("db", o, denied)
	err = openError("db", o, err)
	if !errors.Is(err, fs.ErrPermission) || !strings.Contains(err.Error(), "Options.ReadOnly") {
		t.Fatalf("Open of a directory that may not be written: %v", err)
	}
	o.ReadOnly = true
	ro, err := open("db", o, denied)
	if err != nil {
		t.Fatalf("read-only Open of the same directory: %v", err)
	}
	ro.Close()
}

// walOnlyImage returns a MemFS whose database holds n writes of 1 KiB
// only in its WAL (more than Open carries forward: replay writes a
// table), as a crash leaves it.
func walOnlyImage(t *testing.T, n int) *vfs.MemFS {
	t.Helper()
	mem := vfs.NewMem()
	o, _ := (&Options{WriteBufferSize: 16 << 20}).withDefaults()
	db, err := open("db", o, mem)
	if err != nil {
		t.Fatal(err)
	}
	val := strings.Repeat("v", 1024)
	for i := range n {
		if err := db.Put([]byte(fmt.Sprintf("k%06d", i)), []byte(val), Sync); err != nil {
			t.Fatal(err)
		}
	}
	img := mem.CrashClone()
	db.Close()
	return img
}

// dbFiles lists the tables and logs in db, by name.
func dbFiles(t *testing.T, fsys vfs.FS) map[string]bool {
	t.Helper()
	names, err := fsys.List("db")
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]bool{}
	for _, n := range names {
		if strings.HasSuffix(n, ".ldb") || strings.HasSuffix(n, ".log") {
			m[n] = true
		}
	}
	return m
}

// TestFailedOpenRemovesItsFiles: an Open that fails on a full disk after
// writing the table of the replayed log, and its new log, removes both
// when its MANIFEST edit did not reach the file (so that each failed Open
// does not leave another table behind), and keeps them when the edit was
// written and only its sync failed (the edit may be on disk). Either way
// the next Open has every write.
func TestFailedOpenRemovesItsFiles(t *testing.T) {
	for _, c := range []struct {
		name string
		op   vfs.Op
		keep bool
	}{
		{"edit write fails", vfs.OpWrite, false},
		{"edit sync fails", vfs.OpSync, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			img := walOnlyImage(t, 3000)
			before := dbFiles(t, img)
			manifestCalls := 0
			ffs := vfs.NewFault(img, func(call vfs.Call) error {
				// The first write and sync of a MANIFEST are Open's new
				// MANIFEST; the second, its edit naming the table.
				if call.Op == c.op && strings.Contains(call.Path, "MANIFEST") {
					if manifestCalls++; manifestCalls == 2 {
						return syscall.ENOSPC
					}
				}
				return nil
			})
			o, _ := (&Options{}).withDefaults()
			if _, err := open("db", o, ffs); !errors.Is(markDiskFull(err), ErrDiskFull) {
				t.Fatalf("Open: %v; want ENOSPC", err)
			}
			after := dbFiles(t, img)
			var added []string
			for n := range after {
				if !before[n] {
					added = append(added, n)
				}
			}
			switch {
			case !c.keep && len(added) > 0:
				t.Fatalf("the failed Open left %v behind", added)
			case c.keep && len(added) != 2:
				t.Fatalf("the failed Open, whose edit may be on disk, kept %v; want its table and log", added)
			}
			for n := range before {
				if !after[n] {
					t.Fatalf("the failed Open removed %s", n)
				}
			}
			db, err := open("db", o, img)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			for _, k := range []int{0, 1500, 2999} {
				if _, err := db.Get([]byte(fmt.Sprintf("k%06d", k))); err != nil {
					t.Fatalf("k%06d after the failed Open: %v", k, err)
				}
			}
		})
	}
}

// TestOpenRemovesLeftoversFirst: a table no version names (a flush whose
// edit never landed) is removed before Open creates anything: on a full
// disk it may be all the free space there is.
func TestOpenRemovesLeftoversFirst(t *testing.T) {
	img := walOnlyImage(t, 100)
	f, err := img.Create("db/000900.ldb")
	if err != nil {
		t.Fatal(err)
	}
	f.Write(make([]byte, 1<<20))
	f.Close()
	var rec vfs.Recorder
	ffs := vfs.NewFault(img, rec.Inject)
	o, _ := (&Options{}).withDefaults()
	db, err := open("db", o, ffs)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	removedAt, firstCreate := -1, -1
	for i, c := range rec.Calls() {
		switch {
		case c.Op == vfs.OpRemove && strings.HasSuffix(c.Path, "000900.ldb"):
			removedAt = i
		case c.Op == vfs.OpCreate && firstCreate < 0 && !strings.HasSuffix(c.Path, "LOG") && !strings.HasSuffix(c.Path, "LOCK"):
			firstCreate = i
		}
	}
	if removedAt < 0 || removedAt > firstCreate {
		t.Fatalf("the leftover table was removed at call %d, the first file created at call %d", removedAt, firstCreate)
	}
}

// TestOpenRetiresFlushedLogsAsItGoes: when replay fills the memtable at
// the end of a log, as it does where the memtable filled before the
// crash, Open records that table and removes the logs it holds before it
// replays the next: the disk needs room for one write buffer's table at a
// time, not for a table of every log while every log is still there.
func TestOpenRetiresFlushedLogsAsItGoes(t *testing.T) {
	mem := vfs.NewMem()
	hold := make(chan struct{})
	o, _ := (&Options{WriteBufferSize: 256 << 10, MaxImmutableMemtables: 2}).withDefaults()
	db, err := open("db", o, &blockFS{FS: mem, before: func(op, path string) {
		if op == "create" && strings.HasSuffix(path, ".ldb") {
			<-hold // no flush ends: the logs stay
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	val := strings.Repeat("v", 1000)
	for i := range 600 { // two full memtables, waiting for their flushes, and a part
		if err := db.Put([]byte(fmt.Sprintf("k%06d", i)), []byte(val), Sync); err != nil {
			t.Fatal(err)
		}
	}
	img := mem.CrashClone()
	close(hold)
	db.Close()
	logs := 0
	for n := range dbFiles(t, img) {
		if strings.HasSuffix(n, ".log") {
			logs++
		}
	}
	var rec vfs.Recorder
	ffs := vfs.NewFault(img, rec.Inject)
	db, err = open("db", o, ffs)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// Between the creation of one table and the next, a log is removed.
	tables, removedBetween := 0, 0
	removedSince := false
	for _, c := range rec.Calls() {
		switch {
		case c.Op == vfs.OpCreate && strings.HasSuffix(c.Path, ".ldb"):
			if tables > 0 && removedSince {
				removedBetween++
			}
			tables++
			removedSince = false
		case c.Op == vfs.OpRemove && strings.HasSuffix(c.Path, ".log"):
			removedSince = true
		}
	}
	if logs < 3 || tables < 2 || removedBetween == 0 {
		t.Fatalf("%d logs replayed into %d tables; a log removed between two tables %d times, want at least once", logs, tables, removedBetween)
	}
	for _, k := range []int{0, 300, 599} {
		if _, err := db.Get([]byte(fmt.Sprintf("k%06d", k))); err != nil {
			t.Fatalf("k%06d: %v", k, err)
		}
	}
}

// TestRetireFlushedLogsKeepsSequenceOrder: Open retires logs early only
// when every record of the logs it keeps is above the sequence its edit
// records. Here a crashed Open had carried two records forward into a new
// log; reopened with a write buffer those two fill exactly, the first log
// ends in a full memtable, but the next log repeats its records: retiring
// it would record a last sequence above records a kept log still holds,
// which LevelDB's readers refuse. Every crash image of that Open must
// keep the order.
func TestRetireFlushedLogsKeepsSequenceOrder(t *testing.T) {
	mem := vfs.NewMem()
	o1, _ := (&Options{WriteBufferSize: 1 << 20}).withDefaults()
	db, err := open("db", o1, mem)
	if err != nil {
		t.Fatal(err)
	}
	val := strings.Repeat("v", 100<<10)
	for _, k := range []string{"k1", "k2"} {
		if err := db.Put([]byte(k), []byte(val), Sync); err != nil {
			t.Fatal(err)
		}
	}
	img1 := mem.CrashClone()
	db.Close()

	// An Open that carries both records into a new log, cut by a crash
	// before its MANIFEST edit is synced.
	var img2 *vfs.MemFS
	createdLog := false
	db, err = open("db", o1, &blockFS{FS: img1, before: func(op, path string) {
		if op == "create" && strings.HasSuffix(path, ".log") {
			createdLog = true
		}
		if op == "sync" && strings.Contains(path, "MANIFEST") && createdLog && img2 == nil {
			img2 = img1.CrashClone()
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	if img2 == nil {
		t.Fatal("the Open carried nothing into a new log")
	}

	// Reopened with a write buffer the first log fills; a crash image at
	// every table creation.
	o3, _ := (&Options{WriteBufferSize: 128 << 10}).withDefaults()
	var imgs []*vfs.MemFS
	db, err = open("db", o3, &blockFS{FS: img2, before: func(op, path string) {
		if op == "create" && (strings.HasSuffix(path, ".ldb") || strings.HasSuffix(path, ".log")) {
			imgs = append(imgs, img2.CrashClone())
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	for i, img := range append(imgs, img2.CrashClone()) {
		vs, err := manifest.Load(img, "db", true)
		if err != nil {
			t.Fatal(err)
		}
		d := &DB{dir: "db", fs: img}
		names, _ := img.List("db")
		for _, n := range names {
			if ty, num, ok := filename.Parse(n); ok && ty == filename.Log && num >= vs.LogNumber() {
				seq, ok, err := d.firstSeq(num)
				if err == nil && ok && seq <= vs.LastSequence() {
					t.Fatalf("crash image %d: the MANIFEST's last sequence %d is not below record %d of log %d, which it still needs", i, vs.LastSequence(), seq, num)
				}
			}
		}
		vs.Close()
	}
}
