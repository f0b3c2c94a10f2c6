package shale

import (
	"errors"
	"io"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/shale-db/shale/internal/filename"
	"github.com/shale-db/shale/internal/manifest"
	"github.com/shale-db/shale/internal/vfs"
)

// A compaction that replaces a table, then a switch to a new MANIFEST,
// both between deleteObsoleteFiles' reads: afterwards the replaced table is
// gone from the directory, or a MANIFEST still there records its deletion.
// Otherwise a crash then would leave Repair a stale table with nothing to
// say it is stale, and Repair would merge it over what replaced it.
func TestObsoleteFilesKeepRecordOfReplacedTable(t *testing.T) {
	mem := vfs.NewMem()
	db := reviewMustOpen(t, mem, &Options{disableAutoCompactions: true, MaxManifestFileSize: 1})
	for _, k := range []string{"a", "b"} {
		if err := db.Put([]byte(k), []byte("v"), NoSync); err != nil {
			t.Fatal(err)
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	db.bgWG.Wait() // the flushes' own calls are done: the hook runs here only
	v := db.vs.Current()
	replaced := *v.Levels[0][0]
	v.Unref()
	oldName := filename.Make(reviewDir, filename.Table, replaced.Num)

	ran := false
	hook := func() {
		if ran {
			return
		}
		ran = true
		// The compaction: the table's copy replaces it.
		copyMeta := replaced
		copyMeta.Num = db.vs.NewFileNum()
		copyFile(t, mem, oldName, filename.Make(reviewDir, filename.Table, copyMeta.Num))
		edit := &manifest.VersionEdit{}
		edit.DeleteFile(0, replaced.Num)
		edit.AddFile(0, &copyMeta)
		if err := db.logAndApply(edit); err != nil {
			t.Fatal(err)
		}
		// The switch: edits until the MANIFEST rolls.
		before := db.vs.ManifestNumber()
		for i := 0; db.vs.ManifestNumber() == before; i++ {
			if i == 1000 {
				t.Fatal("the MANIFEST never rolled")
			}
			if err := db.logAndApply(&manifest.VersionEdit{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	testHookBetweenObsoleteReads.Store(&hook)
	t.Cleanup(func() { testHookBetweenObsoleteReads.Store(nil) })
	db.deleteObsoleteFiles()
	testHookBetweenObsoleteReads.Store(nil)
	if !ran {
		t.Fatal("the hook did not run")
	}

	if _, err := mem.Stat(oldName); err != nil {
		return // removed: nothing stale for Repair to find
	}
	names, err := mem.List(reviewDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if !strings.HasPrefix(name, "MANIFEST-") {
			continue
		}
		recorded := false
		_ = manifest.ReadEdits(mem, filepath.Join(reviewDir, name), func(e *manifest.VersionEdit) error {
			for _, d := range e.DeletedFiles {
				recorded = recorded || d.Num == replaced.Num
			}
			return nil
		})
		if recorded {
			return
		}
	}
	t.Fatalf("table %06d, replaced, is still on disk and no MANIFEST left (%v) records its deletion", replaced.Num, names)
}

// copyFile copies file from to a new file to, synced.
func copyFile(t *testing.T, fsys vfs.FS, from, to string) {
	t.Helper()
	src, err := fsys.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	data, err := io.ReadAll(src)
	if err != nil {
		t.Fatal(err)
	}
	dst, err := fsys.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dst.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := dst.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}

// A directory sync that fails after obsolete files were removed stops
// writes, as any failed sync does: the file system may have lost more of
// the directory than the removals, and a later sync on a new descriptor
// need not report it again.
func TestObsoleteFilesFailedDirSyncStopsWrites(t *testing.T) {
	mem := vfs.NewMem()
	ffs := vfs.NewFault(mem, nil)
	db, err := reviewOpen(t, ffs, &Options{disableAutoCompactions: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Put([]byte("a"), []byte("v"), NoSync); err != nil {
		t.Fatal(err)
	}
	var removedLog, failed atomic.Bool
	ffs.SetInjector(func(c vfs.Call) error {
		switch {
		case c.Op == vfs.OpRemove && strings.HasSuffix(c.Path, ".log"):
			removedLog.Store(true)
		case c.Op == vfs.OpSyncDir && removedLog.Load() && !failed.Load():
			failed.Store(true)
			return vfs.ErrInjected
		}
		return nil
	})
	// The flush retires the WAL; deleteObsoleteFiles removes it, and its
	// directory sync fails (which Flush may see, or not: its table is
	// recorded before the removal).
	if err := db.Flush(); err != nil && !errors.Is(err, vfs.ErrInjected) {
		t.Fatal(err)
	}
	db.bgWG.Wait()
	if !failed.Load() {
		t.Fatal("no directory sync followed the removal of the flushed WAL")
	}
	if err := db.Put([]byte("b"), []byte("v"), NoSync); !errors.Is(err, vfs.ErrInjected) {
		t.Fatalf("Put after a failed directory sync: %v, want the injected error", err)
	}
	if v, err := db.Get([]byte("a")); err != nil || string(v) != "v" {
		t.Fatalf("Get after the failure: %q, %v", v, err)
	}
	if err := db.Close(); !errors.Is(err, vfs.ErrInjected) {
		t.Fatalf("Close: %v, want the injected error", err)
	}
}
