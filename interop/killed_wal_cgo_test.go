//go:build leveldb_cgo

package interop

import (
	"testing"

	"github.com/shale-db/shale/interop/leveldbc"
)

// TestLevelDBReadsWALOfKilledWriter is TestGoleveldbReadsWALOfKilledWriter
// for LevelDB itself, with paranoid checks on: LevelDB's log reader skips
// the zeroed space at the end of the killed writer's WAL without calling
// it damage, as it skips the space its own mmap-based writer once left.
func TestLevelDBReadsWALOfKilledWriter(t *testing.T) {
	db, err := leveldbc.Open(killedWriterDir(t), leveldbc.Options{})
	if err != nil {
		t.Fatalf("LevelDB opens the killed writer's directory: %v", err)
	}
	defer db.Close()
	for i := range killedKeys {
		v, err := db.Get(killedKey(i))
		if err != nil || string(v) != string(killedValue(i)) {
			t.Fatalf("LevelDB Get(%s) = %q, %v", killedKey(i), v, err)
		}
	}
}
