package shale

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/shale-db/shale/internal/vfs"
)

// TestRangeDelReclaimsAcrossLevels: a range deletion compacted into a
// level above the keys it covers (the base level, with the data in the
// last) is compacted on down to them without a manual Compact: within a
// minute the keys' space is back, and the mark off. It once stayed in the
// level above for good: a table of one range deletion and a few live keys
// was not "mostly deletions".
func TestRangeDelReclaimsAcrossLevels(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for background compactions")
	}
	o, err := (&Options{WriteBufferSize: 256 << 10, TargetFileSize: 256 << 10}).withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	db, err := open(t.TempDir(), o, vfs.OS())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	key := func(i uint64) []byte { return binary.BigEndian.AppendUint64([]byte{'l'}, i) }
	rng := rand.New(rand.NewPCG(1, 1))
	val := make([]byte, 100)
	var b Batch
	const n, keep = 200_000, 2_000
	for i := uint64(1); i <= n; i++ {
		for j := range val {
			val[j] = byte(rng.Uint32())
		}
		b.Put(key(i), val)
		if b.Len() == 1000 {
			if err := db.Write(&b, NoSync); err != nil {
				t.Fatal(err)
			}
			b.Reset()
		}
	}
	if err := db.DeleteRange(key(1), key(n-keep+1), Sync); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for {
		var bytes int64
		v := db.vs.Current()
		for _, files := range v.Levels {
			for _, f := range files {
				bytes += f.Size
			}
		}
		v.Unref()
		if bytes < 2*keep*130 && !db.vs.Marked() {
			t.Logf("tables hold %d bytes %v after the range deletion, unmarked", bytes, time.Since(start).Round(100*time.Millisecond))
			return
		}
		if time.Since(start) > time.Minute {
			t.Fatalf("a minute after the range deletion the tables hold %d bytes, marked %v\n%s", bytes, db.vs.Marked(), db.Metrics())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
