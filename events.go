package shale

import (
	"bytes"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shale-db/shale/internal/ikey"
	"github.com/shale-db/shale/internal/manifest"
	"github.com/shale-db/shale/internal/vfs"
	"github.com/shale-db/shale/memtable"
)

// EventListener is a set of callbacks that a DB calls as its background
// work happens: flushes, compactions, write stalls, the files it creates
// and deletes, background errors and slow syncs. Any field may be nil.
// The names and the Info types follow Pebble's EventListener, so that
// code written for one reads naturally against the other.
//
// # Delivery
//
// Events are queued, not called where they happen: one goroutine per DB
// calls the callbacks, one at a time, in the order the events happened.
// A slow callback therefore never stalls a write, a flush or a
// compaction, and it runs outside every lock of the DB: it may call the
// DB's methods (Metrics, Get, even writes), except Close, which waits for
// the queue to drain. No event is dropped: the queue grows in memory
// while a callback is slow, so a callback that never returns holds every
// later event, and Close, forever. (Pebble calls its callbacks
// synchronously, on the goroutine of the job; a slow one there stalls
// that job.) Because of the queue, a callback sees the event after the
// fact: the DB may have moved on (a WriteStallBegin may be delivered after
// the stall is over; its WriteStallEnd always comes after it).
//
// # Pairing
//
// Every FlushBegin is followed by exactly one FlushEnd for the same
// JobID, every CompactionBegin by one CompactionEnd, every WriteStallBegin
// by one WriteStallEnd, also when the job fails or Close ends it; the End
// then carries the error (ErrClosed for a compaction that Close
// interrupted). Close returns only after every callback has returned,
// including those for what Close itself did (the last deletions). A
// failed Open also delivers every event it caused before it returns.
//
// Flushes include those Open performs to make replayed log records
// durable (Reason "open").
type EventListener struct {
	// BackgroundError is called with an error that stopped writes: a
	// flush, compaction or log write that failed in the background. Every
	// later write fails with it until the DB is reopened. It is called
	// once per DB.
	BackgroundError func(error)
	// CompactionBegin and CompactionEnd are called when a compaction
	// starts and ends. CompactionEnd's info adds the outputs and the
	// duration, and Err.
	CompactionBegin func(CompactionInfo)
	CompactionEnd   func(CompactionInfo)
	// DiskSlow is called when a sync (fsync, fdatasync) of a log, table,
	// MANIFEST or the directory takes longer than
	// Options.DiskSlowThreshold: while it is still under way, once it
	// crosses the threshold, so that a sync that never returns is reported
	// too. It is called once per slow sync.
	DiskSlow func(DiskSlowInfo)
	// FlushBegin and FlushEnd are called when a memtable flush starts and
	// ends. FlushEnd's info adds the table written (none if the memtable
	// held nothing), the duration, and Err.
	FlushBegin func(FlushInfo)
	FlushEnd   func(FlushInfo)
	// TableCreated is called when a table file is created, before it is
	// written; TableDeleted when one is removed (obsolete, or abandoned by
	// a failed job).
	TableCreated func(TableCreateInfo)
	TableDeleted func(TableDeleteInfo)
	// WALCreated is called when a write-ahead log is created; WALDeleted
	// when one is removed, once the writes it held are in a table.
	WALCreated func(WALCreateInfo)
	WALDeleted func(WALDeleteInfo)
	// WriteStallBegin is called when a write has to wait for a flush or a
	// compaction before it can go on (memtables or level 0 full), and
	// WriteStallEnd when it goes on or fails. The short delays writes take
	// when level 0 fills up (see Metrics' Stalls.Slowdown) are not stalls.
	// Pebble's WriteStallEnd takes no argument; shale's says how long the
	// stall lasted.
	WriteStallBegin func(WriteStallBeginInfo)
	WriteStallEnd   func(WriteStallEndInfo)
}

// LevelInfo is the tables of one level that a compaction reads or writes.
type LevelInfo struct {
	Level  int
	Tables []TableInfo
}

// Bytes returns the size of the level's tables.
func (l LevelInfo) Bytes() uint64 {
	var n uint64
	for _, t := range l.Tables {
		n += uint64(t.Size)
	}
	return n
}

// FlushInfo describes a flush: of a memtable into a level-0 table.
type FlushInfo struct {
	// JobID identifies the flush; the tables and logs it creates carry it.
	JobID int
	// Reason is why the flush ran: "memtable full", "forced" (DB.Flush,
	// or a Checkpoint or Backup) or "open" (the records Open replayed).
	Reason string
	// Input is the number of memtables flushed (one), and InputBytes
	// their size in memory.
	Input      int
	InputBytes uint64
	// Output is the table written: none if the memtable held nothing.
	// Set in FlushEnd.
	Output []TableInfo
	// Duration is how long the flush took. Set in FlushEnd.
	Duration time.Duration
	// Done is set in FlushEnd.
	Done bool
	// Err is why the flush failed, if it did. Set in FlushEnd.
	Err error
}

