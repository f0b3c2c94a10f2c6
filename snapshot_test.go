package shale_test

import (
	"errors"
	"testing"

	"github.com/shale-db/shale"
)

// TestSnapshotCloseTwice: Close is safe to call twice, as Iterator.Close
// is; the closed snapshot no longer reads.
func TestSnapshotCloseTwice(t *testing.T) {
	db, _ := openDB(t, nil)
	mustPut(t, db, "a", "1")
	snap := db.NewSnapshot()
	if err := snap.Close(); err != nil {
		t.Fatalf("first Close: %v", err)
	}
	if err := snap.Close(); err != nil {
		t.Fatalf("second Close: %v, want nil", err)
	}
	if _, err := snap.Get([]byte("a")); !errors.Is(err, shale.ErrClosed) {
		t.Fatalf("Get on a closed snapshot: %v, want ErrClosed", err)
	}
	if it := snap.NewIterator(nil); it.First() || !errors.Is(it.Err(), shale.ErrClosed) {
		t.Fatalf("NewIterator on a closed snapshot: Err = %v, want ErrClosed", it.Err())
	}

	open := db.NewSnapshot()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := open.Close(); err != nil {
			t.Fatalf("Close %d of a snapshot after DB.Close: %v, want nil", i+1, err)
		}
	}
}
