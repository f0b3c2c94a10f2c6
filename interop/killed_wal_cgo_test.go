//go:build leveldb_cgo

package interop

import (
	"os"
	"os/exec"
	"syscall"
	"testing"

	"github.com/shale-db/shale/interop/leveldbc"
)

// TestLevelDBReadsWALOfKilledWriter is TestGoleveldbReadsWALOfKilledWriter
// for LevelDB itself, with paranoid checks on: LevelDB's log reader skips
// the zeroed space at the end of the killed writer's WAL without calling
// it damage, as it skips the space its own mmap-based writer once left.
func TestLevelDBReadsWALOfKilledWriter(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), killedWriterEnv+"="+dir)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("writer: %v (want death by SIGKILL): %s", err, out)
	}
	db, err := leveldbc.Open(dir, leveldbc.Options{})
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
