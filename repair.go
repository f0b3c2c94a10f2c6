package shale

import (
	"cmp"
	stderrors "errors"
	"io"
	"path/filepath"
	"slices"

	"github.com/cockroachdb/errors"
	"github.com/shale-db/shale/internal/filename"
	"github.com/shale-db/shale/internal/ikey"
	"github.com/shale-db/shale/internal/manifest"
	"github.com/shale-db/shale/internal/rangedel"
	"github.com/shale-db/shale/internal/vfs"
	"github.com/shale-db/shale/memtable"
	"github.com/shale-db/shale/sstable"
	"github.com/shale-db/shale/wal"
)

// Repair brings back what can be read of a damaged database in dir, as
// LevelDB's RepairDB does, and returns what it kept and dropped. It
// refuses a directory that a DB has open (an error matching ErrLocked).
//
// Every table is read entry by entry: the entries of every intact block
// are kept, a table with damaged blocks is rewritten from its intact ones,
// and a table that cannot be read at all is dropped. Every write-ahead log
// is replayed in SkipCorrupt mode, whatever opts.Recovery says. The old
// MANIFEST is not trusted (it may be the damage): unless every table was
// intact, no two overlap and no log held anything, in which case they are
// kept as they are, everything that survived is merged, keeping the
// newest version of each key by sequence number (a key whose newest entry
// is a deletion stays deleted), into new tables in the last level. A new
// MANIFEST and CURRENT then name them. Damaged and unreadable files and
// the old MANIFESTs are moved to the lost/ subdirectory, never deleted;
// so are, unread, the tables that a MANIFEST in the directory records as
// replaced by a compaction (see RepairReport.Obsolete).
//
// Repairing a repaired directory rewrites nothing and loses nothing.
func Repair(dir string, opts *Options) (RepairReport, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return RepairReport{}, err
	}
	fsys := vfs.OS()
	if o.FS != nil {
		fsys = o.FS
	}
	return repair(dir, o, fsys)
}

// repairer holds a repair's state.
type repairer struct {
	fs   vfs.FS
	dir  string
	opts Options
	rep  RepairReport

	next    uint64 // the next file number to allocate
	lastSeq uint64 // the largest sequence number seen
	intact  []*manifest.FileMeta
	inputs  []*manifest.FileMeta // tables to merge: intact, rewritten, from logs
	lost    []string             // names to move to lost/
	remove  []string             // names to delete once the MANIFEST is durable
	// rangeDels are the range deletions of every table and log read: a
	// repair that finds any merges everything, applying them.
	rangeDels rangedel.Spans
}

func repair(dir string, o Options, fsys vfs.FS) (RepairReport, error) {
	if _, err := fsys.Stat(dir); err != nil {
		return RepairReport{}, errors.Wrap(err, "shale: repair")
	}
	// Checked before the lock, whose file a directory that holds no
	// database must not gain; run checks again under it.
	names, err := fsys.List(dir)
	if err != nil {
		return RepairReport{}, errors.Wrap(err, "shale: repair")
	}
	if !holdsDatabaseFiles(names) {
		return RepairReport{}, errors.Wrap(nothingToRepair(dir), "shale: repair")
	}
	l, err := fsys.Lock(filename.Make(dir, filename.Lock, 0), false)
	if err != nil {
		if stderrors.Is(err, vfs.ErrLocked) {
			return RepairReport{}, &lockedError{dir: dir, here: stderrors.Is(err, vfs.ErrHeldHere)}
		}
		return RepairReport{}, errors.Wrap(err, "shale: repair: lock database")
	}
	defer l.Close()
	r := &repairer{fs: fsys, dir: dir, opts: o}
	if err := r.run(); err != nil {
		return r.rep, errors.Wrap(err, "shale: repair")
	}
	return r.rep, nil
}

