package shale

import (
	"bytes"
	"encoding/binary"
	stderrors "errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/shale-db/shale/compaction"
	"github.com/shale-db/shale/internal/filename"
	"github.com/shale-db/shale/internal/vfs"
)

// slowTableReads returns a MemFS, and a file system over it on which
// every read of a table file takes d: compactions (which read tables) slow
// down, flushes (which only write) do not. The sleep holds no lock.
func slowTableReads(d time.Duration) (vfs.FS, *vfs.MemFS) {
	mem := vfs.NewMem()
	return &slowFS{MemFS: mem, d: d}, mem
}

type slowFS struct {
	*vfs.MemFS
	d time.Duration
}

func (s *slowFS) Open(name string) (vfs.File, error) {
	f, err := s.MemFS.Open(name)
	if err != nil || !isType(filepath.Base(name), filename.Table) {
		return f, err
	}
	return &slowFile{File: f, d: s.d}, nil
}

type slowFile struct {
	vfs.File
	d time.Duration
}

func (f *slowFile) ReadAt(p []byte, off int64) (int, error) {
	time.Sleep(f.d)
	return f.File.ReadAt(p, off)
}

// manualRunning reports whether a manual compaction is under way.
func manualRunning(db *DB) bool {
	db.mu.Lock()
	defer db.mu.Unlock()
	return len(db.mu.compactions) > 0 && db.mu.compactions[0].manual != nil
}

func bgKey(i int) []byte { return []byte(fmt.Sprintf("key%07d", i)) }

// waitIdle waits until no flush or compaction runs or is due.
func waitIdle(t *testing.T, db *DB) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		db.mu.Lock()
		idle := len(db.mu.imm) == 0 && len(db.mu.compactions) == 0 && db.mu.flushes == 0
		if idle && db.mu.bgErr == nil {
			idle = db.pickLocked() == nil
		}
		db.mu.Unlock()
		if idle {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("background work still running after a minute:\n%s", db.Metrics())
}

// TestFlushRunsBesideCompaction: while a slow compaction runs, memtables
// that fill are flushed at once, not after it.
func TestFlushRunsBesideCompaction(t *testing.T) {
	fsys, _ := slowTableReads(2 * time.Millisecond)
	db := reviewMustOpen(t, fsys, &Options{WriteBufferSize: 32 << 10, Compression: NoCompression})
	val := bytes.Repeat([]byte("v"), 100)
	for i := range 20000 { // ~2 MB: a compaction of a few hundred block reads
		if err := db.Put(bgKey(i), val, NoSync); err != nil {
			t.Fatal(err)
		}
	}
	waitIdle(t, db) // the manual compaction starts at once, alone
	compactDone := make(chan error, 1)
	go func() { compactDone <- db.Compact(nil, nil) }()
	for !manualRunning(db) {
		time.Sleep(time.Millisecond)
	}
	before := db.Metrics().Flushes
	start := time.Now()
	for i := range 1500 { // ~5 memtables: level 0 stays below the slowdown
		if err := db.Put(bgKey(100000+i), val, NoSync); err != nil {
			t.Fatal(err)
		}
	}
	m := db.Metrics()
	writing := time.Since(start)
	if err := <-compactDone; err != nil {
		t.Fatal(err)
	}
	if m.Compactions.Manual != 0 {
		t.Fatalf("the compaction ended within the %v of writes; the test needs it longer\n%s", writing, m)
	}
	if m.Flushes-before < 3 {
		t.Fatalf("%d flushes while a compaction ran and ~5 memtables filled; want them flushed beside it\n%s", m.Flushes-before, m)
	}
	if writing > time.Second {
		t.Fatalf("writing 5 memtables took %v while a compaction ran; want no wait\n%s", writing, m)
	}
}

