package shale

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/shale-db/shale/internal/filename"
	"github.com/shale-db/shale/internal/vfs"
)

// TestSyncWritersShareSyncs: concurrent Sync writers share WAL syncs, one
// record and one sync a group, and the metrics count both. Each sync of a
// WAL takes a millisecond, as a disk's might, so that the queue fills
// while it runs whatever the machine's own disk does.
func TestSyncWritersShareSyncs(t *testing.T) {
	ffs := vfs.NewFault(vfs.NewMem(), func(c vfs.Call) error {
		if c.Op == vfs.OpSync && isType(filepath.Base(c.Path), filename.Log) {
			time.Sleep(time.Millisecond)
		}
		return nil
	})
	db := reviewMustOpen(t, ffs, nil)
	key := func(w, i int) []byte { return []byte(fmt.Sprintf("w%d/%04d", w, i)) }

	// One writer: a record and a sync a write; NoSync writes sync nothing.
	for i := range 20 {
		if err := db.Put(key(0, i), key(0, i), Sync); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Put([]byte("nosync"), []byte("v"), NoSync); err != nil {
		t.Fatal(err)
	}
	if m := db.Metrics(); m.WALRecords != 21 || m.WALSyncs != 20 {
		t.Fatalf("one writer, 20 Sync puts and a NoSync one: %d WAL records and %d syncs, want 21 and 20", m.WALRecords, m.WALSyncs)
	}

	const writers, perWriter = 8, 100
	var wg sync.WaitGroup
	for w := 1; w <= writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWriter {
				if err := db.Put(key(w, i), key(w, i), Sync); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	m := db.Metrics()
	records, syncs := m.WALRecords-21, m.WALSyncs-20
	// Eight writers with a sync each outstanding: after the first sync,
	// the others wait out a whole sync in the queue, so groups hold
	// several writers; a group commit that failed to group would sync
	// 800 times.
	if records != syncs || syncs > writers*perWriter/3 {
		t.Fatalf("%d writers, %d Sync puts each: %d WAL records and %d syncs; want one record a sync and at most %d syncs",
			writers, perWriter, records, syncs, writers*perWriter/3)
	}
	t.Logf("%d Sync puts from %d writers: %d syncs", writers*perWriter, writers, syncs)
	for w := 1; w <= writers; w++ {
		for i := range perWriter {
			if v, err := db.Get(key(w, i)); err != nil || string(v) != string(key(w, i)) {
				t.Fatalf("Get(%s) = %q, %v", key(w, i), v, err)
			}
		}
	}
}
