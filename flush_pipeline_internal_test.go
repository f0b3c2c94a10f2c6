package shale

import (
	"bytes"
	"errors"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shale-db/shale/internal/filename"
	"github.com/shale-db/shale/internal/vfs"
)

// gateFS holds the Sync of every table created after arm until the test
// sends its result with release; it reports each such Sync on arrived, and
// each that went through on synced.
type gateFS struct {
	*vfs.MemFS
	mu      sync.Mutex
	armed   bool
	done    bool // the test ended: held Syncs fail
	gates   map[string]chan error
	arrived chan string
	synced  chan string
	// logSyncs counts the Syncs of WAL files, armed or not.
	logSyncs atomic.Int64
}

func newGateFS() *gateFS {
	return &gateFS{MemFS: vfs.NewMem(), gates: map[string]chan error{},
		arrived: make(chan string, 16), synced: make(chan string, 16)}
}

// arm starts holding table Syncs. When the test ends, however it ends,
// every held Sync fails, so that Close does not wait for a flush forever.
func (g *gateFS) arm(t *testing.T) {
	g.mu.Lock()
	g.armed = true
	g.mu.Unlock()
	t.Cleanup(func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.done = true
		for _, c := range g.gates {
			select {
			case c <- vfs.ErrInjected:
			default:
			}
		}
	})
}

func (g *gateFS) gate(name string) chan error {
	g.mu.Lock()
	defer g.mu.Unlock()
	c := g.gates[name]
	if c == nil {
		c = make(chan error, 1)
		g.gates[name] = c
		if g.done {
			c <- vfs.ErrInjected
		}
	}
	return c
}

// release lets the held Sync of table num return err (or sync, if nil).
func (g *gateFS) release(num uint64, err error) {
	g.gate(filename.Make(reviewDir, filename.Table, num)) <- err
}

func (g *gateFS) Create(name string) (vfs.File, error) {
	f, err := g.MemFS.Create(name)
	if err == nil && isType(filepath.Base(name), filename.Log) {
		return &countedFile{File: f, n: &g.logSyncs}, nil
	}
	if err != nil || !isType(filepath.Base(name), filename.Table) {
		return f, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.armed {
		return f, nil
	}
	return &gatedFile{File: f, g: g, name: name}, nil
}

type countedFile struct {
	vfs.File
	n *atomic.Int64
}

func (f *countedFile) Sync() error {
	f.n.Add(1)
	return f.File.Sync()
}

type gatedFile struct {
	vfs.File
	g    *gateFS
	name string
}

func (f *gatedFile) Sync() error {
	f.g.arrived <- f.name
	if err := <-f.g.gate(f.name); err != nil {
		return err
	}
	err := f.File.Sync()
	f.g.synced <- f.name
	return err
}

// waitFor waits for name on c, skipping others.
func waitFor(t *testing.T, c chan string, name, what string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case got := <-c:
			if got == name {
				return
			}
		case <-deadline:
			t.Fatalf("%s: %s never came", what, name)
		}
	}
}

// flushTables returns the table numbers of the two immutable memtables'
// flushes, older first.
func flushTables(t *testing.T, db *DB) (older, newer uint64) {
	t.Helper()
	db.mu.Lock()
	defer db.mu.Unlock()
	if len(db.mu.imm) != 2 || db.mu.flushes != 2 {
		t.Fatalf("%d immutable memtables, %d flushes; want 2 and 2", len(db.mu.imm), db.mu.flushes)
	}
	return db.mu.imm[0].tableNum, db.mu.imm[1].tableNum
}

// fillTwoMemtables writes keys base to base+n-1 with value "old", switches
// the memtable, writes them with value "new" and switches again: two
// immutable memtables then wait for their flushes.
func fillTwoMemtables(t *testing.T, db *DB, base, n int) {
	t.Helper()
	for _, v := range []string{"old", "new"} {
		for i := range n {
			if err := db.Put(bgKey(base+i), bytes.Repeat([]byte(v), 40), NoSync); err != nil {
				t.Fatal(err)
			}
		}
		// What Flush does before it waits: the memtable becomes immutable.
		if err := db.commit.enqueue(db, nil, false, true); err != nil {
			t.Fatal(err)
		}
	}
}

