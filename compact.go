package shale

import (
	"bytes"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/errors"
	"github.com/shale-db/shale/compaction"
	"github.com/shale-db/shale/internal/ikey"
	"github.com/shale-db/shale/internal/iterator"
	"github.com/shale-db/shale/internal/manifest"
	"github.com/shale-db/shale/internal/merging"
	"github.com/shale-db/shale/internal/rangedel"
	"github.com/shale-db/shale/internal/vfs"
	"github.com/shale-db/shale/sstable"
)

// Compact flushes the memtable, then merges every table that holds keys in
// [start, end) (a nil bound is open) into new tables in the last level,
// dropping overwritten and deleted data that no open snapshot can see. The
// range grows to the whole key ranges of the tables it touches. A start
// after end is an error; an empty range does nothing.
//
// Compact goes through the same scheduler as the automatic compactions:
// it waits for those under way to end, runs alone, and returns when its
// tables are recorded in the MANIFEST; the old ones are deleted once no
// iterator reads them. Writes and flushes go on meanwhile. Close
// interrupts it (it then returns ErrClosed). A failure is sticky, as a
// failed flush is: later writes fail with it.
func (db *DB) Compact(start, end []byte) error { return markDiskFull(db.compact(start, end)) }

func (db *DB) compact(start, end []byte) error {
	if db.opts.ReadOnly {
		return db.readOnlyError()
	}
	if start != nil && end != nil {
		switch c := bytes.Compare(start, end); {
		case c > 0:
			return errors.Newf("shale: compact: start %q is after end %q", start, end)
		case c == 0:
			return db.checkOpen() // an empty range
		}
	}
	if err := db.Flush(); err != nil {
		return err
	}
	m := &manualCompaction{start: bytes.Clone(start), end: bytes.Clone(end), done: make(chan error, 1)}
	db.mu.Lock()
	if db.mu.closed {
		db.mu.Unlock()
		return ErrClosed
	}
	if db.mu.bgErr != nil {
		defer db.mu.Unlock()
		return db.mu.bgErr
	}
	db.mu.manual = append(db.mu.manual, m)
	db.maybeScheduleLocked()
	db.mu.Unlock()
	if err := <-m.done; err != nil {
		return err
	}
	// An automatic compaction may have dropped the last range deletion
	// and not have taken the mark off yet: when Compact returns, a
	// directory that needs no mark has none.
	db.maybeUnmark()
	return nil
}

// compactInput is one input table of a compaction.
type compactInput struct {
	level int
	num   uint64
	f     *manifest.FileMeta
}

// startManualLocked starts a manual compaction, which the scheduler runs
// only when no other compaction runs. Its inputs are every table of every
// level that meets the range, widened to their whole key ranges, and its
// outputs go to the last level, which is where data belongs.
func (db *DB) startManualLocked(m *manualCompaction) {
	v := db.vs.Current()
	inputs := pickRange(v, m.start, m.end)
	v.Unref() // the inputs stay live in the current version until the edit
	if len(inputs) == 0 {
		// Nothing to merge, but an automatic compaction that just ended
		// may still be deleting its inputs: Compact returns once they are
		// gone, as after a compaction of its own.
		db.bgWG.Add(1)
		go func() {
			defer db.bgWG.Done()
			db.deleteObsoleteFiles()
			m.done <- nil
		}()
		return
	}
	c := &compaction.Compaction{Kind: compaction.KindManual, OutputLevel: manifest.NumLevels - 1, Bottommost: true}
	files := make([]*manifest.FileMeta, len(inputs))
	for i, in := range inputs {
		files[i] = in.f
	}
	c.Smallest, c.Largest = userRangeOf(files)
	db.startLocked(&compactionJob{c: c, inputs: inputs, manual: m})
}

