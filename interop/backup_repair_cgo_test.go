//go:build leveldb_cgo

package interop

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/shale-db/shale"
	"github.com/shale-db/shale/interop/leveldbc"
)

// A checkpoint taken under an open DB, and a directory rebuilt by Repair
// after its MANIFEST was lost, open in LevelDB itself with every key.
func TestCheckpointAndRepairOpenInLevelDB(t *testing.T) {
	dir := t.TempDir()
	ops := randomHistory(rand.New(rand.NewPCG(9, 9)), 6000, 3000)
	want := sortedModel(model(ops))
	db := writeShale(t, filepath.Join(dir, "db"), ops)
	ck := filepath.Join(dir, "ck")
	if err := db.Checkpoint(ck); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	ldb := openLevelDB(t, ck, leveldbc.Options{})
	sameScan(t, "LevelDB reading a checkpoint", scanLevelDB(t, ldb), want)
	ldb.Close()

	ms, _ := filepath.Glob(filepath.Join(dir, "db", "MANIFEST-*"))
	for _, m := range ms {
		os.Remove(m)
	}
	os.Remove(filepath.Join(dir, "db", "CURRENT"))
	rep, err := shale.Repair(filepath.Join(dir, "db"), nil)
	if err != nil || rep.Lost() {
		t.Fatalf("Repair: %v (lost %v)\n%s", err, rep.Lost(), rep.String())
	}
	ldb = openLevelDB(t, filepath.Join(dir, "db"), leveldbc.Options{})
	sameScan(t, "LevelDB reading a repaired directory", scanLevelDB(t, ldb), want)
	ldb.Close()
}