// forceSwitch makes the memtable immutable, as Flush does before it
// waits, and returns the table number its flush writes.
func forceSwitch(t *testing.T, db *DB) uint64 {
	t.Helper()
	if err := db.commit.enqueue(db, nil, false, true); err != nil {
		t.Fatal(err)
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	return db.mu.imm[len(db.mu.imm)-1].tableNum
}

func checkNewValues(t *testing.T, db *DB, base, n int, where string) {
	t.Helper()
	want := bytes.Repeat([]byte("new"), 40)
	for i := range n {
		v, err := db.Get(bgKey(base + i))
		if err != nil || !bytes.Equal(v, want) {
			t.Fatalf("%s: key %d: %q, %v; want the newer memtable's value", where, i, v, err)
		}
	}
}

// newerFlushFirst opens a database on a gateFS, fills two memtables with
// keys 0 to n-1 (see fillTwoMemtables), and lets the newer one's flush
// write and sync its table while the older one's Sync is held. It returns
// the two tables' numbers.
func newerFlushFirst(t *testing.T, n int) (g *gateFS, db *DB, opts *Options, older, newer uint64) {
	t.Helper()
	g = newGateFS()
	opts = &Options{disableAutoCompactions: true, MaxImmutableMemtables: 2}
	db = reviewMustOpen(t, g, opts)
	g.arm(t)
	fillTwoMemtables(t, db, 0, n)
	older, newer = flushTables(t, db)
	if older >= newer {
		t.Fatalf("the older memtable's table is %06d, the newer one's %06d; want them numbered in order", older, newer)
	}
	g.release(newer, nil)
	waitFor(t, g.synced, filename.Make(reviewDir, filename.Table, newer), "the newer table's sync")
	return g, db, opts, older, newer
}

// TestFlushesRecordTablesOldestFirst: the two immutable memtables are
// written side by side, but the newer one's table, written first while
// the older one's sync is held, is recorded only after the older one's;
// level 0 then orders them by age and reads see the newer values, before
// and after a reopen.
func TestFlushesRecordTablesOldestFirst(t *testing.T) {
	const n = 200
	g, db, opts, older, newer := newerFlushFirst(t, n)
	// The newer memtable's table was written and synced while the older
	// one's sync is held, but not recorded: nothing is in level 0 yet, both memtables
	// still wait.
	time.Sleep(20 * time.Millisecond)
	if l0, imm := db.l0Tables.Load(), db.Metrics().ImmutableMemtables; l0 != 0 || imm != 2 {
		t.Fatalf("with the older flush held: %d level-0 tables and %d immutable memtables; want 0 and 2", l0, imm)
	}
	checkNewValues(t, db, 0, n, "while flushing")

	g.release(older, nil)
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	v := db.vs.Current()
	l0 := v.Levels[0]
	if len(l0) != 2 {
		v.Unref()
		t.Fatalf("level 0 holds %d tables after both flushes; want 2", len(l0))
	}
	if l0[0].Num != newer || l0[1].Num != older {
		t.Errorf("level 0 holds %06d, %06d (newest first); want %06d, %06d", l0[0].Num, l0[1].Num, newer, older)
	}
	v.Unref()
	checkNewValues(t, db, 0, n, "after the flushes")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = reviewMustOpen(t, g.MemFS, opts)
	checkNewValues(t, db, 0, n, "after a reopen")
}

// TestFailedOlderFlushAbandonsNewer: when the older memtable's flush fails
// after the newer one's table is written, the newer one records nothing,
// writes fail with the flush's error, and a reopen recovers every write
// from the WALs.
func TestFailedOlderFlushAbandonsNewer(t *testing.T) {
	const n = 200
	g, db, opts, older, newer := newerFlushFirst(t, n)
	g.release(older, vfs.ErrInjected)
	if err := db.Flush(); !errors.Is(err, vfs.ErrInjected) {
		t.Fatalf("Flush after the failed flush: %v; want the injected error", err)
	}

	if l0 := db.l0Tables.Load(); l0 != 0 {
		t.Fatalf("%d level-0 tables after the older flush failed; want none recorded", l0)
	}
	if err := db.Put([]byte("after"), []byte("x"), NoSync); !errors.Is(err, vfs.ErrInjected) {
		t.Fatalf("a write after the failed flush: %v; want the injected error", err)
	}
	db.Close()
	// The newer table, written and synced but never recorded, is gone:
	// no edit names it, and no cleanup runs after a failure.
	names, err := g.MemFS.List(reviewDir)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(names, filename.Name(filename.Table, newer)) {
		t.Errorf("the abandoned newer table %06d is left behind: %v", newer, names)
	}
	db = reviewMustOpen(t, g.MemFS, opts)
	checkNewValues(t, db, 0, n, "after a reopen")
}

// TestRetiredLogSyncedOncePerSwitch: NoSync writes that fill memtables
// sync each WAL once, when it is retired (before the next one takes a
// write, so that a power loss keeps a prefix of the writes), and never for
// a write; with the flushes held, a Sync write makes every earlier write
// durable, those in the retired WALs included, and a power loss right
// after it loses none.
func TestRetiredLogSyncedOncePerSwitch(t *testing.T) {
	g := newGateFS()
	opts := &Options{disableAutoCompactions: true, MaxImmutableMemtables: 2}
	db := reviewMustOpen(t, g, opts)
	const n = 200
	switched := func() int64 {
		db.mu.Lock()
		defer db.mu.Unlock()
		return db.mu.switched
	}
	syncsBefore, switchesBefore := g.logSyncs.Load(), switched()
	fillTwoMemtables(t, db, 0, n)
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	syncs, switches := g.logSyncs.Load()-syncsBefore, switched()-switchesBefore
	if switches < 2 || syncs != switches {
		t.Errorf("%d WAL syncs for NoSync writes over %d memtable switches; want one a switch (at least 2)", syncs, switches)
	}

	g.arm(t) // the next flushes are held: the retired WALs stay needed
	fillTwoMemtables(t, db, n, n)
	flushTables(t, db)
	if err := db.Put([]byte("synced"), []byte("yes"), Sync); err != nil {
		t.Fatal(err)
	}
	crashed := g.MemFS.CrashClone() // a power loss right after the Sync write
	db2 := reviewMustOpen(t, crashed, opts)
	checkNewValues(t, db2, 0, 2*n, "after a power loss following a Sync write")
	if v, err := db2.Get([]byte("synced")); err != nil || string(v) != "yes" {
		t.Fatalf("the Sync write after a power loss: %q, %v", v, err)
	}
}

// With MaxImmutableMemtables 1, the switch of a second memtable while
// the first waits for its flush (what a write that fills it, or Flush,
// does: here the latter, whose path is the same) waits too, counted as a
// memtable stall, and goes on once that flush is done: the memtables hold
// at most two write buffers.
func TestOneImmutableMemtable(t *testing.T) {
	g := newGateFS()
	db := reviewMustOpen(t, g, &Options{disableAutoCompactions: true, MaxImmutableMemtables: 1})
	if def, _ := (&Options{}).withDefaults(); def.MaxImmutableMemtables != DefaultMaxImmutableMemtables || DefaultMaxImmutableMemtables != 2 {
		t.Fatalf("MaxImmutableMemtables defaults to %d, want 2", def.MaxImmutableMemtables)
	}
	g.arm(t)
	const n = 100
	for i := range n {
		if err := db.Put(bgKey(i), []byte("old"), NoSync); err != nil {
			t.Fatal(err)
		}
	}
	first := forceSwitch(t, db)
	done := make(chan error, 1)
	go func() {
		for i := range n {
			if err := db.Put(bgKey(i), []byte("new"), NoSync); err != nil {
				done <- err
				return
			}
		}
		done <- db.commit.enqueue(db, nil, false, true) // the second switch
	}()
	select {
	case err := <-done:
		t.Fatalf("the second memtable became immutable while the first waited for its flush (%v)", err)
	case <-time.After(100 * time.Millisecond):
	}
	if m := db.Metrics(); m.ImmutableMemtables != 1 {
		t.Fatalf("while the first flush is held: %d immutable memtables, want 1", m.ImmutableMemtables)
	}
	g.release(first, nil)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the write still waits after the first flush was done")
	}
	if m := db.Metrics(); m.Stalls.MemtableFull.Count != 0 {
		// The switch that waited was a Flush's, not a write's.
		t.Fatalf("%d memtable stalls counted, want none: no write waited", m.Stalls.MemtableFull.Count)
	}
	checkValues := func(where string) {
		t.Helper()
		for i := range n {
			if v, err := db.Get(bgKey(i)); err != nil || string(v) != "new" {
				t.Fatalf("%s: key %d = %q, %v; want the newer value", where, i, v, err)
			}
		}
	}
	checkValues("after the stall")
	db.mu.Lock()
	second := db.mu.imm[0].tableNum
	db.mu.Unlock()
	g.release(second, nil)
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	checkValues("after both flushes")
}

