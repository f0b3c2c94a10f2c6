package shale

import (
	"bytes"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/shale-db/shale/internal/filename"
	"github.com/shale-db/shale/internal/manifest"
	"github.com/shale-db/shale/internal/vfs"
	"github.com/shale-db/shale/wal"
)

// TestRepairRefusesOtherComparator: Open refuses a database whose MANIFEST
// names another comparator; Repair used to rewrite it as bytewise (its
// tables, in another key order, then read in the wrong one) and report
// success. It must refuse too, and change nothing.
func TestRepairRefusesOtherComparator(t *testing.T) {
	mem := vfs.NewMem()
	db := reviewMustOpen(t, mem, nil)
	reviewPut(t, db, 50)
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	rewriteManifest(t, mem, func(e *manifest.VersionEdit) {
		if e.HasComparator {
			e.SetComparator("leveldb.ReverseBytewiseComparator")
		}
	})
	if _, err := reviewOpen(t, mem, nil); err == nil {
		t.Fatal("Open accepted another comparator")
	}
	before, err := mem.List(reviewDir)
	if err != nil {
		t.Fatal(err)
	}
	o, err := (&Options{}).withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	rep, err := repair(reviewDir, o, mem)
	if err == nil || !strings.Contains(err.Error(), "ReverseBytewiseComparator") {
		t.Fatalf("Repair of a database of another comparator: %v; want a refusal naming it\n%s", err, rep.String())
	}
	after, err := mem.List(reviewDir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(before, after) {
		t.Errorf("the refused Repair changed the directory: %v, then %v", before, after)
	}
}

// TestPrevLogNumberIsReplayed: an old LevelDB recorded, while it compacted
// a memtable, the memtable's WAL as the MANIFEST's previous log number,
// below its log number; LevelDB replays that WAL too. Open ignored it, and
// then deleted it as obsolete with the writes it held.
func TestPrevLogNumberIsReplayed(t *testing.T) {
	mem := vfs.NewMem()
	db := reviewMustOpen(t, mem, nil)
	reviewPut(t, db, 20)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	logs, err := mem.List(reviewDir)
	if err != nil {
		t.Fatal(err)
	}
	var logNum uint64
	for _, name := range logs {
		if typ, num, ok := filename.Parse(name); ok && typ == filename.Log {
			logNum = num
		}
	}
	// The MANIFEST as that LevelDB left it: the log number moved past the
	// WAL, which is the previous log number.
	// (The edit is filled in as the old ones are read, and written after
	// them.)
	var e manifest.VersionEdit
	e.SetPrevLogNumber(logNum)
	rewriteManifest(t, mem, func(old *manifest.VersionEdit) {
		if old.HasNextFileNumber {
			e.SetLogNumber(old.NextFileNumber)
			e.SetNextFileNumber(old.NextFileNumber + 1)
		}
	}, &e)

	// A read-only DB replays that WAL too, and so must a checkpoint of
	// it: the checkpoint dropped the WAL, being below the log number.
	ro := reviewMustOpen(t, mem, &Options{ReadOnly: true})
	reviewCheck(t, ro, 20, "read-only")
	if err := ro.Checkpoint("/ck"); err != nil {
		t.Fatal(err)
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	o, err := (&Options{Recovery: Strict}).withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	ck, err := open("/ck", o, mem)
	if err != nil {
		t.Fatalf("open the read-only DB's checkpoint: %v", err)
	}
	reviewCheck(t, ck, 20, "in the read-only DB's checkpoint")
	if err := ck.Close(); err != nil {
		t.Fatal(err)
	}

	db = reviewMustOpen(t, mem, &Options{Recovery: Strict})
	reviewCheck(t, db, 20, "after Open")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = reviewMustOpen(t, mem, nil)
	defer db.Close()
	reviewCheck(t, db, 20, "after a second Open")
}

// rewriteManifest rewrites the current MANIFEST of the database at
// reviewDir in fsys: each edit as change leaves it, then extra.
func rewriteManifest(t *testing.T, fsys vfs.FS, change func(e *manifest.VersionEdit), extra ...*manifest.VersionEdit) {
	t.Helper()
	cur := strings.TrimSpace(string(memFile(t, fsys, filepath.Join(reviewDir, "CURRENT"))))
	path := filepath.Join(reviewDir, cur)
	var out bytes.Buffer
	w := wal.NewWriter(&out)
	if err := manifest.ReadEdits(fsys, path, func(e *manifest.VersionEdit) error {
		change(e)
		return w.WriteRecord(e.Encode(nil))
	}); err != nil {
		t.Fatal(err)
	}
	for _, e := range extra {
		if err := w.WriteRecord(e.Encode(nil)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	memRewrite(t, fsys, path, out.Bytes())
}