// run is the repair's steps: scan the tables, replay the logs, place what
// survives, record it, then move and remove the old files.
func (r *repairer) run() error {
	names, err := r.fs.List(r.dir)
	if err != nil {
		return err
	}
	var tables, logs, manifests []string
	for _, name := range names {
		t, num, ok := filename.Parse(name)
		if !ok {
			continue
		}
		if num > filename.MaxStartNum {
			return errors.Newf("repair: %s is numbered above %d, the largest file number a database opens with; move it out of %s first",
				name, uint64(filename.MaxStartNum), r.dir)
		}
		r.next = max(r.next, num+1)
		switch t {
		case filename.Table:
			tables = append(tables, name)
		case filename.Log:
			logs = append(logs, name)
		case filename.Manifest:
			manifests = append(manifests, name)
		}
	}
	if len(tables)+len(logs)+len(manifests) == 0 {
		return nothingToRepair(r.dir)
	}
	r.next = max(r.next, 2)
	obsolete, flushed, err := r.obsoleteFiles(manifests)
	if err != nil {
		return err
	}
	logs = r.skipFlushedLogs(logs, flushed)
	live := tables[:0:0]
	for _, name := range tables {
		if _, num, _ := filename.Parse(name); obsolete[num] {
			r.rep.Obsolete = append(r.rep.Obsolete, name)
			r.lost = append(r.lost, name)
			continue
		}
		live = append(live, name)
	}
	tables = live
	r.noteMissing(tables)
	for _, name := range tables {
		if err := r.scanTable(name); err != nil {
			return err
		}
	}
	for _, name := range logs { // List sorts; numbers have fixed width
		if err := r.replayLog(name); err != nil {
			return err
		}
	}
	outputs, err := r.place()
	if err != nil {
		return err
	}
	r.lost = append(r.lost, manifests...)
	return r.commit(outputs)
}

// obsoleteFiles returns the tables that the directory's MANIFESTs record
// as deleted and not added back: the inputs of a compaction, left on disk
// by a crash before their deletion (or held by an iterator at the time).
// Their versions are older than the compaction's outputs, yet the bottom
// level zeroes its outputs' sequence numbers: merged by sequence number,
// the inputs' would win, bringing back overwritten and deleted values. It
// also returns the logs the MANIFESTs record as flushed, for the same
// reason (see skipFlushedLogs). A MANIFEST counts up to its first damage;
// one that cannot be read counts for nothing, and then such tables and
// logs are merged like the others.
//
// A MANIFEST that names a comparator other than LevelDB's bytewise one is
// an error, before anything is changed: its tables are in another key
// order, which a repair into bytewise tables would scramble for good.
func (r *repairer) obsoleteFiles(manifests []string) (map[uint64]bool, flushedLogs, error) {
	type numbered struct {
		name string
		num  uint64
	}
	var ms []numbered
	for _, name := range manifests {
		_, num, _ := filename.Parse(name)
		ms = append(ms, numbered{name, num})
	}
	slices.SortFunc(ms, func(a, b numbered) int { return cmp.Compare(a.num, b.num) })
	obsolete := map[uint64]bool{}
	var flushed flushedLogs
	for _, m := range ms {
		var order error
		_ = manifest.ReadEdits(r.fs, filepath.Join(r.dir, m.name), func(e *manifest.VersionEdit) error {
			if e.HasComparator && e.Comparator != manifest.BytewiseComparator {
				order = errors.Newf("%s names comparator %q: the tables are not in the bytewise key order (%s) that shale reads and writes, and cannot be repaired",
					m.name, e.Comparator, manifest.BytewiseComparator)
				return order
			}
			// An edit's deletions come before its additions: a table
			// moved to another level is deleted from one and added to
			// the other in the same edit.
			for _, d := range e.DeletedFiles {
				obsolete[d.Num] = true
			}
			for _, f := range e.NewFiles {
				delete(obsolete, f.Meta.Num)
			}
			if e.HasLogNumber {
				flushed.below = max(flushed.below, e.LogNumber)
			}
			if e.HasPrevLogNumber {
				flushed.prev = e.PrevLogNumber
			}
			return nil
		})
		if order != nil {
			return nil, flushed, order
		}
	}
	return obsolete, flushed, nil
}

// flushedLogs says which logs a MANIFEST records as flushed to tables:
// those numbered below below, except prev (old LevelDB's previous log,
// still needed while set).
type flushedLogs struct{ below, prev uint64 }