// With MaxImmutableMemtables 1, a write that fills the memtable while the
// one before it waits for its flush waits too, and counts as one memtable
// stall; the Flush that follows it waits uncounted.
func TestWriteStallCountedFlushNot(t *testing.T) {
	g := newGateFS()
	db := reviewMustOpen(t, g, &Options{WriteBufferSize: 64 << 10, disableAutoCompactions: true, MaxImmutableMemtables: 1})
	g.arm(t)
	val := bytes.Repeat([]byte("w"), 1000)
	if err := db.Put(bgKey(0), val, NoSync); err != nil {
		t.Fatal(err)
	}
	first := forceSwitch(t, db) // its flush is held
	done := make(chan error, 1)
	go func() {
		for i := 1; i < 70; i++ { // 70 KB: fills the 64 KiB memtable once
			if err := db.Put(bgKey(i), val, NoSync); err != nil {
				done <- err
				return
			}
		}
		done <- db.Flush()
	}()
	select {
	case err := <-done:
		t.Fatalf("the writes went on while the first flush was held (%v)", err)
	case <-time.After(100 * time.Millisecond):
	}
	g.release(first, nil)
	for {
		db.mu.Lock()
		var next uint64
		if len(db.mu.imm) > 0 && db.mu.imm[0].tableNum != first {
			next = db.mu.imm[0].tableNum
		}
		db.mu.Unlock()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			if m := db.Metrics(); m.Stalls.MemtableFull.Count != 1 || m.Stalls.MemtableFull.Duration <= 0 {
				t.Fatalf("memtable stalls: %d in %v, want the one write's", m.Stalls.MemtableFull.Count, m.Stalls.MemtableFull.Duration)
			}
			return
		case <-time.After(10 * time.Millisecond):
		}
		if next != 0 {
			g.release(next, nil)
		}
	}
}
