package shale

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shale-db/shale/internal/vfs"
)

// eventLog records what a listener is told, in order.
type eventLog struct {
	mu     sync.Mutex
	events []any
	closed atomic.Bool // set once Close has returned
	late   atomic.Int32
}

func (l *eventLog) add(ev any) {
	if l.closed.Load() {
		l.late.Add(1)
	}
	l.mu.Lock()
	l.events = append(l.events, ev)
	l.mu.Unlock()
}

func (l *eventLog) all() []any {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]any(nil), l.events...)
}

func (l *eventLog) listener() *EventListener {
	return &EventListener{
		BackgroundError: func(err error) { l.add(err) },
		CompactionBegin: func(i CompactionInfo) { l.add(i) },
		CompactionEnd:   func(i CompactionInfo) { l.add(i) },
		DiskSlow:        func(i DiskSlowInfo) { l.add(i) },
		FlushBegin:      func(i FlushInfo) { l.add(i) },
		FlushEnd:        func(i FlushInfo) { l.add(i) },
		TableCreated:    func(i TableCreateInfo) { l.add(i) },
		TableDeleted:    func(i TableDeleteInfo) { l.add(i) },
		WALCreated:      func(i WALCreateInfo) { l.add(i) },
		WALDeleted:      func(i WALDeleteInfo) { l.add(i) },
		WriteStallBegin: func(i WriteStallBeginInfo) { l.add(i) },
		WriteStallEnd:   func(i WriteStallEndInfo) { l.add(i) },
	}
}

// checkPairs checks that every Begin has exactly one End for the same job
// (or, for stalls, the next stall event), after it, and returns the ends.
func checkPairs(t *testing.T, evs []any) (flushes []FlushInfo, compactions []CompactionInfo, stalls []WriteStallEndInfo) {
	t.Helper()
	openFlush := map[int]bool{}
	openComp := map[int]bool{}
	stallOpen := false
	for i, ev := range evs {
		switch e := ev.(type) {
		case FlushInfo:
			if !e.Done {
				if openFlush[e.JobID] {
					t.Fatalf("event %d: second FlushBegin for job %d", i, e.JobID)
				}
				openFlush[e.JobID] = true
				continue
			}
			if !openFlush[e.JobID] {
				t.Fatalf("event %d: FlushEnd for job %d without its Begin", i, e.JobID)
			}
			delete(openFlush, e.JobID)
			flushes = append(flushes, e)
		case CompactionInfo:
			if !e.Done {
				if openComp[e.JobID] {
					t.Fatalf("event %d: second CompactionBegin for job %d", i, e.JobID)
				}
				openComp[e.JobID] = true
				continue
			}
			if !openComp[e.JobID] {
				t.Fatalf("event %d: CompactionEnd for job %d without its Begin", i, e.JobID)
			}
			delete(openComp, e.JobID)
			compactions = append(compactions, e)
		case WriteStallBeginInfo:
			// Writes stall one at a time: only the commit leader waits.
			if stallOpen {
				t.Fatalf("event %d: WriteStallBegin inside a stall", i)
			}
			stallOpen = true
		case WriteStallEndInfo:
			if !stallOpen {
				t.Fatalf("event %d: WriteStallEnd without a Begin", i)
			}
			stallOpen = false
			stalls = append(stalls, e)
		}
	}
	if len(openFlush) > 0 || len(openComp) > 0 || stallOpen {
		t.Fatalf("Begins without their End: flushes %v, compactions %v, stall %v", openFlush, openComp, stallOpen)
	}
	return flushes, compactions, stalls
}

