package shale_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/shale-db/shale"
)

// ckOp is one write of a checkpoint test writer: a batch of puts and
// deletes under the writer's prefix. Every key a batch puts gets the same
// value, so a batch copied in part shows as keys of two generations.
type ckOp struct {
	puts, dels []string
	value      string
}

// ckWriter writes ops in order and counts those acknowledged.
type ckWriter struct {
	prefix string
	ops    []ckOp
	done   atomic.Int64
}

func newCkWriter(prefix string, n int, rng *rand.Rand) *ckWriter {
	w := &ckWriter{prefix: prefix}
	for i := range n {
		op := ckOp{value: fmt.Sprintf("%s-gen%06d-%s", prefix, i, strings.Repeat("v", 80))}
		for range 1 + rng.IntN(4) {
			k := fmt.Sprintf("%s%04d", prefix, rng.IntN(300))
			if rng.IntN(5) == 0 {
				op.dels = append(op.dels, k)
			} else {
				op.puts = append(op.puts, k)
			}
		}
		w.ops = append(w.ops, op)
	}
	return w
}

func (w *ckWriter) run(t *testing.T, db *shale.DB, stop *atomic.Bool) {
	for i, op := range w.ops {
		if stop.Load() {
			return
		}
		var b shale.Batch
		for _, k := range op.dels {
			b.Delete([]byte(k))
		}
		for _, k := range op.puts {
			b.Put([]byte(k), []byte(op.value))
		}
		if err := db.Write(&b, shale.NoSync); err != nil {
			t.Errorf("write %d: %v", i, err)
			return
		}
		w.done.Store(int64(i + 1))
	}
}

// model returns the writer's keys after its first n ops.
func (w *ckWriter) model(n int) map[string]string {
	m := map[string]string{}
	for _, op := range w.ops[:n] {
		for _, k := range op.dels {
			delete(m, k)
		}
		for _, k := range op.puts {
			m[k] = op.value
		}
	}
	return m
}

// matchesSome reports the n in [lo, hi] whose model equals got, or -1.
func (w *ckWriter) matchesSome(got map[string]string, lo, hi int) int {
	m := w.model(lo)
	for n := lo; ; n++ {
		if mapsEqual(m, got) {
			return n
		}
		if n == hi {
			return -1
		}
		for _, k := range w.ops[n].dels {
			delete(m, k)
		}
		for _, k := range w.ops[n].puts {
			m[k] = w.ops[n].value
		}
	}
}