// pickRange returns every table of v, at any level, that meets [start,
// end), widened until it covers the inputs' whole key ranges.
func pickRange(v *manifest.Version, start, end []byte) []compactInput {
	lo, hi := start, end
	for {
		var in []compactInput
		newLo, newHi := lo, hi
		for level := range manifest.NumLevels {
			for _, f := range v.Overlaps(level, lo, hi) {
				in = append(in, compactInput{level: level, num: f.Num, f: f})
				if s := ikey.UserKey(f.Smallest); newLo != nil && bytes.Compare(s, newLo) < 0 {
					newLo = s
				}
				if l := ikey.UserKey(f.Largest); newHi != nil && bytes.Compare(l, newHi) >= 0 {
					newHi = append(bytes.Clone(l), 0) // just past l
				}
			}
		}
		if bytes.Equal(newLo, lo) && bytes.Equal(newHi, hi) {
			return in
		}
		lo, hi = newLo, newHi
	}
}

// compactionResult is what a finished compaction read and wrote.
type compactionResult struct {
	bytesIn, bytesOut int64
	inputLevels       [manifest.NumLevels]int64 // bytes read per level
	tablesOut         int
	parts             int                  // the merge's parts, run side by side
	outputs           []*manifest.FileMeta // for the listener's CompactionEnd
}

// runCompaction runs job: a trivial move is one edit; otherwise the inputs
// are merged into new tables of the output level, recorded with the
// inputs' deletion in one edit.
func (db *DB) runCompaction(job *compactionJob) (compactionResult, error) {
	var res compactionResult
	c := job.c
	v := db.vs.Current()
	defer v.Unref()
	files, err := resolveInputs(v, job.inputs)
	if err != nil {
		return res, err
	}
	edit := &manifest.VersionEdit{}
	for i, in := range job.inputs {
		edit.DeleteFile(in.level, files[i].Num)
	}
	if c.StartLevel > 0 && c.Kind != compaction.KindManual && len(c.Inputs[0]) > 0 {
		edit.SetCompactPointer(c.StartLevel, c.Inputs[0][len(c.Inputs[0])-1].Largest)
	}
	if c.Kind == compaction.KindMove { // reads and writes nothing
		moved := files[0].Moved()
		edit.AddFile(c.OutputLevel, moved)
		res.outputs = []*manifest.FileMeta{moved}
		return res, db.logAndApply(edit)
	}
	for i, in := range job.inputs {
		res.inputLevels[in.level] += files[i].Size
		res.bytesIn += files[i].Size
	}
	out, err := db.mergeInputs(job, files)
	if err != nil {
		return res, err
	}
	res.outputs = out.metas
	for _, m := range out.metas {
		edit.AddFile(c.OutputLevel, m)
		res.bytesOut += m.Size
	}
	res.tablesOut, res.parts = len(out.metas), out.parts
	if err = db.logAndApply(edit); err == nil {
		// After a failed MANIFEST write the edit may be on disk all the
		// same: the outputs stay spared from deletion for good.
		out.release()
	}
	return res, err
}

// resolveInputs finds each input's FileMeta in v (the current version, in
// which reserved inputs stay until the compaction's own edit).
func resolveInputs(v *manifest.Version, inputs []compactInput) ([]*manifest.FileMeta, error) {
	files := make([]*manifest.FileMeta, len(inputs))
	for i, in := range inputs {
		for _, f := range v.Levels[in.level] {
			if f.Num == in.num {
				files[i] = f
				break
			}
		}
		if files[i] == nil {
			return nil, errors.AssertionFailedf("shale: compaction input %06d not in level %d", in.num, in.level)
		}
	}
	return files, nil
}

