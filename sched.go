package shale

import (
	"bytes"
	"runtime"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/shale-db/shale/compaction"
	"github.com/shale-db/shale/internal/ikey"
	"github.com/shale-db/shale/internal/manifest"
)

// errCompactionCanceled ends a compaction that Close interrupted. It is
// not a background error: nothing went wrong, and the outputs are deleted.
var errCompactionCanceled = errors.New("shale: compaction canceled by Close")

// compactionJob is a compaction under way.
type compactionJob struct {
	c       *compaction.Compaction
	split   bool           // it may run in parts (subcompactionBounds)
	inputs  []compactInput // every input table with its level
	running compaction.Running
	manual  *manualCompaction // nil for an automatic one
	id      int               // JobID, for the listener
}

// manualCompaction is a Compact call waiting for, then taking, its turn.
type manualCompaction struct {
	start, end []byte
	done       chan error // receives the result once
}

// defaultMaxConcurrentCompactions is Options.MaxConcurrentCompactions'
// default: 1 on one CPU, else 2. On two cores a second compaction takes
// the core the writer leaves while slowdown sleeps pace it: at 20M keys,
// fillrandom went from 1.08 to 1.34 times Pebble's throughput, each ratio
// from one run of both stores (shale's 254k and 305k puts/s), while the
// fills at 1M, readrandom and readwhilewriting did not move beyond their
// noise.
func defaultMaxConcurrentCompactions() int {
	if runtime.NumCPU() < 2 {
		return 1
	}
	return 2
}

// maybeScheduleLocked is the one place that decides what background work
// runs next. It starts a flush for each full memtable that has none;
// then, unless a manual compaction waits (it runs alone, once the running
// ones end), it starts compactions picked by compaction.Pick up to
// MaxConcurrentCompactions. Flushes and compactions run side by side, so
// a flush never waits behind a compaction; only the flush of the writes
// Open carried holds compactions back (see Open). Call it after anything
// that may make work due: a memtable switch, the end of a flush or
// compaction, a manual request, the release of a snapshot, Open.
func (db *DB) maybeScheduleLocked() {
	if db.mu.closed || db.mu.bgErr != nil || db.opts.ReadOnly {
		return
	}
	db.startFlushesLocked()
	if db.mu.carryFlushing {
		return
	}
	if len(db.mu.manual) > 0 {
		if len(db.mu.compactions) == 0 {
			m := db.mu.manual[0]
			db.mu.manual = db.mu.manual[1:]
			db.startManualLocked(m)
		}
		return
	}
	db.startAutomaticLocked()
}

// startAutomaticLocked starts compactions picked by compaction.Pick up to
// MaxConcurrentCompactions.
func (db *DB) startAutomaticLocked() {
	for !db.opts.disableAutoCompactions && len(db.mu.compactions) < db.opts.MaxConcurrentCompactions {
		c := db.pickLocked()
		if c == nil {
			return
		}
		db.startLocked(&compactionJob{c: c, split: db.splitWantedLocked(c)})
	}
}

// splitWantedLocked reports whether c, picked automatically, may run in
// parts side by side (subcompactionBounds): when it leaves level 0 and
// writes are waiting for compaction (level 0 holds more tables than
// compacting them takes, or the deeper levels slow the writes down), or
// no write has come for a while. Otherwise the writer keeps the core.
func (db *DB) splitWantedLocked(c *compaction.Compaction) bool {
	if c.StartLevel != 0 {
		return false
	}
	return len(c.Inputs[0]) > compaction.DefaultL0Trigger || db.levelPressure.Load() > 0 || db.idleCompactL0Locked()
}

// pickLocked asks the picker for the next automatic compaction.
func (db *DB) pickLocked() *compaction.Compaction {
	v := db.vs.Current()
	defer v.Unref()
	st := compaction.State{
		CompactPointer: db.vs.CompactPointer,
		OldestSnapshot: db.mu.snapshots.oldest(db.visibleSeq.Load()),
	}
	for _, j := range db.mu.compactions {
		st.Running = append(st.Running, j.running)
	}
	o := db.pickerOptions()
	if db.idleCompactL0Locked() {
		o.L0Trigger = 1
	}
	if db.mu.lsmOf != v {
		// Built once per version: a pick after every snapshot release
		// would otherwise copy every table's description each time.
		db.mu.lsmOf, db.mu.lsm = v, newVersionLSM(v)
	}
	return compaction.Pick(db.mu.lsm, o, st)
}

func (db *DB) pickerOptions() compaction.Options {
	return compaction.Options{
		BaseLevelMinBytes: db.opts.WriteBufferSize,
		TargetFileSize:    db.opts.TargetFileSize,
	}
}

// startLocked records job as under way and runs it on its own goroutine.
func (db *DB) startLocked(job *compactionJob) {
	c := job.c
	if job.inputs == nil {
		for i, level := range [2]int{c.StartLevel, c.OutputLevel} {
			for _, t := range c.Inputs[i] {
				job.inputs = append(job.inputs, compactInput{level: level, num: t.Num})
			}
		}
	}
	job.running = compaction.Running{
		StartLevel: c.StartLevel, OutputLevel: c.OutputLevel,
		Smallest: c.Smallest, Largest: c.Largest,
	}
	for _, in := range job.inputs {
		job.running.Tables = append(job.running.Tables, in.num)
	}
	db.mu.compactions = append(db.mu.compactions, job)
	db.bgWG.Add(1)
	go db.runJob(job)
}

