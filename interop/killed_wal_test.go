package interop

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"

	"github.com/shale-db/shale"
	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/opt"
)

// killedWriterEnv makes the test binary the writer of
// TestGoleveldbReadsWALOfKilledWriter: it writes, then kills itself.
const killedWriterEnv = "SHALE_INTEROP_KILLED_WRITER"

func init() {
	dir := os.Getenv(killedWriterEnv)
	if dir == "" {
		return
	}
	db, err := shale.Open(dir, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for i := range killedKeys {
		if err := db.Put(killedKey(i), killedValue(i), shale.NoSync); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	syscall.Kill(os.Getpid(), syscall.SIGKILL)
}

const killedKeys = 5000

func killedKey(i int) []byte   { return []byte(fmt.Sprintf("killed%05d", i)) }
func killedValue(i int) []byte { return []byte(fmt.Sprintf("value-%d", i)) }

// TestGoleveldbReadsWALOfKilledWriter: shale appends to its WAL through a
// memory mapping on Linux, so a writer killed with SIGKILL leaves a WAL
// whose end is reserved space, all zeros. goleveldb, opening the directory
// first (before shale recovers it), reads every acknowledged write.
func TestGoleveldbReadsWALOfKilledWriter(t *testing.T) {
	dir := killedWriterDir(t)
	gdb, err := leveldb.OpenFile(dir, &opt.Options{ErrorIfMissing: true})
	if err != nil {
		t.Fatalf("goleveldb opens the killed writer's directory: %v", err)
	}
	defer gdb.Close()
	for i := range killedKeys {
		v, err := gdb.Get(killedKey(i), nil)
		if err != nil || string(v) != string(killedValue(i)) {
			t.Fatalf("goleveldb Get(%s) = %q, %v", killedKey(i), v, err)
		}
	}
}

// killedWriterDir runs a shale writer in a child process that kills itself
// with SIGKILL after killedKeys acknowledged puts, and returns its
// directory, which no one has recovered yet.
func killedWriterDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), killedWriterEnv+"="+dir)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("writer: %v (want death by SIGKILL): %s", err, out)
	}
	return dir
}
