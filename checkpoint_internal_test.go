package shale

import (
	"fmt"
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