// runJob runs a compaction and records its end: its error is sticky
// unless Close interrupted it, and the scheduler is asked for more work.
func (db *DB) runJob(job *compactionJob) {
	defer db.bgWG.Done()
	job.id = db.events.newJob()
	var info CompactionInfo
	if db.events.wantCompactions() {
		info = db.compactionInfo(job)
		db.events.compactionBegin(info)
	}
	start := time.Now()
	res, err := db.runCompaction(job)
	if err == nil {
		c := job.c
		db.opts.Logger.Info("shale: compacted", "kind", c.Kind.String(), "from", c.StartLevel, "to", c.OutputLevel,
			"tables_in", len(job.inputs), "tables_out", res.tablesOut, "parts", res.parts, "bytes_in", res.bytesIn,
			"bytes_out", res.bytesOut, "took", time.Since(start).Round(time.Millisecond))
	}
	db.mu.Lock()
	for i, j := range db.mu.compactions {
		if j == job {
			db.mu.compactions = append(db.mu.compactions[:i], db.mu.compactions[i+1:]...)
			break
		}
	}
	switch {
	case err == nil:
		db.mu.counters.noteCompaction(job.c, res)
	case errors.Is(err, errCompactionCanceled):
		err = ErrClosed
	default:
		err = markCorruption(errors.Wrap(err, "shale: compact"))
		db.setBackgroundErrorLocked(err)
	}
	db.mu.bgCond.Broadcast()
	db.maybeScheduleLocked()
	db.mu.Unlock()
	if db.events.wantCompactions() {
		for _, m := range res.outputs {
			info.Output.Tables = append(info.Output.Tables, tableInfo(job.c.OutputLevel, m))
		}
		info.OutputBytes = info.Output.Bytes()
		info.Duration, info.Err = time.Since(start), err
		db.events.compactionEnd(info)
	}
	if err == nil {
		db.deleteObsoleteFiles()
		db.maybeUnmark() // it may have dropped the last range deletion
	}
	if job.manual != nil {
		job.manual.done <- err // after the inputs are deleted
	}
}

// logAndApply records edit in the MANIFEST and installs the new version,
// keeping l0Tables current. An error is not sticky here: callers decide.
func (db *DB) logAndApply(edit *manifest.VersionEdit) error {
	err := db.vs.LogAndApply(edit)
	db.noteVersion()
	return err
}

// noteVersion refreshes what the write path reads of the current version.
func (db *DB) noteVersion() {
	v := db.vs.Current()
	db.l0Tables.Store(int32(v.NumFiles(0)))
	shape := compaction.Measure(newVersionLSM(v), db.pickerOptions())
	v.Unref()
	db.levelPressure.Store(levelPressure(shape))
}

// levelPressure turns the highest score of the levels from the base level
// to the last but one into the slowdown's doublings, plus one: 0 below a
// score of 1.5 (no slowdown), then one more doubling per half point.
func levelPressure(s compaction.Shape) int32 {
	top := 0.0
	for level := s.BaseLevel; level < len(s.Scores)-1; level++ {
		top = max(top, s.Scores[level])
	}
	if top < 1.5 {
		return 0
	}
	return int32(min((top-1.5)*2, 10)) + 1
}

// versionLSM is a manifest.Version as the compaction picker sees it.
type versionLSM struct {
	levels [manifest.NumLevels][]compaction.Table
}

var _ compaction.LSM = (*versionLSM)(nil)

func newVersionLSM(v *manifest.Version) *versionLSM {
	l := new(versionLSM)
	for level, files := range v.Levels {
		l.levels[level] = make([]compaction.Table, len(files))
		for i, f := range files {
			l.levels[level][i] = tableOf(f)
		}
	}
	return l
}

func (l *versionLSM) NumLevels() int                      { return manifest.NumLevels }
func (l *versionLSM) Tables(level int) []compaction.Table { return l.levels[level] }

func tableOf(f *manifest.FileMeta) compaction.Table {
	return compaction.Table{
		Num: f.Num, Size: f.Size, Smallest: f.Smallest, Largest: f.Largest,
		Entries: f.Entries, Deletions: f.Deletions, LargestSeq: f.LargestSeq, HasStats: f.HasStats,
		RangeDels: f.RangeDels,
	}
}

// userRangeOf returns the user-key range of a compaction's inputs.
func userRangeOf(files []*manifest.FileMeta) (lo, hi []byte) {
	for _, f := range files {
		s, l := ikey.UserKey(f.Smallest), ikey.UserKey(f.Largest)
		if lo == nil || bytes.Compare(s, lo) < 0 {
			lo = s
		}
		if hi == nil || bytes.Compare(l, hi) > 0 {
			hi = l
		}
	}
	return lo, hi
}

// compactionInfo describes job for CompactionBegin.
func (db *DB) compactionInfo(job *compactionJob) CompactionInfo {
	c := job.c
	info := CompactionInfo{JobID: job.id, Reason: c.Kind.String(), Output: LevelInfo{Level: c.OutputLevel}}
	v := db.vs.Current()
	defer v.Unref()
	files, err := resolveInputs(v, job.inputs)
	if err != nil {
		return info // runCompaction fails the same way, and says so
	}
	for i, in := range job.inputs {
		if n := len(info.Input); n == 0 || info.Input[n-1].Level != in.level {
			info.Input = append(info.Input, LevelInfo{Level: in.level})
		}
		li := &info.Input[len(info.Input)-1]
		li.Tables = append(li.Tables, tableInfo(in.level, files[i]))
		info.InputBytes += uint64(files[i].Size)
	}
	return info
}