// mergeInputs merges the input tables (files; inputs names their levels)
// into new tables, synced, with their directory entries durable. On
// failure it deletes what it wrote.
//
// A compaction out of level 0 is split by key range into subcompactions
// that run side by side (subcompactionBounds), each writing its own
// tables; their outputs are recorded together, in key order.
func (db *DB) mergeInputs(job *compactionJob, files []*manifest.FileMeta) (*compactionOutputs, error) {
	c := job.c
	db.mu.Lock()
	smallest := db.mu.snapshots.oldest(db.visibleSeq.Load())
	db.mu.Unlock()
	var rd rangeDelCollector
	rd.addTables(db, files)
	if rd.err != nil {
		return nil, rd.err
	}
	rd.endClass(0)
	dels := rd.all()
	cuts := db.subcompactionBounds(job, files, dels)
	outs := make([]*compactionOutputs, len(cuts)+1)
	errs := make([]error, len(outs))
	var failed atomic.Bool // a subcompaction failed: the others stop
	stop := db.compactionStop(c)
	run := func(i int) {
		out := &compactionOutputs{db: db, job: job.id}
		outs[i] = out
		yi := &yieldingIter{Iterator: merging.New(db.compactionIters(job.inputs, files)...)}
		var in compaction.Iter = yi
		o := compaction.RunOptions{
			TargetSize:            uint64(db.opts.TargetFileSize),
			Grandparents:          c.Grandparents,
			MaxGrandparentOverlap: 10 * db.opts.TargetFileSize,
			Stop:                  stop,
		}
		if len(cuts) > 0 {
			b := &boundedIter{Iterator: yi}
			if i > 0 {
				b.lo = cuts[i-1]
			}
			if i < len(cuts) {
				b.hi = cuts[i]
			}
			in = b
			o.Stop = func() error {
				if failed.Load() {
					return errSubcompactionStopped
				}
				if stop != nil {
					return stop()
				}
				return nil
			}
		}
		filter := &compaction.Filter{SmallestSnapshot: smallest, Bottommost: c.Bottommost, RangeDels: dels}
		err := compaction.Run(in, filter, o, out)
		if werr := out.wait(); err == nil {
			err = werr
		}
		if err != nil {
			failed.Store(true)
		}
		errs[i] = err
	}
	if len(outs) == 1 {
		run(0)
	} else {
		db.subcompactions.Add(uint64(len(outs)))
		var wg sync.WaitGroup
		for i := range outs {
			wg.Go(func() { run(i) })
		}
		wg.Wait()
	}
	var err error
	for _, e := range errs {
		if e != nil && (err == nil || errors.Is(err, errSubcompactionStopped)) {
			err = e
		}
	}
	if err != nil {
		for _, o := range outs {
			o.abandon()
		}
		return nil, err
	}
	all := outs[0]
	all.parts = len(outs)
	for _, o := range outs[1:] {
		all.metas = append(all.metas, o.metas...)
		all.nums = append(all.nums, o.nums...)
	}
	if len(all.metas) > 0 {
		if err := db.syncDir(); err != nil {
			all.abandon()
			return nil, err
		}
	}
	return all, nil
}

// errSubcompactionStopped ends a subcompaction whose sibling failed.
var errSubcompactionStopped = errors.New("shale: subcompaction stopped: another part of the compaction failed")

// maxSubcompactions bounds the parts one compaction is split into.
const maxSubcompactions = 4

// subcompactionBounds returns the user keys at which job's merge is split
// into parts that run side by side, or none.
//
// A compaction out of level 0 runs alone: level 0's tables span the key
// space, so the compaction takes every table of the level below that it
// meets, and nothing else can compact there until it ends. Measured at 20M
// random puts (two compactions allowed), such compactions took 33% of the
// fill, during which one core was left to the writer, which slowdown
// sleeps kept mostly idle. Split by key range, the compaction uses the
// cores MaxConcurrentCompactions allows. It is split only when the writes
// wait for compaction or none come (job.split, see splitWantedLocked): a
// writer that compaction keeps up with would lose the core the parts take.
//
// The cuts fall at the start of tables of the output level, so that each
// part reads about as many of that level's bytes. A part holds every
// version of the user keys in its range, so each keeps or drops them as
// the whole compaction would. A compaction with range deletions is not
// split (they are cut at output boundaries, which a part does not see
// beyond its own), nor is one too small for each part to write
// minSubcompactionTables tables.
func (db *DB) subcompactionBounds(job *compactionJob, files []*manifest.FileMeta, dels rangedel.Spans) [][]byte {
	c := job.c
	n := min(db.opts.MaxConcurrentCompactions, maxSubcompactions)
	if !job.split || c.StartLevel != 0 || c.Kind == compaction.KindManual || n < 2 || len(dels) > 0 {
		return nil
	}
	var out []*manifest.FileMeta
	var total, outBytes int64
	for i, in := range job.inputs {
		total += files[i].Size
		if in.level == c.OutputLevel {
			out = append(out, files[i])
			outBytes += files[i].Size
		}
	}
	n = min(n, len(out), int(total/(minSubcompactionTables*max(db.opts.TargetFileSize, 1))))
	if n < 2 {
		return nil
	}
	slices.SortFunc(out, func(a, b *manifest.FileMeta) int { return ikey.Compare(a.Smallest, b.Smallest) })
	var cuts [][]byte
	var sum int64
	for i, f := range out[1:] {
		sum += out[i].Size // the bytes before f
		if len(cuts) == n-1 {
			break
		}
		if sum*int64(n) >= outBytes*int64(len(cuts)+1) {
			uk := ikey.UserKey(f.Smallest)
			if len(cuts) == 0 || bytes.Compare(uk, cuts[len(cuts)-1]) > 0 {
				cuts = append(cuts, bytes.Clone(uk))
			}
		}
	}
	return cuts
}