// skipFlushedLogs returns logs without those a MANIFEST records as
// flushed, which it lists in the report as obsolete and moves to lost/
// unread. Such a log is left on disk by a crash before its deletion; its
// writes are in tables, and if a compaction has since carried them, or
// newer values of their keys, to the last level with sequence number 0,
// replaying it would bring back values overwritten or deleted since.
func (r *repairer) skipFlushedLogs(logs []string, flushed flushedLogs) []string {
	live := logs[:0:0]
	for _, name := range logs {
		if _, num, _ := filename.Parse(name); num < flushed.below && num != flushed.prev {
			r.rep.ObsoleteLogs = append(r.rep.ObsoleteLogs, name)
			r.lost = append(r.lost, name)
			continue
		}
		live = append(live, name)
	}
	return live
}

func nothingToRepair(dir string) error {
	return errors.Newf("no tables, logs or MANIFEST in %s: nothing to repair", dir)
}

// holdsDatabaseFiles reports whether names include a table, a log or a
// MANIFEST.
func holdsDatabaseFiles(names []string) bool {
	for _, name := range names {
		if t, _, ok := filename.Parse(name); ok && (t == filename.Table || t == filename.Log || t == filename.Manifest) {
			return true
		}
	}
	return false
}

// place decides the final tables: the intact ones as they are if nothing
// else survived and they do not overlap, else a merge of every input.
func (r *repairer) place() ([]*manifest.FileMeta, error) {
	if len(r.inputs) == len(r.intact) && disjoint(r.intact) && len(r.rangeDels) == 0 {
		slices.SortFunc(r.intact, func(a, b *manifest.FileMeta) int { return ikey.Compare(a.Smallest, b.Smallest) })
		for _, f := range r.intact {
			r.rep.Keys += int64(f.Entries)
		}
		return r.intact, nil
	}
	r.rep.Rewritten = true
	outputs, err := r.merge()
	if err != nil {
		return nil, err
	}
	for _, f := range r.inputs {
		r.remove = append(r.remove, r.tableName(f.Num))
	}
	return outputs, nil
}

// disjoint reports whether no two tables share a user key.
func disjoint(files []*manifest.FileMeta) bool {
	s := slices.Clone(files)
	slices.SortFunc(s, func(a, b *manifest.FileMeta) int { return ikey.Compare(a.Smallest, b.Smallest) })
	for i := 1; i < len(s); i++ {
		if string(ikey.UserKey(s[i-1].Largest)) >= string(ikey.UserKey(s[i].Smallest)) {
			return false
		}
	}
	return true
}

// commit writes the new MANIFEST and CURRENT, then moves the damaged
// files and old MANIFESTs to lost/ and removes what the merge replaced.
func (r *repairer) commit(outputs []*manifest.FileMeta) error {
	v := new(manifest.Version)
	v.Levels[manifest.NumLevels-1] = outputs
	if err := v.Check(); err != nil {
		return err
	}
	for _, f := range outputs {
		r.rep.Outputs = append(r.rep.Outputs, r.tableName(f.Num))
	}
	num := r.newNum()
	err := manifest.WriteState(r.fs, r.dir, manifest.DirState{
		Version: v, LogNumber: num + 1, LastSequence: r.lastSeq,
		ManifestNum: num, NextFileNumber: num + 2,
	})
	if err != nil {
		return err
	}
	r.rep.Manifest = filename.Name(filename.Manifest, num)
	if err := r.moveToLost(); err != nil {
		return err
	}
	for _, name := range r.remove {
		if err := r.fs.Remove(filepath.Join(r.dir, name)); err != nil {
			return errors.Wrapf(err, "remove %s", name)
		}
	}
	return syncDirOf(r.fs, r.dir)
}

// moveToLost moves r.lost into dir/lost, durably.
func (r *repairer) moveToLost() error {
	if len(r.lost) == 0 {
		return nil
	}
	lost := filepath.Join(r.dir, "lost")
	if err := r.fs.MkdirAll(lost, 0o755); err != nil {
		return errors.Wrap(err, "create lost/")
	}
	if err := syncDirOf(r.fs, r.dir); err != nil {
		return err
	}
	for _, name := range r.lost {
		if err := r.fs.Rename(filepath.Join(r.dir, name), filepath.Join(lost, name)); err != nil {
			return errors.Wrapf(err, "move %s to lost/", name)
		}
		r.rep.MovedToLost = append(r.rep.MovedToLost, name)
	}
	return syncDirOf(r.fs, lost)
}