func TestCheckpointUnderLoad(t *testing.T) {
	dir := t.TempDir()
	opts := &shale.Options{WriteBufferSize: 16 << 10, TargetFileSize: 8 << 10, BlockSize: 1 << 10}
	db, err := shale.Open(filepath.Join(dir, "src"), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	writers := []*ckWriter{newCkWriter("a", 6000, rng), newCkWriter("b", 6000, rng)}
	var stop atomic.Bool
	var wg sync.WaitGroup
	for _, w := range writers {
		wg.Add(1)
		go func() { defer wg.Done(); w.run(t, db, &stop) }()
	}
	type taken struct {
		dir    string
		lo, hi []int
	}
	var cks []taken
	for i := range 6 {
		for writers[0].done.Load() < int64(500*(i+1)) && !t.Failed() {
			runtime.Gosched()
		}
		ck := taken{dir: filepath.Join(dir, fmt.Sprintf("ck%d", i))}
		for _, w := range writers {
			ck.lo = append(ck.lo, int(w.done.Load()))
		}
		if err := db.Checkpoint(ck.dir); err != nil {
			t.Fatalf("checkpoint %d: %v", i, err)
		}
		for _, w := range writers {
			ck.hi = append(ck.hi, int(w.done.Load())+1) // a write may be acknowledged late
		}
		cks = append(cks, ck)
	}
	stop.Store(true)
	wg.Wait()
	m := db.Metrics()
	if c := m.Compactions; c.Default+c.Move+c.Tombstone == 0 || m.Flushes < 6 {
		t.Fatalf("%d flushes, compactions %+v: the checkpoints did not race with background work", m.Flushes, c)
	}
	for i, ck := range cks {
		verifyCheckpoint(t, i, ck.dir, writers, ck.lo, ck.hi)
	}
	checkDiverge(t, db, cks[len(cks)-1].dir)
}

func verifyCheckpoint(t *testing.T, i int, dir string, writers []*ckWriter, lo, hi []int) {
	t.Helper()
	cp, err := shale.Open(dir, nil)
	if err != nil {
		t.Fatalf("open checkpoint %d: %v", i, err)
	}
	defer cp.Close()
	for j, w := range writers {
		got := scanPrefix(t, cp, w.prefix)
		if n := w.matchesSome(got, lo[j], min(hi[j], len(w.ops))); n < 0 {
			t.Errorf("checkpoint %d: writer %s's keys (%d) match its model at no op in [%d, %d]",
				i, w.prefix, len(got), lo[j], hi[j])
		}
	}
}

// checkDiverge writes to the source and to the copy and checks that
// neither sees the other's writes, across a compaction and a reopen.
func checkDiverge(t *testing.T, db *shale.DB, dir string) {
	cp, err := shale.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	before := scanPrefix(t, cp, "")
	for i := range 200 {
		ckPut(t, db, fmt.Sprintf("src%04d", i))
		ckPut(t, cp, fmt.Sprintf("cp%04d", i))
	}
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := cp.Close(); err != nil {
		t.Fatal(err)
	}
	cp, err = shale.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Close()
	if n := len(scanPrefix(t, cp, "src")); n != 0 {
		t.Errorf("copy sees %d of the source's later writes", n)
	}
	if n := len(scanPrefix(t, db, "cp")); n != 0 {
		t.Errorf("source sees %d of the copy's writes", n)
	}
	after := scanPrefix(t, cp, "")
	for k := range after {
		if strings.HasPrefix(k, "cp") {
			delete(after, k)
		}
	}
	if !mapsEqual(before, after) {
		t.Errorf("the copy changed after the source compacted: %d keys before, %d after", len(before), len(after))
	}
}

func ckPut(t *testing.T, db *shale.DB, k string) {
	t.Helper()
	if err := db.Put([]byte(k), []byte("x"), shale.NoSync); err != nil {
		t.Fatal(err)
	}
}

func TestCheckpointRefusesNonEmptyDir(t *testing.T) {
	dir := t.TempDir()
	db, err := shale.Open(filepath.Join(dir, "db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	dest := filepath.Join(dir, "dest")
	if err := os.MkdirAll(dest, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dest, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	err = db.Checkpoint(dest)
	if err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("Checkpoint into a non-empty directory: %v, want a refusal", err)
	}
	if err := db.Checkpoint(filepath.Join(dir, "empty")); err != nil {
		t.Fatal(err)
	}
}

// TestCheckpointRefusesDestInsideDatabase: a checkpoint into the database's
// own directory, or below it (by any name, a symbolic link included), is
// refused and creates nothing: a directory inside a database made every
// later writable Open refuse it ("it holds ck, which no database writes").
func TestCheckpointRefusesDestInsideDatabase(t *testing.T) {
	dir := t.TempDir()
	dbDir := filepath.Join(dir, "db")
	db, err := shale.Open(dbDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Put([]byte("k"), []byte("v"), shale.Sync); err != nil {
		t.Fatal(err)
	}
	dests := map[string]string{
		dbDir:                                     "the database itself",
		filepath.Join(dbDir, "."):                 "the database itself",
		filepath.Join(dbDir, "ck"):                "inside the database",
		filepath.Join(dbDir, "a", "b"):            "inside the database",
		filepath.Join(dir, "x", "..", "db", "ck"): "inside the database",
	}
	if runtime.GOOS != "windows" {
		link := filepath.Join(dir, "link")
		if err := os.Symlink(dbDir, link); err != nil {
			t.Fatal(err)
		}
		dests[link] = "the database itself"
		dests[filepath.Join(link, "ck")] = "inside the database"
	}
	for dest, want := range dests {
		if err := db.Checkpoint(dest); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Checkpoint(%s) = %v; want a refusal: %s", dest, err, want)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(dbDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.IsDir() {
			t.Errorf("the refused checkpoints left directory %s in the database", e.Name())
		}
	}
	db, err = shale.Open(dbDir, nil)
	if err != nil {
		t.Fatalf("writable Open after the refused checkpoints: %v", err)
	}
	defer db.Close()
	if v, err := db.Get([]byte("k")); err != nil || string(v) != "v" {
		t.Errorf("Get = %q, %v", v, err)
	}
	if err := db.Checkpoint(filepath.Join(dir, "dbcopy")); err != nil {
		t.Errorf("Checkpoint beside the database (a name that starts like it): %v", err)
	}
}