// TestCloseInterruptsCompaction: Close stops a long compaction promptly,
// Compact returns ErrClosed, its unfinished outputs are deleted, and the
// database reopens with every key.
func TestCloseInterruptsCompaction(t *testing.T) {
	fsys, mem := slowTableReads(5 * time.Millisecond)
	opts := &Options{WriteBufferSize: 64 << 10, Compression: NoCompression, TargetFileSize: 64 << 10}
	db, err := reviewOpen(t, fsys, opts)
	if err != nil {
		t.Fatal(err)
	}
	val := bytes.Repeat([]byte("w"), 100)
	for i := range 30000 {
		if err := db.Put(bgKey(i), val, NoSync); err != nil {
			t.Fatal(err)
		}
	}
	compactDone := make(chan error, 1)
	go func() { compactDone <- db.Compact(nil, nil) }()
	// Wait until the compaction has written some output.
	for {
		db.mu.Lock()
		outputs := len(db.mu.pendingOutputs)
		db.mu.Unlock()
		if manualRunning(db) && outputs > 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	start := time.Now()
	if err := db.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("Close took %v with a compaction running; want it interrupted", d)
	}
	if err := <-compactDone; !stderrors.Is(err, ErrClosed) {
		t.Fatalf("interrupted Compact = %v, want ErrClosed", err)
	}
	db2 := reviewMustOpen(t, mem, opts)
	st, err := db2.Stats()
	if err != nil {
		t.Fatal(err)
	}
	live := map[uint64]bool{}
	for _, tb := range st.Tables {
		live[tb.FileNum] = true
	}
	names, _ := mem.List(reviewDir)
	for _, n := range names {
		if typ, num, ok := filename.Parse(n); ok && typ == filename.Table && !live[num] {
			t.Errorf("table %s is on disk but in no version", n)
		}
	}
	for i := 0; i < 30000; i += 97 {
		if v, err := db2.Get(bgKey(i)); err != nil || !bytes.Equal(v, val) {
			t.Fatalf("after reopening: Get(%s) = %q, %v", bgKey(i), v, err)
		}
	}
}

// TestCloseFinishesAutomaticCompaction: Close lets an automatic
// compaction under way finish and record its edit, rather than throwing
// the merge away for the next Open to start over. The compaction is held
// in its first table read until Close has begun.
func TestCloseFinishesAutomaticCompaction(t *testing.T) {
	gate := &readGateFS{MemFS: vfs.NewMem()}
	opts := &Options{WriteBufferSize: 256 << 10, Compression: NoCompression, TargetFileSize: 64 << 10, disableAutoCompactions: true}
	db, err := reviewOpen(t, gate, opts)
	if err != nil {
		t.Fatal(err)
	}
	// Keys in a scattered order, so every level-0 table spans the key
	// space and the compaction takes them all: more entries than
	// compaction.Run reads between polls of Stop.
	const n = 12000
	val := bytes.Repeat([]byte("c"), 100)
	for i := range n {
		if err := db.Put(bgKey(i*7919%n), val, NoSync); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	release := gate.arm()
	t.Cleanup(release) // if the test stops early
	db.mu.Lock()
	db.opts.disableAutoCompactions = false
	db.maybeScheduleLocked()
	if len(db.mu.compactions) != 1 || db.mu.compactions[0].c.Kind == compaction.KindMove {
		db.mu.Unlock()
		t.Fatalf("want one merging compaction started, have %d", len(db.mu.compactions))
	}
	inputs := db.mu.compactions[0].inputs
	db.mu.Unlock()
	gate.waitBlocked(t)

	closed := make(chan error, 1)
	go func() { closed <- db.Close() }()
	for !db.closing.Load() {
		time.Sleep(time.Millisecond)
	}
	release()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not return")
	}

	db2 := reviewMustOpen(t, gate.MemFS, &Options{disableAutoCompactions: true})
	st, err := db2.Stats()
	if err != nil {
		t.Fatal(err)
	}
	live := map[uint64]int{}
	for _, tb := range st.Tables {
		live[tb.FileNum] = tb.Level
	}
	for _, in := range inputs {
		if level, ok := live[in.num]; ok {
			t.Errorf("input table %06d is still in level %d: Close interrupted the compaction", in.num, level)
		}
	}
	for i := range n {
		if v, err := db2.Get(bgKey(i)); err != nil || !bytes.Equal(v, val) {
			t.Fatalf("after reopening: Get(%s) = %q, %v", bgKey(i), v, err)
		}
	}
}