// CompactionInfo describes a compaction.
type CompactionInfo struct {
	// JobID identifies the compaction; the tables it creates carry it.
	JobID int
	// Reason is the kind of compaction: "default" (a level over its size,
	// or level 0 over its trigger), "move" (a table moved down a level
	// unread), "tombstone" (a table dense with deletions) or "manual"
	// (DB.Compact).
	Reason string
	// Input holds the tables read: those of the start level and those of
	// the output level they overlap.
	Input []LevelInfo
	// Output is the level written and, in CompactionEnd, its new tables.
	Output LevelInfo
	// InputBytes is the size of the tables read. OutputBytes, set in
	// CompactionEnd, is the size of those written.
	InputBytes, OutputBytes uint64
	// Duration is how long the compaction took. Set in CompactionEnd.
	Duration time.Duration
	// Done is set in CompactionEnd.
	Done bool
	// Err is why it failed, if it did: ErrClosed if Close interrupted it.
	// Set in CompactionEnd.
	Err error
}

// WriteStallBeginInfo says why writes stalled.
type WriteStallBeginInfo struct {
	// Reason is "memtable count limit reached" or "L0 file count limit
	// exceeded", as Pebble says.
	Reason string
}

// WriteStallEndInfo says how a write stall ended.
type WriteStallEndInfo struct {
	// Reason is that of the WriteStallBegin this ends.
	Reason string
	// Duration is how long the write waited.
	Duration time.Duration
	// Err is set if the write failed instead of going on (the DB was
	// closed, or a background error stopped writes).
	Err error
}

// WALCreateInfo describes a new write-ahead log.
type WALCreateInfo struct {
	JobID   int
	Path    string
	FileNum uint64
	// Err is set if the creation failed.
	Err error
}

// WALDeleteInfo describes a write-ahead log removed.
type WALDeleteInfo struct {
	JobID   int
	Path    string
	FileNum uint64
	// Err is set if the removal failed (the file is tried again later).
	Err error
}

// TableCreateInfo describes a table file created.
type TableCreateInfo struct {
	JobID int
	// Reason is "flushing" or "compacting".
	Reason  string
	Path    string
	FileNum uint64
}

// TableDeleteInfo describes a table file removed.
type TableDeleteInfo struct {
	JobID   int
	Path    string
	FileNum uint64
	// Err is set if the removal failed (the file is tried again later).
	Err error
}

// DiskSlowInfo describes a slow sync.
type DiskSlowInfo struct {
	// Path is the file or directory synced.
	Path string
	// OpType is "sync" for a file and "sync dir" for the directory.
	OpType string
	// Duration is how long the sync had taken when it was reported: at
	// least Options.DiskSlowThreshold.
	Duration time.Duration
}

// TeeEventListener returns a listener that calls a's callbacks and then
// b's, for instance the one of a metrics collector and one of the
// program's own.
func TeeEventListener(a, b EventListener) EventListener {
	return EventListener{
		BackgroundError: tee(a.BackgroundError, b.BackgroundError),
		CompactionBegin: tee(a.CompactionBegin, b.CompactionBegin),
		CompactionEnd:   tee(a.CompactionEnd, b.CompactionEnd),
		DiskSlow:        tee(a.DiskSlow, b.DiskSlow),
		FlushBegin:      tee(a.FlushBegin, b.FlushBegin),
		FlushEnd:        tee(a.FlushEnd, b.FlushEnd),
		TableCreated:    tee(a.TableCreated, b.TableCreated),
		TableDeleted:    tee(a.TableDeleted, b.TableDeleted),
		WALCreated:      tee(a.WALCreated, b.WALCreated),
		WALDeleted:      tee(a.WALDeleted, b.WALDeleted),
		WriteStallBegin: tee(a.WriteStallBegin, b.WriteStallBegin),
		WriteStallEnd:   tee(a.WriteStallEnd, b.WriteStallEnd),
	}
}

func tee[T any](a, b func(T)) func(T) {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return func(x T) { a(x); b(x) }
}

// events delivers a DB's events to its listener: post queues a call,
// and one goroutine makes the calls in order. A DB without a listener
// has a nil *events, whose methods do nothing.
type events struct {
	l     EventListener
	jobID atomic.Int64

	mu      sync.Mutex
	queue   []func()
	wake    chan struct{} // has room for one signal
	closing bool
	done    chan struct{} // closed when the goroutine has made every call

	bgErrOnce sync.Once
	disk      *diskMonitor // nil unless l.DiskSlow is set
}

