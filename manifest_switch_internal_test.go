package shale

import (
	"path"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/shale-db/shale/internal/filename"
	"github.com/shale-db/shale/internal/vfs"
)

// A crash in a MANIFEST switch, after the new MANIFEST-N is durable and
// before CURRENT names it, when another goroutine allocated a file number
// between the triggering edit and the switch (a WAL for the next memtable,
// a compaction output), leaves MANIFEST-N numbered above what the MANIFEST
// CURRENT names has allocated. The next Open must number its own MANIFEST
// above N and delete N: Repair reads every MANIFEST in number order, and
// the stale snapshot in N, read last, would re-add tables that Open's
// MANIFEST records as replaced by a compaction, whose older values would
// then win over the bottom level's zeroed sequence numbers.
func TestCrashInManifestSwitchThenRepair(t *testing.T) {
	mem := vfs.NewMem()
	ffs := vfs.NewFault(mem, nil)
	opts := &Options{MaxManifestFileSize: 1}
	db, err := reviewOpen(t, ffs, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Put([]byte("k"), []byte("old"), Sync); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	var tableA string
	names, _ := mem.List(reviewDir)
	for _, n := range names {
		if tt, _, ok := filename.Parse(n); ok && tt == filename.Table {
			tableA = n
		}
	}
	var armed, captured atomic.Bool
	var img *vfs.MemFS
	ffs.SetInjector(func(c vfs.Call) error {
		base := path.Base(c.Path)
		switch {
		case !armed.Load() || captured.Load():
		case c.Op == vfs.OpSync && strings.HasPrefix(base, "MANIFEST-") && base == filename.Name(filename.Manifest, db.vs.ManifestNumber()):
			// Another goroutine allocates a number while the edit syncs.
			db.vs.NewFileNum()
		case c.Op == vfs.OpCreate && strings.HasSuffix(base, ".dbtmp"):
			img = mem.CrashClone() // power loss before CURRENT names MANIFEST-N
			captured.Store(true)
		}
		return nil
	})
	armed.Store(true)
	for i := 0; i < 50 && !captured.Load(); i++ {
		if err := db.Put([]byte("x"), []byte("y"), Sync); err != nil {
			t.Fatal(err)
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	ffs.SetInjector(nil)
	db.Close()
	if img == nil {
		t.Fatal("no MANIFEST switch")
	}

	// Reopen what the crash left.
	ffs2 := vfs.NewFault(img, nil)
	db2, err := reviewOpen(t, ffs2, &Options{MaxManifestFileSize: -1})
	if err != nil {
		t.Fatal(err)
	}
	k := db2.vs.ManifestNumber()
	names, _ = img.List(reviewDir)
	var stale []string
	for _, n := range names {
		if tt, num, ok := filename.Parse(n); ok && (tt == filename.Manifest || tt == filename.Temp) && num > k {
			stale = append(stale, n)
		}
	}
	t.Logf("after reopen: MANIFEST-%06d current; directory %v", k, names)
	if len(stale) > 0 {
		t.Errorf("after a writable Open with MANIFEST-%06d, the crashed switch's %v stay", k, stale)
	}
	// Overwrite k, compact to the bottom level, crash before table A is removed.
	if err := db2.Put([]byte("k"), []byte("new"), Sync); err != nil {
		t.Fatal(err)
	}
	var img2 *vfs.MemFS
	ffs2.SetInjector(func(c vfs.Call) error {
		if img2 == nil && c.Op == vfs.OpRemove && path.Base(c.Path) == tableA {
			img2 = img.CrashClone()
		}
		return nil
	})
	if err := db2.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	ffs2.SetInjector(nil)
	db2.Close()
	if img2 == nil {
		t.Fatalf("%s never removed", tableA)
	}
	o, _ := (&Options{}).withDefaults()
	// Control: the same directory without the stale MANIFEST repairs right.
	ctl := img2.CrashClone()
	for _, n := range stale {
		ctl.Remove(reviewDir + "/" + n)
	}
	if rep, err := repair(reviewDir, o, ctl); err != nil {
		t.Fatal(err)
	} else if dbc, err := reviewOpen(t, ctl, nil); err != nil {
		t.Fatal(err)
	} else {
		v, err := dbc.Get([]byte("k"))
		t.Logf("control (stale MANIFEST removed): obsolete %v; Get(k) = %q, %v", rep.Obsolete, v, err)
		dbc.Close()
	}
	rep, err := repair(reviewDir, o, img2)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("repair: obsolete %v", rep.Obsolete)
	db3, err := reviewOpen(t, img2, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db3.Close()
	v, err := db3.Get([]byte("k"))
	if err != nil || string(v) != "new" {
		t.Errorf("after Repair: Get(k) = %q, %v; want \"new\" (the overwritten value came back from %s)", v, err, tableA)
	}
}