// readGateFS is a MemFS whose table reads, once armed, wait until released.
type readGateFS struct {
	*vfs.MemFS
	mu      sync.Mutex
	gate    chan struct{} // nil when not armed
	blocked int           // reads waiting at the gate
}

func (g *readGateFS) arm() (release func()) {
	ch := make(chan struct{})
	g.mu.Lock()
	g.gate = ch
	g.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			g.gate = nil
			g.mu.Unlock()
			close(ch)
		})
	}
}

// waitBlocked waits until a read is held at the gate.
func (g *readGateFS) waitBlocked(t *testing.T) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		g.mu.Lock()
		b := g.blocked
		g.mu.Unlock()
		if b > 0 {
			return
		}
	}
	t.Fatal("no table read reached the gate")
}

func (g *readGateFS) Open(name string) (vfs.File, error) {
	f, err := g.MemFS.Open(name)
	if err != nil || !isType(filepath.Base(name), filename.Table) {
		return f, err
	}
	return &readGateFile{File: f, g: g}, nil
}

type readGateFile struct {
	vfs.File
	g *readGateFS
}

func (f *readGateFile) ReadAt(p []byte, off int64) (int, error) {
	f.g.mu.Lock()
	ch := f.g.gate
	if ch != nil {
		f.g.blocked++
	}
	f.g.mu.Unlock()
	if ch != nil {
		<-ch
	}
	return f.File.ReadAt(p, off)
}

// TestWriteStallsAreCounted: with compactions slowed down, level 0 fills
// and writes are held; Metrics counts the waits, every write completes
// and reads back, and level 0 drains once compaction catches up.
func TestWriteStallsAreCounted(t *testing.T) {
	fsys, _ := slowTableReads(3 * time.Millisecond)
	db := reviewMustOpen(t, fsys, &Options{WriteBufferSize: 8 << 10, Compression: NoCompression})
	val := bytes.Repeat([]byte("s"), 100)
	const n = 4000 // ~50 memtables
	for i := range n {
		if err := db.Put(bgKey(i*7919%n), val, NoSync); err != nil {
			t.Fatal(err)
		}
	}
	m := db.Metrics()
	if m.Stalls.L0Full.Count == 0 || m.Stalls.L0Full.Duration <= 0 {
		t.Errorf("no write waited for level 0\n%s", m)
	}
	waitIdle(t, db)
	if l0 := db.Metrics().Levels[0].Tables; l0 >= 4 {
		t.Errorf("level 0 holds %d tables once compaction caught up; want fewer than 4", l0)
	}
	for i := range n {
		if v, err := db.Get(bgKey(i)); err != nil || !bytes.Equal(v, val) {
			t.Fatalf("Get(%s) = %q, %v", bgKey(i), v, err)
		}
	}
}

// TestStallCountedOncePerWrite: a write that waits counts as one stall of
// its kind, however many flushes and compactions end (each waking it)
// before it may go on; the duration is all of its wait. A single writer's
// Put makes the counts move by at most one a kind.
func TestStallCountedOncePerWrite(t *testing.T) {
	fsys, _ := slowTableReads(3 * time.Millisecond)
	db := reviewMustOpen(t, fsys, &Options{WriteBufferSize: 8 << 10, Compression: NoCompression, MaxConcurrentCompactions: 2})
	val := bytes.Repeat([]byte("s"), 100)
	const n = 4000
	var worst [numStallKinds]int64
	for i := range n {
		before := db.Metrics().Stalls
		if err := db.Put(bgKey(i*7919%n), val, NoSync); err != nil {
			t.Fatal(err)
		}
		after := db.Metrics().Stalls
		worst[stallMemtable] = max(worst[stallMemtable], after.MemtableFull.Count-before.MemtableFull.Count)
		worst[stallL0] = max(worst[stallL0], after.L0Full.Count-before.L0Full.Count)
	}
	m := db.Metrics()
	if m.Stalls.L0Full.Count == 0 {
		t.Fatalf("no write waited for level 0; the test needs some\n%s", m)
	}
	if worst[stallMemtable] > 1 || worst[stallL0] > 1 {
		t.Errorf("one Put counted as %d memtable-full and %d level-0-full stalls; want at most 1 each\n%s",
			worst[stallMemtable], worst[stallL0], m)
	}
}