// minSubcompactionTables is how many tables of TargetFileSize each part of
// a split compaction has at least to write, by its inputs' size.
const minSubcompactionTables = 4

// boundedIter is a compaction's input limited to the user keys in
// [lo, hi) (nil: no bound), for one part of a split compaction.
type boundedIter struct {
	iterator.Iterator
	lo, hi []byte
}

func (b *boundedIter) First() bool {
	if b.lo == nil {
		return b.within(b.Iterator.First())
	}
	return b.within(b.Iterator.SeekGE(ikey.SeekKey(b.lo, ikey.MaxSeq)))
}

func (b *boundedIter) Next() bool { return b.within(b.Iterator.Next()) }

func (b *boundedIter) within(ok bool) bool {
	return ok && (b.hi == nil || bytes.Compare(ikey.UserKey(b.Iterator.Key()), b.hi) < 0)
}

// compactionIters returns the iterators a compaction merges: one per run of
// disjoint tables, read one table at a time (a level below 0 is one run,
// level 0 is split as reads split it), rather than one per table. Each
// open table holds a readahead buffer and a place in the merging heap: a
// compaction of 4 level-0 tables into 20 of level 6 held 24 buffers (6 MiB
// when they were 256 KiB on the Go heap, which the collector's headroom
// doubled) and stepped a heap of 24 where 2 do.
func (db *DB) compactionIters(inputs []compactInput, files []*manifest.FileMeta) []iterator.Iterator {
	var byLevel [manifest.NumLevels][]*manifest.FileMeta
	for i, in := range inputs {
		byLevel[in.level] = append(byLevel[in.level], files[i])
	}
	var runs [][]*manifest.FileMeta
	for level, fs := range byLevel {
		switch {
		case len(fs) == 0:
		case level == 0:
			runs = append(runs, sortedRuns(fs)...)
		default:
			fs = slices.Clone(fs)
			slices.SortFunc(fs, func(a, b *manifest.FileMeta) int { return ikey.Compare(a.Smallest, b.Smallest) })
			runs = append(runs, fs)
		}
	}
	iters := make([]iterator.Iterator, 0, len(runs))
	for _, run := range runs {
		iters = append(iters, runIter(run, db.openScanTable))
	}
	return iters
}

// openScanTable opens an iterator that reads a table once through, not
// filling the block cache.
func (db *DB) openScanTable(f *manifest.FileMeta) (iterator.Iterator, error) {
	it, err := db.tables.NewScanIter(f.Num, f.Size)
	if err != nil {
		return nil, db.tableOpenError(f, err)
	}
	return it, nil
}

