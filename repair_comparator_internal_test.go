package shale

import (
	"bytes"
	"path/filepath"
	"slices"
	"strings"
	"testing"

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
	for i := range 50 {
		if err := db.Put(reviewKey(i), reviewValue(i), NoSync); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	cur := strings.TrimSpace(string(memFile(t, mem, filepath.Join(reviewDir, "CURRENT"))))
	path := filepath.Join(reviewDir, cur)
	var out bytes.Buffer
	w := wal.NewWriter(&out)
	if err := manifest.ReadEdits(mem, path, func(e *manifest.VersionEdit) error {
		if e.HasComparator {
			e.SetComparator("leveldb.ReverseBytewiseComparator")
		}
		return w.WriteRecord(e.Encode(nil))
	}); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	memRewrite(t, mem, path, out.Bytes())
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
