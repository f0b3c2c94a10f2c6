package shale

import (
	"bytes"
	"errors"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shale-db/shale/internal/filename"
	"github.com/shale-db/shale/internal/vfs"
)

// gatedTableSyncs is a MemFS whose table files, once armed, report each
// Sync: the first blocks until gate is closed, and the one numbered
// failAt (counting from 1, 0 for none) fails.
type gatedTableSyncs struct {
	*vfs.MemFS
	armed   atomic.Bool
	created atomic.Int64 // tables created since armed
	syncs   atomic.Int64 // table syncs begun since armed
	failAt  int64
	gate    chan struct{}
	blocked chan struct{} // closed when the first sync blocks
	once    sync.Once
	opened  sync.Once
}

// open lets the held sync go on.
func (g *gatedTableSyncs) open() { g.opened.Do(func() { close(g.gate) }) }

var errInjectedSync = errors.New("injected table sync failure")

func (g *gatedTableSyncs) Create(name string) (vfs.File, error) {
	f, err := g.MemFS.Create(name)
	if err != nil || !isType(filepath.Base(name), filename.Table) || !g.armed.Load() {
		return f, err
	}
	g.created.Add(1)
	return &gatedSyncFile{File: f, g: g}, nil
}

type gatedSyncFile struct {
	vfs.File
	g *gatedTableSyncs
}

func (f *gatedSyncFile) Sync() error {
	n := f.g.syncs.Add(1)
	if n == 1 {
		f.g.once.Do(func() { close(f.g.blocked) })
		<-f.g.gate
	}
	if n == f.g.failAt {
		return errInjectedSync
	}
	return f.File.Sync()
}

// fillForOutputs writes keys that a compaction of everything writes into
// many small tables, and flushes them into level 0.
func fillForOutputs(t *testing.T, db *DB, n int) {
	t.Helper()
	val := bytes.Repeat([]byte("v"), 100)
	for i := range n {
		if err := db.Put([]byte("key"+strconv.Itoa(100000+i)), val, NoSync); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
}

// newGatedTableSyncs returns a gatedTableSyncs over a new MemFS, not yet
// armed, whose sync numbered failAt fails.
func newGatedTableSyncs(failAt int64) *gatedTableSyncs {
	return &gatedTableSyncs{MemFS: vfs.NewMem(), failAt: failAt, gate: make(chan struct{}), blocked: make(chan struct{})}
}

// liveTables returns the numbers of db's current tables.
func liveTables(db *DB) map[uint64]bool {
	v := db.vs.Current()
	defer v.Unref()
	live := make(map[uint64]bool)
	for _, files := range v.Levels {
		for _, f := range files {
			live[f.Num] = true
		}
	}
	return live
}

// checkNoStrayTables fails if db's directory in fsys holds a table that is
// not in live: one a failed compaction left behind.
func checkNoStrayTables(t *testing.T, fsys vfs.FS, db *DB, live map[uint64]bool) {
	t.Helper()
	names, err := fsys.List(db.dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if typ, num, ok := filename.Parse(name); ok && typ == filename.Table && !live[num] {
			t.Fatalf("table %s of the failed compaction was left behind", name)
		}
	}
}

func newGatedDB(t *testing.T, failAt int64) (*DB, *gatedTableSyncs) {
	t.Helper()
	g := newGatedTableSyncs(failAt)
	db := reviewMustOpen(t, g, &Options{
		WriteBufferSize: 64 << 10, TargetFileSize: 16 << 10, Compression: NoCompression,
		disableAutoCompactions: true,
	})
	t.Cleanup(g.open) // before the Close that reviewMustOpen registered
	fillForOutputs(t, db, 3000)
	g.armed.Store(true)
	return db, g
}

// A compaction writes its next table while the last one's fdatasync runs,
// and records none of its tables before every one is synced.
func TestCompactionSyncsTablesBesideWriting(t *testing.T) {
	db, g := newGatedDB(t, 0)
	done := make(chan error, 1)
	go func() { done <- db.Compact(nil, nil) }()
	select {
	case <-g.blocked:
	case err := <-done:
		t.Fatalf("Compact returned (%v) before its first table was synced", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the compaction never synced a table")
	}
	deadline := time.Now().Add(10 * time.Second)
	for g.created.Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("the compaction created %d tables while the first one's sync was held: it waited for the sync", g.created.Load())
		}
		time.Sleep(time.Millisecond)
	}
	select {
	case err := <-done:
		t.Fatalf("Compact returned (%v) while a table's sync was held", err)
	case <-time.After(50 * time.Millisecond):
	}
	v := db.vs.Current()
	for level := 1; level < len(v.Levels); level++ {
		if n := v.NumFiles(level); n != 0 {
			v.Unref()
			t.Fatalf("level %d holds %d tables while an output's sync was held: the edit did not wait for it", level, n)
		}
	}
	v.Unref()
	g.open()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := db.vs.Current().NumFiles(0); n != 0 {
		t.Fatalf("level 0 holds %d tables after compacting everything", n)
	}
	if g.created.Load() < 3 {
		t.Fatalf("the compaction wrote %d tables; the test needs at least 3", g.created.Load())
	}
	checkOutputsKeys(t, db, 3000)
}

// A table sync that fails fails the compaction: nothing is recorded, its
// tables are removed, and every key is still read from the inputs.
func TestCompactionTableSyncFailure(t *testing.T) {
	db, g := newGatedDB(t, 2)
	g.open()
	err := db.Compact(nil, nil)
	if !errors.Is(err, errInjectedSync) {
		t.Fatalf("Compact: %v, want the injected sync failure", err)
	}
	v := db.vs.Current()
	l0 := v.NumFiles(0)
	v.Unref()
	if l0 == 0 {
		t.Fatal("the failed compaction's inputs left level 0")
	}
	checkNoStrayTables(t, g.MemFS, db, liveTables(db))
	checkOutputsKeys(t, db, 3000)
}

func checkOutputsKeys(t *testing.T, db *DB, n int) {
	t.Helper()
	for i := range n {
		k := []byte("key" + strconv.Itoa(100000+i))
		if _, err := db.Get(k); err != nil {
			t.Fatalf("Get(%s): %v", k, err)
		}
	}
}