func syncDirOf(fsys vfs.FS, dir string) error {
	d, err := fsys.OpenDir(dir)
	if err != nil {
		return errors.Wrap(err, "open directory")
	}
	err = d.Sync()
	return errors.CombineErrors(errors.Wrap(err, "sync directory"), d.Close())
}

func (r *repairer) newNum() uint64 {
	n := r.next
	r.next++
	return n
}

// tableName is the name table num has in the directory (.ldb, or the
// .sst it was found under).
func (r *repairer) tableName(num uint64) string {
	name := filename.Name(filename.Table, num)
	for _, t := range r.rep.Tables {
		if _, n, _ := filename.Parse(t.Name); n == num {
			return t.Name
		}
	}
	return name
}

// scanTable reads table name whole: an intact table becomes an input as
// it is; one with damaged blocks is rewritten from its intact blocks and
// moved to lost/; one that cannot be opened is moved to lost/.
func (r *repairer) scanTable(name string) error {
	tr := TableRepair{Name: name}
	_, num, _ := filename.Parse(name)
	meta, err := r.salvageTable(name, num, &tr, nil)
	switch {
	case err != nil && isReadFailure(err):
		return err
	case err != nil:
		tr.Unreadable, tr.Err = true, err.Error()
		r.lost = append(r.lost, name)
	case len(tr.Drops) > 0 || tr.Err != "":
		// Rewrite from the intact blocks.
		tr2 := TableRepair{Name: name}
		meta, err = r.rewriteTable(name, num, &tr2)
		if err != nil {
			return err
		}
		r.lost = append(r.lost, name)
		if meta != nil {
			r.inputs = append(r.inputs, meta)
		}
	case meta != nil:
		r.intact = append(r.intact, meta)
		r.inputs = append(r.inputs, meta)
	default: // an intact table without entries
		r.remove = append(r.remove, name)
	}
	r.rep.Tables = append(r.rep.Tables, tr)
	return nil
}

// isReadFailure reports whether err is a failure to read rather than
// damage: the repair stops instead of dropping the file.
func isReadFailure(err error) bool {
	return !stderrors.Is(err, sstable.ErrCorrupt) && !stderrors.Is(err, sstable.ErrUnsupported) &&
		!stderrors.Is(err, io.ErrUnexpectedEOF)
}

// salvageTable reads table name and passes the entries of its intact
// blocks to add (if not nil), filling tr; it returns the metadata of the
// entries kept (nil if none), numbered num.
func (r *repairer) salvageTable(name string, num uint64, tr *TableRepair, add func([]sstable.Entry) error) (*manifest.FileMeta, error) {
	f, err := r.fs.Open(filepath.Join(r.dir, name))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	t, err := sstable.Open(f, st.Size(), sstable.ReaderOptions{FileName: name})
	if err != nil {
		return nil, err
	}
	if t.FilterErr() != nil {
		tr.Err = "filter block damaged: " + t.FilterErr().Error()
	}
	if rd := t.RangeDels(); len(rd) > 0 {
		// Applied by the merge, which every range deletion forces.
		r.rangeDels = rangedel.Merge(r.rangeDels, rd)
	}
	meta := &manifest.FileMeta{Num: num, Size: st.Size(), HasStats: true}
	blocks, err := t.Salvage(func(es []sstable.Entry) error {
		r.noteEntries(meta, es)
		if add != nil {
			return add(es)
		}
		return nil
	})
	r.noteBlocks(tr, blocks)
	if err != nil && isReadFailure(err) { // a read failure, or add's
		return nil, err
	}
	if err != nil { // the index hides the rest: keep what was read
		tr.Err = err.Error()
		tr.Drops = append(tr.Drops, BlockDrop{Reason: "index block damaged: the blocks after this point are unknown: " + err.Error()})
	}
	tr.Entries = int64(meta.Entries)
	if meta.Entries == 0 {
		return nil, nil
	}
	return meta, nil
}