// compactionStop returns what c polls while it runs. Close interrupts a
// manual compaction, whose range may be the whole database, and lets an
// automatic one finish: the picker bounds it to one level's tables and
// their overlap below, and a process that closes sooner than its
// compactions run (kvcli, a short batch job) would otherwise restart the
// same compaction at every Open and never pay its debt.
func (db *DB) compactionStop(c *compaction.Compaction) func() error {
	if c.Kind != compaction.KindManual {
		return nil
	}
	return func() error {
		if db.closing.Load() {
			return errCompactionCanceled
		}
		return nil
	}
}

// compactionOutputs creates a compaction's tables (compaction.Outputs),
// keeping their numbers from deleteObsoleteFiles until they are recorded.
//
// A finished table is synced and closed on a goroutine of its own while
// the compaction writes the next (at most maxTableSyncs at a time), and
// wait collects them before the outputs are recorded: a compaction that
// stopped for each table's fdatasync left its core idle for it, and at 20M
// keys compaction's pace is the writers' pace.
type compactionOutputs struct {
	db    *DB
	job   int      // the compaction's JobID, for the listener
	f     vfs.File // the table being written
	num   uint64
	metas []*manifest.FileMeta
	nums  []uint64 // every table created, for abandon and release
	parts int      // the parts the merge ran in (subcompactionBounds)

	syncs    sync.WaitGroup
	syncSlot chan struct{} // one token per sync under way
	syncMu   sync.Mutex
	syncErr  error // the first sync that failed
}

// maxTableSyncs bounds the finished tables of one compaction that are
// synced at once.
const maxTableSyncs = 4

var _ compaction.Outputs = (*compactionOutputs)(nil)

func (o *compactionOutputs) Create() (*sstable.Writer, error) {
	if err := o.failedSync(); err != nil {
		return nil, err
	}
	o.num = o.db.newOutputNum()
	o.nums = append(o.nums, o.num)
	f, w, err := o.db.createTable(o.num, o.job, "compacting")
	o.f = f
	return w, err
}

func (o *compactionOutputs) Finish(w *sstable.Writer) error {
	f, num := o.f, o.num
	o.f = nil
	meta, err := closeTable(num, w)
	if err != nil {
		f.Close()
		return err
	}
	o.metas = append(o.metas, meta)
	if o.syncSlot == nil {
		o.syncSlot = make(chan struct{}, maxTableSyncs)
	}
	o.syncSlot <- struct{}{}
	o.syncs.Add(1)
	go func() {
		defer o.syncs.Done()
		if err := syncTable(num, f); err != nil {
			o.syncMu.Lock()
			if o.syncErr == nil {
				o.syncErr = err
			}
			o.syncMu.Unlock()
		}
		<-o.syncSlot
	}()
	return o.failedSync()
}

// failedSync returns the error of a table sync that failed, if any.
func (o *compactionOutputs) failedSync() error {
	o.syncMu.Lock()
	defer o.syncMu.Unlock()
	return o.syncErr
}

// wait waits for the syncs of the finished tables and returns the first
// that failed.
func (o *compactionOutputs) wait() error {
	o.syncs.Wait()
	return o.failedSync()
}

// abandon removes the tables of a failed compaction.
func (o *compactionOutputs) abandon() {
	o.syncs.Wait() // every file closed before its removal
	if o.f != nil {
		o.f.Close()
	}
	for _, num := range o.nums {
		o.db.removeTable(o.job, num)
	}
	o.release()
}

// release lets deleteObsoleteFiles judge the outputs like any table.
func (o *compactionOutputs) release() { o.db.releaseOutputNums(o.nums...) }

// yieldEvery is how many entries a flush or compaction moves between
// yields of its processor.
const yieldEvery = 256

// yieldingIter is the input of a flush or compaction: every yieldEvery
// entries it lets other goroutines run. Background work is CPU-bound and,
// on a machine with two cores, a flush and a compaction occupy both; a
// writer that becomes runnable would otherwise wait for the scheduler's
// preemption, up to 10 ms. Yielding costs about 0.2 µs per 256 entries.
type yieldingIter struct {
	iterator.Iterator
	n int
}

func (it *yieldingIter) Next() bool {
	if it.n++; it.n%yieldEvery == 0 {
		runtime.Gosched()
	}
	return it.Iterator.Next()
}