// TestEventListenerJobs: flushes and compactions are announced in
// Begin/End pairs that describe them; every table and WAL the DB creates
// or deletes is announced with the job that did it; nothing is delivered
// after Close returns.
func TestEventListenerJobs(t *testing.T) {
	var log eventLog
	fs := vfs.NewMem()
	opts := &Options{FS: fs, WriteBufferSize: 64 << 10, TargetFileSize: 32 << 10, EventListener: log.listener()}
	db, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	val := strings.Repeat("v", 100)
	for i := range 20000 {
		if err := db.Put([]byte(fmt.Sprintf("k%06d", i*7919%20000)), []byte(val), NoSync); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	m := db.Metrics()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	log.closed.Store(true)
	evs := log.all()
	flushes, compactions, _ := checkPairs(t, evs)

	if int64(len(flushes)) < m.Flushes || len(flushes) == 0 {
		t.Errorf("%d FlushEnds, Metrics counts %d flushes", len(flushes), m.Flushes)
	}
	if len(compactions) == 0 {
		t.Fatal("no compaction announced")
	}
	created := map[uint64]TableCreateInfo{}
	deleted := map[uint64]bool{}
	walsCreated, walsDeleted := map[uint64]bool{}, map[uint64]bool{}
	for _, ev := range evs {
		switch e := ev.(type) {
		case TableCreateInfo:
			created[e.FileNum] = e
		case TableDeleteInfo:
			if e.Err != nil {
				t.Errorf("table %d: deletion failed: %v", e.FileNum, e.Err)
			}
			if _, ok := created[e.FileNum]; !ok {
				t.Errorf("table %d deleted, never announced as created", e.FileNum)
			}
			deleted[e.FileNum] = true
		case WALCreateInfo:
			walsCreated[e.FileNum] = true
		case WALDeleteInfo:
			if !walsCreated[e.FileNum] {
				t.Errorf("WAL %d deleted, never announced as created", e.FileNum)
			}
			walsDeleted[e.FileNum] = true
		}
	}
	for _, f := range flushes {
		if f.Err != nil || f.Reason != "memtable full" && f.Reason != "forced" || f.Input != 1 || f.InputBytes == 0 || f.Duration <= 0 {
			t.Errorf("flush %+v", f)
		}
		for _, out := range f.Output {
			c, ok := created[out.FileNum]
			if !ok || c.JobID != f.JobID || c.Reason != "flushing" {
				t.Errorf("flush job %d wrote table %d, announced as %+v", f.JobID, out.FileNum, c)
			}
			if out.Size <= 0 || len(out.Smallest) == 0 || string(out.Smallest) > string(out.Largest) {
				t.Errorf("flush output %+v", out)
			}
		}
	}
	rewrote := 0
	for _, c := range compactions {
		if c.Err != nil || c.Duration <= 0 || c.InputBytes == 0 || len(c.Input) == 0 {
			t.Errorf("compaction %+v", c)
		}
		if c.Reason == "move" {
			continue
		}
		rewrote++
		var out uint64
		for _, tb := range c.Output.Tables {
			out += uint64(tb.Size)
			if cr := created[tb.FileNum]; cr.JobID != c.JobID || cr.Reason != "compacting" || tb.Level != c.Output.Level {
				t.Errorf("compaction job %d wrote table %d of level %d, announced as %+v", c.JobID, tb.FileNum, tb.Level, cr)
			}
		}
		if out != c.OutputBytes {
			t.Errorf("compaction job %d: OutputBytes %d, its tables %d", c.JobID, c.OutputBytes, out)
		}
		for _, in := range c.Input {
			for _, tb := range in.Tables {
				if !deleted[tb.FileNum] {
					t.Errorf("compaction job %d read table %d, whose deletion was not announced", c.JobID, tb.FileNum)
				}
			}
		}
	}
	if rewrote == 0 {
		t.Error("no compaction rewrote tables")
	}
	if len(walsCreated) < 2 || len(walsDeleted) == 0 || len(walsDeleted) >= len(walsCreated) {
		t.Errorf("%d WALs created and %d deleted: every one but the last should go", len(walsCreated), len(walsDeleted))
	}
	time.Sleep(20 * time.Millisecond)
	if n := log.late.Load(); n > 0 || len(log.all()) != len(evs) {
		t.Errorf("%d events delivered after Close returned", len(log.all())-len(evs))
	}
}

// TestEventListenerQueued: a callback that blocks holds no write, flush
// or compaction; its events wait in order, none dropped, and Close waits
// for them. A callback may call the DB.
func TestEventListenerQueued(t *testing.T) {
	release := make(chan struct{})
	var flushEnds atomic.Int32
	var metricsSeen atomic.Int64
	var db *DB
	var dbReady sync.WaitGroup
	dbReady.Add(1)
	l := &EventListener{
		FlushBegin: func(FlushInfo) { <-release },
		FlushEnd: func(FlushInfo) {
			flushEnds.Add(1)
			dbReady.Wait()
			metricsSeen.Store(db.Metrics().Flushes) // a call into the DB from a callback
		},
	}
	db, err := Open("/db", &Options{FS: vfs.NewMem(), WriteBufferSize: 32 << 10, EventListener: l})
	if err != nil {
		t.Fatal(err)
	}
	dbReady.Done()
	val := strings.Repeat("v", 200)
	for i := range 5000 { // about 30 flushes, all done while the first callback blocks
		if err := db.Put([]byte(fmt.Sprintf("k%06d", i)), []byte(val), NoSync); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	flushed := db.Metrics().Flushes
	if flushed < 10 {
		t.Fatalf("%d flushes; the test needs more", flushed)
	}
	if n := flushEnds.Load(); n != 0 {
		t.Fatalf("%d FlushEnds delivered while the first FlushBegin blocks", n)
	}
	closed := make(chan error, 1)
	go func() { closed <- db.Close() }()
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while a callback blocks", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if n := int64(flushEnds.Load()); n != flushed {
		t.Errorf("%d FlushEnds delivered by Close, %d flushes", n, flushed)
	}
	if metricsSeen.Load() == 0 {
		t.Error("a callback's call to Metrics saw no flush")
	}
}

// TestEventListenerWriteStall: a write that waits for a flush is a stall
// with its reason, ended when the write goes on; a stall Close ends
// carries the write's error.
func TestEventListenerWriteStall(t *testing.T) {
	var log eventLog
	gate := make(chan struct{})
	var gated atomic.Bool
	gated.Store(true)
	gate2 := make(chan struct{})
	var phase2 atomic.Bool
	fs := &blockFS{FS: vfs.NewMem(), before: func(op, path string) {
		if op == "create" && strings.HasSuffix(path, ".ldb") {
			if gated.Load() {
				<-gate // the flush cannot write its table
			} else if phase2.Load() {
				<-gate2
			}
		}
	}}
	db, err := Open("/db", &Options{FS: fs, WriteBufferSize: 16 << 10, EventListener: log.listener()})
	if err != nil {
		t.Fatal(err)
	}
	val := strings.Repeat("v", 200)
	done := make(chan error, 1)
	go func() {
		for i := range 1000 { // fills a memtable, then the next: a stall
			if err := db.Put([]byte(fmt.Sprintf("k%06d", i)), []byte(val), NoSync); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	waitCond(t, "a WriteStallBegin", func() bool {
		for _, ev := range log.all() {
			if b, ok := ev.(WriteStallBeginInfo); ok && b.Reason == "memtable count limit reached" {
				return true
			}
		}
		return false
	})
	time.Sleep(20 * time.Millisecond)
	gated.Store(false)
	close(gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var first WriteStallEndInfo
	waitCond(t, "the WriteStallEnd", func() bool { // delivered after the fact
		for _, ev := range log.all() {
			if e, ok := ev.(WriteStallEndInfo); ok {
				first = e
				return true
			}
		}
		return false
	})
	if first.Err != nil || first.Duration < 20*time.Millisecond || first.Reason != "memtable count limit reached" {
		t.Fatalf("the first stall ended as %+v", first)
	}

	// A stall that Close ends. Phase one's flushes finish first: one still
	// writing its table when phase two begins would end phase two's first
	// stall before Close could.
	waitCond(t, "phase one's flushes", func() bool { return db.Metrics().ImmutableMemtables == 0 })
	phase2.Store(true)
	before := 0
	for _, ev := range log.all() {
		if _, ok := ev.(WriteStallBeginInfo); ok {
			before++
		}
	}
	go func() {
		for i := range 1000 {
			if err := db.Put([]byte(fmt.Sprintf("j%06d", i)), []byte(val), NoSync); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	waitCond(t, "a second stall", func() bool {
		n := 0
		for _, ev := range log.all() {
			if _, ok := ev.(WriteStallBeginInfo); ok {
				n++
			}
		}
		return n > before
	})
	closed := make(chan error, 1)
	go func() { closed <- db.Close() }()
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Fatalf("stalled write: %v, want ErrClosed", err)
	}
	close(gate2)
	<-closed
	_, _, stalls := checkPairs(t, log.all())
	if last := stalls[len(stalls)-1]; !errors.Is(last.Err, ErrClosed) {
		t.Fatalf("the stall Close ended: %+v", last)
	}
}

// TestEventListenerBackgroundError: a flush that fails ends with its
// error, and the error that stops writes is announced once.
func TestEventListenerBackgroundError(t *testing.T) {
	var log eventLog
	fs := vfs.NewFault(vfs.NewMem(), nil)
	db, err := Open("/db", &Options{FS: fs, WriteBufferSize: 16 << 10, EventListener: log.listener()})
	if err != nil {
		t.Fatal(err)
	}
	fs.SetInjector(vfs.FailWhen(func(c vfs.Call) bool {
		return c.Op == vfs.OpWrite && strings.HasSuffix(c.Path, ".ldb")
	}, nil))
	val := strings.Repeat("v", 200)
	var werr error
	for i := 0; i < 5000 && werr == nil; i++ {
		werr = db.Put([]byte(fmt.Sprintf("k%06d", i)), []byte(val), NoSync)
	}
	if !errors.Is(werr, vfs.ErrInjected) {
		t.Fatalf("writes went on: %v", werr)
	}
	db.Close()
	evs := log.all()
	flushes, _, _ := checkPairs(t, evs)
	var bgErrs []error
	for _, ev := range evs {
		if e, ok := ev.(error); ok {
			bgErrs = append(bgErrs, e)
		}
	}
	if len(bgErrs) != 1 || !errors.Is(bgErrs[0], vfs.ErrInjected) {
		t.Fatalf("background errors %v, want the injected one once", bgErrs)
	}
	if len(flushes) == 0 || !errors.Is(flushes[len(flushes)-1].Err, vfs.ErrInjected) {
		t.Fatalf("the failed flush did not end with its error: %+v", flushes)
	}
	var abandoned bool
	for _, ev := range evs {
		if d, ok := ev.(TableDeleteInfo); ok && d.JobID == flushes[len(flushes)-1].JobID {
			abandoned = true
		}
	}
	if !abandoned {
		t.Error("the failed flush's table was removed unannounced")
	}
}

// TestEventListenerDiskSlow: a slow sync is reported once, with its file;
// one that hangs is reported while it still hangs.
func TestEventListenerDiskSlow(t *testing.T) {
	var log eventLog
	hang := make(chan struct{})
	var slow atomic.Value // the path whose sync hangs
	slow.Store("")
	fs := &blockFS{FS: vfs.NewMem(), before: func(op, path string) {
		if op == "sync" && path == slow.Load().(string) {
			<-hang
		}
	}}
	db, err := Open("/db", &Options{FS: fs, DiskSlowThreshold: 30 * time.Millisecond, EventListener: log.listener()})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := db.Stats()
	logPath := fmt.Sprintf("/db/%06d.log", s.LogNum)
	slow.Store(logPath)
	synced := make(chan error, 1)
	go func() { synced <- db.Put([]byte("k"), []byte("v"), Sync) }()
	waitCond(t, "DiskSlow while the sync hangs", func() bool {
		for _, ev := range log.all() {
			if d, ok := ev.(DiskSlowInfo); ok && d.Path == logPath && d.OpType == "sync" && d.Duration >= 30*time.Millisecond {
				return true
			}
		}
		return false
	})
	select {
	case err := <-synced:
		t.Fatalf("the Sync write returned (%v) before its sync", err)
	default:
	}
	time.Sleep(100 * time.Millisecond)
	close(hang)
	if err := <-synced; err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ev := range log.all() {
		if d, ok := ev.(DiskSlowInfo); ok && d.Path == logPath {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the slow sync was reported %d times, want once", n)
	}
}

// TestEventListenerOpenFlush: Open's flush of the records it replayed is
// announced, with the table it wrote.
func TestEventListenerOpenFlush(t *testing.T) {
	fs := vfs.NewMem()
	db, err := Open("/db", &Options{FS: fs, WriteBufferSize: 16 << 20})
	if err != nil {
		t.Fatal(err)
	}
	val := strings.Repeat("v", 1000)
	for i := range 3000 { // more than Open carries forward
		if err := db.Put([]byte(fmt.Sprintf("k%06d", i)), []byte(val), Sync); err != nil {
			t.Fatal(err)
		}
	}
	img := fs.CrashClone() // the synced log, not yet flushed
	defer db.Close()
	var log eventLog
	db, err = Open("/db", &Options{FS: img, EventListener: log.listener()})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	flushes, _, _ := checkPairs(t, log.all())
	if len(flushes) == 0 || flushes[0].Reason != "open" || len(flushes[0].Output) != 1 {
		t.Fatalf("Open's flush of the replayed log: %+v", flushes)
	}
}

func waitCond(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s after 10 s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// blockFS calls before ahead of each Create ("create") and each Sync of a
// file it created ("sync"), which may block: unlike FaultFS's injector,
// it blocks only the caller.
type blockFS struct {
	vfs.FS
	before func(op, path string)
}

func (g *blockFS) Create(name string) (vfs.File, error) {
	g.before("create", name)
	f, err := g.FS.Create(name)
	if err != nil {
		return nil, err
	}
	return &blockFile{File: f, g: g, path: name}, nil
}

type blockFile struct {
	vfs.File
	g    *blockFS
	path string
}

func (f *blockFile) Sync() error {
	f.g.before("sync", f.path)
	return f.File.Sync()
}

// TestEventListenerCompactionClosed: a manual compaction that Close
// interrupts ends with ErrClosed, and Close returns only after its
// CompactionEnd was delivered.
func TestEventListenerCompactionClosed(t *testing.T) {
	var log eventLog
	hold := make(chan struct{})
	var holding atomic.Bool
	fs := &blockFS{FS: vfs.NewMem(), before: func(op, path string) {
		if op == "create" && strings.HasSuffix(path, ".ldb") && holding.Load() {
			<-hold
		}
	}}
	db, err := Open("/db", &Options{FS: fs, WriteBufferSize: 256 << 10, EventListener: log.listener()})
	if err != nil {
		t.Fatal(err)
	}
	val := strings.Repeat("v", 100)
	for i := range 60000 {
		if err := db.Put([]byte(fmt.Sprintf("k%07d", i*7919%60000)), []byte(val), NoSync); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, db)
	holding.Store(true)
	compacted := make(chan error, 1)
	go func() { compacted <- db.Compact(nil, nil) }()
	waitCond(t, "the manual compaction's CompactionBegin", func() bool {
		for _, ev := range log.all() {
			if c, ok := ev.(CompactionInfo); ok && !c.Done && c.Reason == "manual" {
				return true
			}
		}
		return false
	})
	closed := make(chan error, 1)
	go func() { closed <- db.Close() }()
	waitCond(t, "Close to begin", db.closing.Load)
	holding.Store(false)
	close(hold)
	if err := <-compacted; !errors.Is(err, ErrClosed) {
		t.Fatalf("Compact: %v; want ErrClosed", err)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	log.closed.Store(true)
	_, compactions, _ := checkPairs(t, log.all())
	var manual *CompactionInfo
	for i := range compactions {
		if compactions[i].Reason == "manual" {
			manual = &compactions[i]
		}
	}
	if manual == nil || !errors.Is(manual.Err, ErrClosed) || len(manual.Output.Tables) != 0 {
		t.Fatalf("the interrupted manual compaction ended as %+v; want ErrClosed and no output", manual)
	}
}