// TestSnapshotKeepsVersionsThenReleasesThem: compactions keep what an open
// snapshot sees; once it is closed, they reclaim the space.
func TestSnapshotKeepsVersionsThenReleasesThem(t *testing.T) {
	db := reviewMustOpen(t, vfs.NewMem(), &Options{WriteBufferSize: 16 << 10, TargetFileSize: 16 << 10})
	const n = 2000
	for i := range n {
		if err := db.Put(bgKey(i), []byte(fmt.Sprintf("old%d-%s", i, bytes.Repeat([]byte("o"), 80))), NoSync); err != nil {
			t.Fatal(err)
		}
	}
	snap := db.NewSnapshot()
	for round := range 3 {
		for i := range n {
			if err := db.Put(bgKey(i), []byte(fmt.Sprintf("new%d.%d-%s", round, i, bytes.Repeat([]byte("n"), 80))), NoSync); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, db)
	held := tableBytes(db)
	for i := range n {
		v, err := snap.Get(bgKey(i))
		if err != nil || !bytes.HasPrefix(v, []byte(fmt.Sprintf("old%d-", i))) {
			t.Fatalf("snapshot Get(%s) after compactions = %.20q, %v; want the old value", bgKey(i), v, err)
		}
	}
	if err := snap.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	freed := tableBytes(db)
	if freed*3 > held*2 {
		t.Fatalf("tables hold %d bytes with the snapshot open and %d after it closed; want the old versions reclaimed", held, freed)
	}
}

func tableBytes(db *DB) int64 {
	var n int64
	for _, l := range db.Metrics().Levels {
		n += l.Bytes
	}
	return n
}

// TestTombstonesAreCompactedAway: a range deleted from the front of a
// tree with several levels (a queue, a truncated Raft log) leaves
// tables dense with deletions within their levels' targets; tombstone
// compactions push them down until they vanish with what they hide.
func TestTombstonesAreCompactedAway(t *testing.T) {
	db := reviewMustOpen(t, vfs.NewMem(), &Options{WriteBufferSize: 32 << 10, TargetFileSize: 32 << 10})
	val := bytes.Repeat([]byte("t"), 200)
	const n = 40000 // ~8 MB: base level well above the last
	for i := range n {
		if err := db.Put(bgKey(i), val, NoSync); err != nil {
			t.Fatal(err)
		}
	}
	waitIdle(t, db)
	full := tableBytes(db)
	for i := range n * 9 / 10 {
		if err := db.Delete(bgKey(i), NoSync); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, db)
	m := db.Metrics()
	if m.Compactions.Tombstone == 0 {
		t.Errorf("no tombstone compaction ran\n%s", m)
	}
	if left := tableBytes(db); left*4 > full {
		t.Errorf("after deleting 90%% of the keys, tables hold %d of %d bytes; want the deleted data reclaimed\n%s", left, full, m)
	}
	if _, err := db.Get(bgKey(0)); !stderrors.Is(err, ErrNotFound) {
		t.Fatalf("deleted key: %v", err)
	}
	if v, err := db.Get(bgKey(n - 1)); err != nil || !bytes.Equal(v, val) {
		t.Fatalf("live key: %q, %v", v, err)
	}
}

// TestSlowdownDebt pins the slowdown's arithmetic: from 8 level-0 tables
// each write owes 2µs, doubling per table, paid in one sleep at 5ms.
func TestSlowdownDebt(t *testing.T) {
	db := &DB{}
	for _, tc := range []struct {
		l0     int32
		writes int // writes until a sleep is due
	}{{8, 2500}, {9, 1250}, {11, 313}} {
		db.l0Tables.Store(tc.l0)
		db.mu.slowdownDebt = 0
		for i := 1; i <= tc.writes; i++ {
			d := db.slowdownLocked()
			if i < tc.writes && d != 0 {
				t.Fatalf("L0=%d: write %d sleeps %v; want the first sleep at write %d", tc.l0, i, d, tc.writes)
			}
			if i == tc.writes && d < slowdownQuantum {
				t.Fatalf("L0=%d: write %d sleeps %v; want at least %v", tc.l0, i, d, slowdownQuantum)
			}
		}
	}
	db.l0Tables.Store(9)
	db.slowdownLocked()
	db.l0Tables.Store(7)
	if d := db.slowdownLocked(); d != 0 || db.mu.slowdownDebt != 0 {
		t.Fatalf("below 8 tables: sleep %v, debt %v; want neither", d, db.mu.slowdownDebt)
	}
}

// slowSyncs is a MemFS on which syncing a file of type typ takes d, and
// syncing the directory too if dirs is set. With WALs and the directory:
// what a memory switch would cost the committing writer if it synced the
// retired WAL and the new one's directory entry itself. With tables: a
// flush or compaction stays under way for at least d.
type slowSyncs struct {
	*vfs.MemFS
	d    time.Duration
	typ  filename.Type
	dirs bool
}

func (s *slowSyncs) Create(name string) (vfs.File, error) {
	f, err := s.MemFS.Create(name)
	if err != nil || !isType(filepath.Base(name), s.typ) {
		return f, err
	}
	return &slowSyncFile{File: f, d: s.d}, nil
}

func (s *slowSyncs) OpenDir(name string) (vfs.File, error) {
	f, err := s.MemFS.OpenDir(name)
	if err != nil || !s.dirs {
		return f, err
	}
	return &slowSyncFile{File: f, d: s.d}, nil
}

type slowSyncFile struct {
	vfs.File
	d time.Duration
}

func (f *slowSyncFile) Sync() error {
	time.Sleep(f.d)
	return f.File.Sync()
}

// TestMemtableSwitchSyncsInBackground: a NoSync write that switches the
// memtable does not wait for the directory's fsync (nor for the tables'):
// a Sync write right after it does, and everything survives a power loss.
// (It does wait for the retired WAL's fdatasync, which must precede any
// write to the new WAL: see TestSwitchSyncsRetiredLog.)
func TestMemtableSwitchSyncsInBackground(t *testing.T) {
	mem := vfs.NewMem()
	fsys := &slowSyncs{MemFS: mem, d: 100 * time.Millisecond, typ: filename.Table, dirs: true}
	db := reviewMustOpen(t, fsys, &Options{WriteBufferSize: 16 << 10, MaxImmutableMemtables: 2})
	val := bytes.Repeat([]byte("m"), 100)
	var slowest time.Duration
	for i := range 1000 { // ~8 memtable switches
		start := time.Now()
		if err := db.Put(bgKey(i), val, NoSync); err != nil {
			t.Fatal(err)
		}
		slowest = max(slowest, time.Since(start))
		if i%100 == 0 {
			// No memtable waits its flush: only the switch itself is
			// timed. A 16 KiB memtable takes about 86 of these puts, so
			// two switches may come between these waits: the second
			// must not wait for the first one's flush (hence
			// MaxImmutableMemtables 2).
			waitIdle(t, db)
		}
	}
	if slowest >= 50*time.Millisecond {
		t.Errorf("the slowest NoSync put took %v with 100 ms table and directory syncs; want them off the write path", slowest)
	}
	if m := db.Metrics(); m.Flushes == 0 {
		t.Fatalf("no memtable switch happened\n%s", m)
	}
	if err := db.Put(bgKey(1000), val, Sync); err != nil {
		t.Fatal(err)
	}
	crashed := mem.CrashClone() // a power loss right after the Sync write
	db2 := reviewMustOpen(t, crashed, nil)
	for i := range 1001 {
		if v, err := db2.Get(bgKey(i)); err != nil || !bytes.Equal(v, val) {
			t.Fatalf("after a power loss following a Sync write: Get(%s) = %q, %v", bgKey(i), v, err)
		}
	}
}

// TestBackgroundErrorFailsWaitingCompact: a Compact waiting for its turn
// returns the background error that stops the database, rather than wait
// for a turn that never comes.
func TestBackgroundErrorFailsWaitingCompact(t *testing.T) {
	db := reviewMustOpen(t, vfs.NewMem(), nil)
	if err := db.Put([]byte("k"), []byte("v"), NoSync); err != nil {
		t.Fatal(err)
	}
	db.mu.Lock()
	busy := &compactionJob{} // a compaction under way: Compact must wait
	db.mu.compactions = append(db.mu.compactions, busy)
	db.mu.Unlock()
	done := make(chan error, 1)
	go func() { done <- db.Compact(nil, nil) }()
	for {
		db.mu.Lock()
		queued := len(db.mu.manual)
		db.mu.Unlock()
		if queued == 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	failure := stderrors.New("disk on fire")
	db.setBackgroundError(failure)
	select {
	case err := <-done:
		if !stderrors.Is(err, failure) {
			t.Fatalf("Compact = %v, want the background error", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Compact still waits after a background error")
	}
	db.mu.Lock()
	db.mu.compactions = nil
	db.mu.Unlock()
}

// TestObsoleteTablesGoWhenTheLastReaderCloses: tables a compaction
// replaced while an iterator read them are deleted when it closes, not at
// some later flush.
func TestObsoleteTablesGoWhenTheLastReaderCloses(t *testing.T) {
	mem := vfs.NewMem()
	db := reviewMustOpen(t, mem, nil)
	for round := range 3 {
		for i := range 100 {
			if err := db.Put(bgKey(i), []byte(fmt.Sprint("v", round)), NoSync); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	it := db.NewIterator(nil)
	if !it.First() {
		t.Fatal(it.Err())
	}
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	tables := func() (onDisk, live int) {
		names, _ := mem.List(reviewDir)
		for _, n := range names {
			if isType(n, filename.Table) {
				onDisk++
			}
		}
		st, _ := db.Stats()
		return onDisk, len(st.Tables)
	}
	if onDisk, live := tables(); onDisk == live {
		t.Fatalf("%d tables on disk, %d live, with an iterator on the old ones: want them kept", onDisk, live)
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		onDisk, live := tables()
		if onDisk == live {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d tables on disk, %d live, after the last iterator on the old ones closed", onDisk, live)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestTruncatedLogIsReclaimedWhenIdle is a Raft log's life: entries
// appended, most deleted from the front, then nothing. The deletions are
// flushed once writes stop and compacted down onto what they delete, so
// the space comes back without a manual Compact.
func TestTruncatedLogIsReclaimedWhenIdle(t *testing.T) {
	db := reviewMustOpen(t, vfs.NewMem(), &Options{WriteBufferSize: 256 << 10})
	val := make([]byte, 1000) // random: incompressible, as log entries often are
	r := rand.New(rand.NewPCG(14, 14))
	const n = 20000 // ~20 MB
	for i := range n {
		for j := 0; j < len(val); j += 8 {
			binary.LittleEndian.PutUint64(val[j:], r.Uint64())
		}
		if err := db.Put(bgKey(i), val, NoSync); err != nil {
			t.Fatal(err)
		}
	}
	waitIdle(t, db)
	var b Batch
	for i := range n - 500 {
		b.Delete(bgKey(i))
		if b.Len() == 1000 {
			if err := db.Write(&b, NoSync); err != nil {
				t.Fatal(err)
			}
			b.Reset()
		}
	}
	if err := db.Write(&b, NoSync); err != nil {
		t.Fatal(err)
	}
	live := int64(500 * (len(bgKey(0)) + len(val)))
	deadline := time.Now().Add(30 * time.Second)
	for {
		m := db.Metrics()
		onDisk := tableBytes(db) + m.MemtableBytes
		if onDisk <= 2*live {
			t.Logf("live %d bytes; tables and memtable %d bytes\n%s", live, onDisk, m)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("30 s after the writes stopped, tables and memtable hold %d bytes for %d live\n%s", onDisk, live, m)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := db.Get(bgKey(0)); !stderrors.Is(err, ErrNotFound) {
		t.Fatalf("deleted key: %v", err)
	}
	if v, err := db.Get(bgKey(n - 1)); err != nil || !bytes.Equal(v, val) {
		t.Fatalf("live key: %.10q, %v", v, err)
	}
}

// TestLevelPressure pins the deeper levels' share of the slowdown: none
// below a score of 1.5 on the levels from the base to the last but one,
// then 2 µs a write, doubling each half point.
func TestLevelPressure(t *testing.T) {
	for _, tc := range []struct {
		score float64
		want  int32
	}{{1.4, 0}, {1.5, 1}, {1.99, 1}, {2.0, 2}, {2.6, 3}, {100, 11}} {
		s := compaction.Shape{BaseLevel: 5, Scores: []float64{3, 0, 0, 0, 0, tc.score, 0}}
		if got := levelPressure(s); got != tc.want {
			t.Errorf("score %.2f: pressure %d, want %d", tc.score, got, tc.want)
		}
	}
	// Level 0's score, levels above the base and the last level do not count.
	s := compaction.Shape{BaseLevel: 5, Scores: []float64{9, 0, 0, 1e6, 0, 1, 50}}
	if got := levelPressure(s); got != 0 {
		t.Errorf("pressure %d from levels that do not count, want 0", got)
	}
	db := &DB{}
	db.levelPressure.Store(2) // 4 µs a write: the first sleep at write 1,250
	for i := 1; i <= 1250; i++ {
		if d := db.slowdownLocked(); (d != 0) != (i == 1250) {
			t.Fatalf("write %d sleeps %v; want the first sleep at write 1250", i, d)
		}
	}
}

// Once writes stop for idleDelay, level 0 compacts even below its trigger,
// so that a database left to be read does not look at the same few
// level-0 tables at every read for good; so does a database reopened with
// level-0 tables (one of them written by the Open, from its WAL).
func TestIdleCompactsLevel0(t *testing.T) {
	dir := t.TempDir()
	opts := &Options{WriteBufferSize: 64 << 10}
	db, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	val := bytes.Repeat([]byte{'v'}, 200)
	put := func(db *DB, from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			if err := db.Put([]byte(fmt.Sprintf("k%05d", i)), val, NoSync); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitL0Empty := func(db *DB, when string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for db.l0Tables.Load() != 0 {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d level-0 tables 10 s after the last write", when, db.l0Tables.Load())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	put(db, 0, 300) // one flush: a level-0 table, below the trigger of four
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if n := db.l0Tables.Load(); n < 1 || n >= 4 {
		t.Fatalf("%d level-0 tables after the flush; the test wants one to three", n)
	}
	waitL0Empty(db, "after the writes")
	put(db, 300, 400) // left in the WAL: the next Open writes it to level 0
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if db, err = Open(dir, opts); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if n := db.l0Tables.Load(); n != 1 {
		t.Fatalf("%d level-0 tables after the Open; want the one it wrote", n)
	}
	waitL0Empty(db, "after the Open")
	for i := 0; i < 400; i += 37 {
		if v, err := db.Get([]byte(fmt.Sprintf("k%05d", i))); err != nil || !bytes.Equal(v, val) {
			t.Fatalf("k%05d: %.10q, %v", i, v, err)
		}
	}
}

// carryKeys is how many keys each round of layCarryRounds writes.
const carryKeys = 300

// carryValue is key i's value in round r of layCarryRounds.
func carryValue(r, i int) []byte {
	return []byte(fmt.Sprintf("%d-%d-%s", r, i, bytes.Repeat([]byte{'v'}, 150)))
}

// layCarryRounds writes flushed+1 rounds of carryKeys keys, flushing each
// round but the last to a level-0 table (db must not compact): the last
// round, about 50 KB, stays in the WAL for the next Open to carry.
func layCarryRounds(t *testing.T, db *DB, flushed int) {
	t.Helper()
	for r := range flushed + 1 {
		for i := range carryKeys {
			if err := db.Put(bgKey(i), carryValue(r, i), NoSync); err != nil {
				t.Fatal(err)
			}
		}
		if r < flushed {
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestOpenCompactionTakesCarriedTable: a database reopened with level 0 at
// its trigger and a WAL to carry writes the carried table before it
// compacts, so that the one compaction of level 0 takes that table along.
// Started beside the flush, the compaction left the carried table alone in
// level 0, with older versions of its keys below it, until the next one.
func TestOpenCompactionTakesCarriedTable(t *testing.T) {
	dir := t.TempDir()
	const wbs = 256 << 10 // carries of 16 KiB and up are flushed at Open
	db, err := Open(dir, &Options{WriteBufferSize: wbs, disableAutoCompactions: true})
	if err != nil {
		t.Fatal(err)
	}
	layCarryRounds(t, db, 4) // four level-0 tables, the trigger
	if n := db.l0Tables.Load(); n != 4 {
		t.Fatalf("%d level-0 tables before the reopen, want the trigger's 4", n)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = Open(dir, &Options{WriteBufferSize: wbs})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if r := db.Recovery(); len(r.Logs) != 1 || r.Logs[0].Records != carryKeys {
		t.Fatalf("the reopen replayed %+v, want %d records", r.Logs, carryKeys)
	}
	waitIdle(t, db)
	m := db.Metrics()
	if m.Flushes != 1 || m.Compactions.Default != 1 || m.Levels[0].Tables != 0 {
		t.Fatalf("after the reopen: %d flushes, %d compactions, %d level-0 tables; want 1, 1 and 0:\n%s",
			m.Flushes, m.Compactions.Default, m.Levels[0].Tables, m)
	}
	if base := m.Levels[m.BaseLevel]; base.Compactions != 1 || base.Tables == 0 {
		t.Fatalf("base level L%d: %+v", m.BaseLevel, base)
	}
	for i := range carryKeys {
		if v, err := db.Get(bgKey(i)); err != nil || !bytes.Equal(v, carryValue(4, i)) {
			t.Fatalf("%s: %.12q, %v", bgKey(i), v, err)
		}
	}
}

// TestCloseRunsCompactionHeldForCarry: Close right after an Open whose
// carried table brings level 0 to its trigger waits for that table and
// then for the compaction it made due, which Open held back for it. It
// left level 0 over its trigger before.
func TestCloseRunsCompactionHeldForCarry(t *testing.T) {
	mem := vfs.NewMem()
	const wbs = 256 << 10 // carries of 16 KiB and up are flushed at Open
	db := reviewMustOpen(t, mem, &Options{WriteBufferSize: wbs, disableAutoCompactions: true})
	layCarryRounds(t, db, 3) // three level-0 tables, one short of the trigger
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db = reviewMustOpen(t, &slowSyncs{MemFS: mem, d: 100 * time.Millisecond, typ: filename.Table}, &Options{WriteBufferSize: wbs})
	if n := db.l0Tables.Load(); n != 3 {
		t.Fatalf("%d level-0 tables as Open returns, want 3 (the carried table's flush takes 100 ms)", n)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db = reviewMustOpen(t, mem, &Options{WriteBufferSize: wbs, disableAutoCompactions: true})
	if n := db.l0Tables.Load(); n != 0 {
		t.Fatalf("%d level-0 tables after the Close, want none:\n%s", n, db.Metrics())
	}
	for i := range carryKeys {
		if v, err := db.Get(bgKey(i)); err != nil || !bytes.Equal(v, carryValue(3, i)) {
			t.Fatalf("%s: %.12q, %v", bgKey(i), v, err)
		}
	}
}
