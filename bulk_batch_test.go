package shale_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/shale-db/shale"
)

// TestBulkBatchesInOrder writes batches of 5,000 puts whose keys ascend (a
// bulk load in key order, which the memtable appends as it decodes it when
// the keys sort above everything it holds) above, below and among keys
// written before them, then reads every key back before and after a reopen,
// whose recovery replays the batches from the log.
func TestBulkBatchesInOrder(t *testing.T) {
	db, dir := openDB(t, &shale.Options{WriteBufferSize: 1 << 20})
	want := map[string]string{}
	put := func(b *shale.Batch, k, v string) {
		b.Put([]byte(k), []byte(v))
		want[k] = v
	}
	var b shale.Batch
	for i := range 100 {
		put(&b, fmt.Sprintf("m%05d", i*50), "before")
	}
	if err := db.Write(&b, shale.NoSync); err != nil {
		t.Fatal(err)
	}
	for _, prefix := range []string{"z", "a", "m", "zz"} { // above, below, among, above
		b.Reset()
		for i := range 5000 {
			put(&b, fmt.Sprintf("%s%05d", prefix, i), fmt.Sprintf("%s-%d", prefix, i))
		}
		if err := db.Write(&b, shale.NoSync); err != nil {
			t.Fatal(err)
		}
	}
	check := func(db *shale.DB, when string) {
		t.Helper()
		for k, v := range want {
			got, err := db.Get([]byte(k))
			if err != nil || string(got) != v {
				t.Fatalf("%s: Get(%q) = %q, %v; want %q", when, k, got, err, v)
			}
		}
		n := 0
		var prev []byte
		for e, err := range db.All(nil) {
			if err != nil {
				t.Fatalf("%s: scan: %v", when, err)
			}
			k, v := e.Key, e.Value
			if prev != nil && bytes.Compare(prev, k) >= 0 {
				t.Fatalf("%s: the scan went from %q to %q", when, prev, k)
			}
			if want[string(k)] != string(v) {
				t.Fatalf("%s: the scan gave %q = %q, want %q", when, k, v, want[string(k)])
			}
			prev = append(prev[:0], k...)
			n++
		}
		if n != len(want) {
			t.Fatalf("%s: the scan gave %d keys, want %d", when, n, len(want))
		}
	}
	check(db, "written")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := shale.Open(dir, &shale.Options{WriteBufferSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	check(db, "reopened")
}