// noteEntries extends meta's key range and stats over es.
func (r *repairer) noteEntries(meta *manifest.FileMeta, es []sstable.Entry) {
	if meta.Smallest == nil {
		meta.Smallest = es[0].Key
	}
	meta.Largest = es[len(es)-1].Key
	for _, e := range es {
		meta.Entries++
		seq := ikey.Seq(e.Key)
		meta.LargestSeq = max(meta.LargestSeq, seq)
		r.lastSeq = max(r.lastSeq, seq)
		if ikey.KindOf(e.Key) == ikey.KindDelete {
			meta.Deletions++
		}
	}
}

// noteBlocks records the blocks of a table scan in tr.
func (r *repairer) noteBlocks(tr *TableRepair, blocks []sstable.BlockInfo) {
	tr.Blocks, tr.Bytes, tr.Drops = len(blocks), 0, nil
	var after string
	for _, b := range blocks {
		upTo := ""
		if ikey.Valid(b.IndexKey) {
			upTo = string(ikey.UserKey(b.IndexKey))
		}
		if b.Err != nil {
			tr.Drops = append(tr.Drops, BlockDrop{
				Offset: int64(b.Handle.Offset), Bytes: int64(b.Handle.Length) + sstable.TrailerLen,
				After: after, UpTo: upTo, Reason: b.Err.Error(),
			})
		} else {
			tr.Bytes += int64(b.Handle.Length) + sstable.TrailerLen
		}
		after = upTo
	}
}

// rewriteTable writes the intact entries of table name into a new table
// and returns its metadata (nil if nothing survived).
func (r *repairer) rewriteTable(name string, num uint64, tr *TableRepair) (*manifest.FileMeta, error) {
	tw, err := r.newTableWriter()
	if err != nil {
		return nil, err
	}
	_, err = r.salvageTable(name, num, tr, func(es []sstable.Entry) error {
		for _, e := range es {
			if err := tw.add(e.Key, e.Value); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		tw.abandon()
		return nil, err
	}
	return tw.finish()
}

// replayLog replays WAL name in SkipCorrupt mode into tables (inputs).
func (r *repairer) replayLog(name string) error {
	lr := LogRepair{Name: name}
	f, err := r.fs.Open(filepath.Join(r.dir, name))
	if err != nil {
		return err
	}
	defer f.Close()
	rd := wal.NewReader(f, wal.Named(name), wal.OnDrop(func(d wal.Drop) {
		if d.TornTail {
			lr.TornTail = &d
		} else {
			lr.Drops = append(lr.Drops, d)
		}
	}))
	mem := memtable.New()
	for {
		rec, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return errors.Wrapf(err, "read %s", name)
		}
		if err := r.replayRecord(&lr, mem, rec, rd.LastRecordOffset()); err != nil {
			return err
		}
		if mem.ApproximateSize() >= r.opts.WriteBufferSize {
			if err := r.memToTable(mem); err != nil {
				return err
			}
			mem = memtable.New()
		}
	}
	if err := r.memToTable(mem); err != nil {
		return err
	}
	if len(lr.Drops) > 0 {
		r.lost = append(r.lost, name)
	} else {
		r.remove = append(r.remove, name)
	}
	r.rep.Logs = append(r.rep.Logs, lr)
	return nil
}

// noteMissing lists in the report the tables that the old MANIFEST names
// (if it can still be read) but the directory lacks.
func (r *repairer) noteMissing(tables []string) {
	vs, err := manifest.Load(r.fs, r.dir, true)
	if err != nil {
		return // the MANIFEST is part of the damage
	}
	defer vs.Close()
	v := vs.Current()
	defer v.Unref()
	have := map[uint64]bool{}
	for _, name := range tables {
		_, num, _ := filename.Parse(name)
		have[num] = true
	}
	for _, files := range v.Levels {
		for _, f := range files {
			if !have[f.Num] {
				r.rep.Missing = append(r.rep.Missing, filename.Name(filename.Table, f.Num))
			}
			delete(have, f.Num)
		}
	}
	// Tables the MANIFEST does not know mean it is older than they are
	// (truncated, or an older copy): its missing tables were most likely
	// compacted away, not lost.
	r.rep.StaleManifest = len(have) > 0 && len(r.rep.Missing) > 0
}
