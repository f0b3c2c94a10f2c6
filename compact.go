package shale

import (
	"bytes"

	"github.com/cockroachdb/errors"
	"github.com/shale-db/shale/compaction"
	"github.com/shale-db/shale/internal/filename"
	"github.com/shale-db/shale/internal/ikey"
	"github.com/shale-db/shale/internal/iterator"
	"github.com/shale-db/shale/internal/manifest"
	"github.com/shale-db/shale/internal/merging"
	"github.com/shale-db/shale/internal/vfs"
	"github.com/shale-db/shale/sstable"
)

// targetFileSize is the size at which a compaction starts a new table.
const targetFileSize = 2 << 20

// compactRequest asks the background loop for a manual compaction.
type compactRequest struct {
	start, end []byte
	done       chan error
}

// Compact flushes the memtable, then merges every table that holds keys in
// [start, end) (a nil bound is open) into new tables in the deepest level
// those keys reach (at least level 1), dropping overwritten and deleted
// data that no open snapshot can see. The range grows to the whole key
// ranges of the tables it touches. It returns when the new tables are
// recorded in the MANIFEST; the old ones are deleted once no iterator reads
// them. Writes go on meanwhile: a memtable that fills is flushed after at
// most a MiB more of the compaction's input.
//
// A start after end is an error; start == end is an empty range.
//
// Until leveled compaction runs in the background, Compact is how a
// database that received many writes gets its level-0 tables merged.
func (db *DB) Compact(start, end []byte) error {
	if start != nil && end != nil && bytes.Compare(start, end) > 0 {
		return errors.Newf("shale: compact: start %q is after end %q", start, end)
	}
	if db.opts.ReadOnly {
		return db.readOnlyError()
	}
	if start != nil && end != nil && bytes.Compare(start, end) >= 0 {
		return db.checkOpen() // an empty range
	}
	if err := db.Flush(); err != nil {
		return err
	}
	req := compactRequest{start: bytes.Clone(start), end: bytes.Clone(end), done: make(chan error, 1)}
	select {
	case db.compactCh <- req:
		return <-req.done // the loop answers every request it takes
	case <-db.bgDone:
		return ErrClosed
	}
}

// compactInput is one input table of a compaction.
type compactInput struct {
	level int
	f     *manifest.FileMeta
}

// pickRange returns every table of v, at any level, that meets [start,
// end), widened until it covers the inputs' whole key ranges, and the level
// for the output.
func pickRange(v *manifest.Version, start, end []byte) ([]compactInput, int) {
	lo, hi := start, end
	for {
		var in []compactInput
		outLevel := 1
		newLo, newHi := lo, hi
		for level := range manifest.NumLevels {
			for _, f := range v.Overlaps(level, lo, hi) {
				in = append(in, compactInput{level, f})
				outLevel = max(outLevel, level)
				if s := ikey.UserKey(f.Smallest); newLo != nil && bytes.Compare(s, newLo) < 0 {
					newLo = s
				}
				if l := ikey.UserKey(f.Largest); newHi != nil && bytes.Compare(l, newHi) >= 0 {
					newHi = append(bytes.Clone(l), 0) // just past l
				}
			}
		}
		if bytes.Equal(newLo, lo) && bytes.Equal(newHi, hi) {
			return in, outLevel
		}
		lo, hi = newLo, newHi
	}
}

// compactRange runs a manual compaction; it runs on the background loop.
func (db *DB) compactRange(start, end []byte) error {
	db.mu.Lock()
	closed, bgErr := db.mu.closed, db.mu.bgErr
	smallest := db.mu.snapshots.oldest(db.visibleSeq.Load())
	db.mu.Unlock()
	switch {
	case closed:
		return ErrClosed
	case bgErr != nil:
		return bgErr
	}
	v := db.vs.Current()
	inputs, outLevel := pickRange(v, start, end)
	v.Unref() // the inputs stay live in the current version until the edit
	if len(inputs) == 0 {
		return nil
	}
	iters := make([]iterator.Iterator, 0, len(inputs))
	for _, in := range inputs {
		it, err := db.openTable(in.f)
		if err != nil {
			for _, it := range iters {
				it.Close()
			}
			return err
		}
		iters = append(iters, it)
	}
	out := &compactionOutputs{db: db}
	filter := &compaction.Filter{SmallestSnapshot: smallest, Bottommost: true}
	in := &flushingIter{Iterator: merging.New(iters...), flush: db.flushImmutable}
	err := compaction.Run(in, filter, targetFileSize, out)
	if err == nil {
		err = db.syncDir()
	}
	if err != nil {
		out.abandon()
		return markCorruption(errors.Wrap(err, "shale: compact"))
	}
	edit := &manifest.VersionEdit{}
	for _, in := range inputs {
		edit.DeleteFile(in.level, in.f.Num)
	}
	for _, m := range out.metas {
		edit.AddFile(outLevel, m)
	}
	err = db.vs.LogAndApply(edit)
	out.release()
	if err != nil {
		// Whether the edit reached the MANIFEST is unknown: stop writes,
		// as a failed flush does.
		return db.setBackgroundError(errors.Wrap(err, "shale: compact"))
	}
	db.deleteObsoleteFiles()
	return nil
}

// compactionOutputs creates a compaction's tables (compaction.Outputs),
// keeping their numbers from deleteObsoleteFiles until they are recorded.
type compactionOutputs struct {
	db    *DB
	f     vfs.File // the table being written
	num   uint64
	metas []*manifest.FileMeta
	nums  []uint64 // every table created, for abandon and release
}

var _ compaction.Outputs = (*compactionOutputs)(nil)

func (o *compactionOutputs) Create() (*sstable.Writer, error) {
	o.num = o.db.vs.NewFileNum()
	o.db.mu.Lock()
	o.db.mu.pendingOutputs[o.num] = struct{}{}
	o.db.mu.Unlock()
	o.nums = append(o.nums, o.num)
	f, w, err := o.db.createTable(o.num)
	o.f = f
	return w, err
}

func (o *compactionOutputs) Finish(w *sstable.Writer) error {
	f := o.f
	o.f = nil
	meta, err := finishTable(o.num, f, w)
	if err != nil {
		return err
	}
	o.metas = append(o.metas, meta)
	return nil
}

// flushEvery is how many bytes of input a compaction reads between checks
// for an immutable memtable to flush.
const flushEvery = 1 << 20

// flushingIter is a compaction's input: every flushEvery bytes read, it
// flushes the immutable memtable, if there is one, so that writes waiting
// for room do not wait for the whole compaction (the compaction runs on
// the loop that flushes). Run only moves it forward.
type flushingIter struct {
	iterator.Iterator
	flush func()
	read  int
}

func (it *flushingIter) Next() bool {
	if it.read += len(it.Key()) + len(it.Value()); it.read >= flushEvery {
		it.read = 0
		it.flush()
	}
	return it.Iterator.Next()
}

// abandon removes the tables of a failed compaction.
func (o *compactionOutputs) abandon() {
	if o.f != nil {
		o.f.Close()
	}
	for _, num := range o.nums {
		o.db.fs.Remove(filename.Make(o.db.dir, filename.Table, num))
	}
	o.release()
}

// release lets deleteObsoleteFiles judge the outputs like any table.
func (o *compactionOutputs) release() {
	o.db.mu.Lock()
	for _, num := range o.nums {
		delete(o.db.mu.pendingOutputs, num)
	}
	o.db.mu.Unlock()
}
