package shale_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/shale-db/shale"
)

// TestBatchVisit: Visit reports a batch's entries in order, with range
// deletions' ends (nil for none); Size is the encoding's length; an error
// from fn stops it.
func TestBatchVisit(t *testing.T) {
	var b shale.Batch
	b.Put([]byte("a"), []byte("1"))
	b.Delete([]byte("b"))
	b.DeleteRange([]byte("c"), []byte("f"))
	b.DeleteRange([]byte("x"), nil)
	var got []string
	err := b.Visit(func(op shale.BatchOp, k, v []byte) error {
		got = append(got, fmt.Sprintf("%d %s %q %v", op, k, v, v == nil))
		return nil
	})
	want := []string{`0 a "1" false`, `1 b "" true`, `2 c "f" false`, `2 x "" true`}
	if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("Visit: %v, %q; want %q", err, got, want)
	}
	if b.Size() < 12 || b.Len() != 4 {
		t.Fatalf("Size %d, Len %d", b.Size(), b.Len())
	}
	stop := errors.New("stop")
	n := 0
	if err := b.Visit(func(shale.BatchOp, []byte, []byte) error { n++; return stop }); err != stop || n != 1 {
		t.Fatalf("Visit returned %v after %d calls, want fn's error after 1", err, n)
	}
}

// TestSync: Sync succeeds on an open database and fails on a closed or
// read-only one.
func TestSync(t *testing.T) {
	db, dir := openDB(t, nil)
	if err := db.Put([]byte("k"), []byte("v"), shale.NoSync); err != nil {
		t.Fatal(err)
	}
	before := db.Metrics().WALSyncs
	if err := db.Sync(); err != nil {
		t.Fatal(err)
	}
	if db.Metrics().WALSyncs != before+1 {
		t.Fatal("Sync did not sync the WAL")
	}
	db.Close()
	if err := db.Sync(); !errors.Is(err, shale.ErrClosed) {
		t.Fatalf("Sync after Close: %v", err)
	}
	ro := reopen(t, dir, &shale.Options{ReadOnly: true})
	if err := ro.Sync(); !errors.Is(err, shale.ErrReadOnly) {
		t.Fatalf("Sync on a read-only DB: %v", err)
	}
}
