package shale

import (
	"errors"
	"testing"
)

// TestSnapshotClosedDuringRead: a read of a snapshot that another goroutine
// closes meanwhile returns the snapshot's answer or ErrClosed, never what a
// compaction left after the Close. The snapshot used to be checked before
// the read took its version: a Close and a compaction that dropped the
// version the snapshot saw could come in between, and the read then found
// nothing.
func TestSnapshotClosedDuringRead(t *testing.T) {
	for _, read := range []string{"Get", "NewIterator"} {
		t.Run(read, func(t *testing.T) {
			db, err := Open(t.TempDir(), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			key := []byte("k")
			if err := db.Put(key, []byte("old"), Sync); err != nil {
				t.Fatal(err)
			}
			snap := db.NewSnapshot()
			if err := db.Put(key, []byte("new"), Sync); err != nil {
				t.Fatal(err)
			}
			if err := db.Compact(nil, nil); err != nil {
				t.Fatal(err)
			}
			if v, err := snap.Get(key); err != nil || string(v) != "old" {
				t.Fatalf("snapshot Get before the race = %q, %v; want old", v, err)
			}
			beforeAcquire = func() {
				beforeAcquire = nil
				snap.Close()
				// With the snapshot gone, a full compaction drops "old".
				if err := db.Compact(nil, nil); err != nil {
					t.Error(err)
				}
			}
			defer func() { beforeAcquire = nil }()
			var v []byte
			if read == "Get" {
				v, err = snap.Get(key)
			} else {
				it := snap.NewIterator(nil)
				if it.First() {
					v = it.Value()
				}
				err = it.Close()
			}
			if beforeAcquire != nil {
				t.Fatal("the read did not reach acquire")
			}
			if !errors.Is(err, ErrClosed) && string(v) != "old" {
				t.Errorf("snapshot %s racing its Close = %q, %v; want old or ErrClosed", read, v, err)
			}
		})
	}
}