// newEvents starts delivering to l's callbacks, or returns nil if l is
// nil.
func newEvents(l *EventListener, slow time.Duration) *events {
	if l == nil {
		return nil
	}
	e := &events{l: *l, wake: make(chan struct{}, 1), done: make(chan struct{})}
	if l.DiskSlow != nil {
		e.disk = newDiskMonitor(slow, func(info DiskSlowInfo) { e.post(func() { e.l.DiskSlow(info) }) })
	}
	go e.run()
	return e
}

func (e *events) run() {
	defer close(e.done)
	for {
		e.mu.Lock()
		q, closing := e.queue, e.closing
		e.queue = nil
		e.mu.Unlock()
		for _, call := range q {
			call()
		}
		if len(q) > 0 {
			continue
		}
		if closing {
			return
		}
		<-e.wake
	}
}

// post queues call. After close it is dropped: nothing the DB does then
// is an event of the DB.
func (e *events) post(call func()) {
	e.mu.Lock()
	if !e.closing {
		e.queue = append(e.queue, call)
	}
	e.mu.Unlock()
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// close stops the disk monitor, then waits until every queued call has
// returned.
func (e *events) close() {
	if e == nil {
		return
	}
	if e.disk != nil {
		e.disk.stop()
	}
	e.mu.Lock()
	e.closing = true
	e.mu.Unlock()
	select {
	case e.wake <- struct{}{}:
	default:
	}
	<-e.done
}

// diskMonitor returns the monitor that times syncs, or nil.
func (e *events) diskMonitor() *diskMonitor {
	if e == nil {
		return nil
	}
	return e.disk
}

// newJob returns a job ID, or 0 without a listener.
func (e *events) newJob() int {
	if e == nil {
		return 0
	}
	return int(e.jobID.Add(1))
}

func (e *events) backgroundError(err error) {
	if e == nil || e.l.BackgroundError == nil {
		return
	}
	e.bgErrOnce.Do(func() { e.post(func() { e.l.BackgroundError(err) }) })
}

func (e *events) flushBegin(info FlushInfo) {
	if e != nil && e.l.FlushBegin != nil {
		e.post(func() { e.l.FlushBegin(info) })
	}
}

func (e *events) flushEnd(info FlushInfo) {
	if e != nil && e.l.FlushEnd != nil {
		info.Done = true
		e.post(func() { e.l.FlushEnd(info) })
	}
}

func (e *events) wantCompactions() bool {
	return e != nil && (e.l.CompactionBegin != nil || e.l.CompactionEnd != nil)
}

func (e *events) compactionBegin(info CompactionInfo) {
	if e != nil && e.l.CompactionBegin != nil {
		e.post(func() { e.l.CompactionBegin(info) })
	}
}

func (e *events) compactionEnd(info CompactionInfo) {
	if e != nil && e.l.CompactionEnd != nil {
		info.Done = true
		e.post(func() { e.l.CompactionEnd(info) })
	}
}

func (e *events) writeStallBegin(reason string) {
	if e != nil && e.l.WriteStallBegin != nil {
		e.post(func() { e.l.WriteStallBegin(WriteStallBeginInfo{Reason: reason}) })
	}
}

func (e *events) writeStallEnd(info WriteStallEndInfo) {
	if e != nil && e.l.WriteStallEnd != nil {
		e.post(func() { e.l.WriteStallEnd(info) })
	}
}

func (e *events) walCreated(info WALCreateInfo) {
	if e != nil && e.l.WALCreated != nil {
		e.post(func() { e.l.WALCreated(info) })
	}
}

func (e *events) walDeleted(info WALDeleteInfo) {
	if e != nil && e.l.WALDeleted != nil {
		e.post(func() { e.l.WALDeleted(info) })
	}
}

func (e *events) tableCreated(info TableCreateInfo) {
	if e != nil && e.l.TableCreated != nil {
		e.post(func() { e.l.TableCreated(info) })
	}
}

func (e *events) tableDeleted(info TableDeleteInfo) {
	if e != nil && e.l.TableDeleted != nil {
		e.post(func() { e.l.TableDeleted(info) })
	}
}

// tableInfo describes table f of level.
func tableInfo(level int, f *manifest.FileMeta) TableInfo {
	return TableInfo{
		Level: level, FileNum: f.Num, Size: f.Size,
		// Copies: the version's keys must not reach a callback.
		Smallest: bytes.Clone(ikey.UserKey(f.Smallest)), Largest: bytes.Clone(ikey.UserKey(f.Largest)),
		LargestSeqNum: f.LargestSeq,
	}
}

// diskMonitor times syncs. A sync that crosses the threshold is reported
// once: by the ticker while it is still under way, or by its own end if
// the ticker did not see it first.
type diskMonitor struct {
	threshold time.Duration
	report    func(DiskSlowInfo)

	mu       sync.Mutex
	inFlight map[*diskOp]struct{}
	stopCh   chan struct{}
	stopped  chan struct{}
}

type diskOp struct {
	path, op string
	start    time.Time
	reported bool // guarded by diskMonitor.mu
}

func newDiskMonitor(threshold time.Duration, report func(DiskSlowInfo)) *diskMonitor {
	m := &diskMonitor{
		threshold: threshold, report: report,
		inFlight: make(map[*diskOp]struct{}),
		stopCh:   make(chan struct{}), stopped: make(chan struct{}),
	}
	go m.watch()
	return m
}

func (m *diskMonitor) watch() {
	defer close(m.stopped)
	t := time.NewTicker(max(m.threshold/4, time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-m.stopCh:
			return
		case now := <-t.C:
			m.mu.Lock()
			for op := range m.inFlight {
				if d := now.Sub(op.start); !op.reported && d >= m.threshold {
					op.reported = true
					m.report(DiskSlowInfo{Path: op.path, OpType: op.op, Duration: d})
				}
			}
			m.mu.Unlock()
		}
	}
}

func (m *diskMonitor) stop() {
	close(m.stopCh)
	<-m.stopped
}

// time runs sync, a sync of path, and reports it if it is slow.
func (m *diskMonitor) time(path, opType string, sync func() error) error {
	if m == nil {
		return sync()
	}
	op := &diskOp{path: path, op: opType, start: time.Now()}
	m.mu.Lock()
	m.inFlight[op] = struct{}{}
	m.mu.Unlock()
	err := sync()
	d := time.Since(op.start)
	m.mu.Lock()
	delete(m.inFlight, op)
	late := !op.reported && d >= m.threshold
	m.mu.Unlock()
	if late {
		m.report(DiskSlowInfo{Path: path, OpType: opType, Duration: d})
	}
	return err
}

// slowSyncFS times the syncs of the files and directories it opens (see
// diskMonitor). AppendTo sees through its files: logFile times the WAL
// appender's syncs itself.
type slowSyncFS struct {
	vfs.FS
	m *diskMonitor
}

func (fs slowSyncFS) Create(name string) (vfs.File, error) {
	f, err := fs.FS.Create(name)
	if err != nil {
		return nil, err
	}
	return vfs.WatchSync(f, func(sync func() error) error { return fs.m.time(name, "sync", sync) }), nil
}

func (fs slowSyncFS) OpenDir(name string) (vfs.File, error) {
	f, err := fs.FS.OpenDir(name)
	if err != nil {
		return nil, err
	}
	return vfs.WatchSync(f, func(sync func() error) error { return fs.m.time(name, "sync dir", sync) }), nil
}

// flushEvents runs write, a flush of mem into a table, between FlushBegin
// and FlushEnd. write is given the flush's JobID.
func (db *DB) flushEvents(reason string, mem *memtable.Memtable, write func(job int) (*manifest.FileMeta, error)) (*manifest.FileMeta, error) {
	job := db.events.newJob()
	if db.events == nil || (db.events.l.FlushBegin == nil && db.events.l.FlushEnd == nil) {
		return write(job)
	}
	info := FlushInfo{JobID: job, Reason: reason, Input: 1, InputBytes: uint64(mem.ApproximateSize())}
	db.events.flushBegin(info)
	start := time.Now()
	meta, err := write(job)
	info.Duration, info.Err = time.Since(start), err
	if meta != nil {
		info.Output = []TableInfo{tableInfo(0, meta)}
	}
	db.events.flushEnd(info)
	return meta, err
}

// stallEvent pairs a write's WriteStallBegin with its WriteStallEnd: a
// write that waits several times, for several reasons, is one stall.
type stallEvent struct {
	reason string // empty: no stall began
	start  time.Time
}

// begin starts the stall, unless one began already or the wait is a
// forced switch's (DB.Flush), which is no write stall.
func (s *stallEvent) begin(e *events, force bool, reason string) {
	if e == nil || force || s.reason != "" {
		return
	}
	s.reason, s.start = reason, time.Now()
	e.writeStallBegin(reason)
}

// end ends the stall, if one began; err is how the write came out.
func (s *stallEvent) end(e *events, err error) {
	if s.reason == "" {
		return
	}
	e.writeStallEnd(WriteStallEndInfo{Reason: s.reason, Duration: time.Since(s.start), Err: err})
}
