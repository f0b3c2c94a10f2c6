package shale

import (
	"bytes"
	"fmt"
	"path/filepath"

	"github.com/cockroachdb/errors"
	"github.com/shale-db/shale/internal/batchrepr"
	"github.com/shale-db/shale/internal/filename"
	"github.com/shale-db/shale/internal/ikey"
	"github.com/shale-db/shale/internal/iterator"
	"github.com/shale-db/shale/internal/manifest"
	"github.com/shale-db/shale/internal/merging"
	"github.com/shale-db/shale/internal/rangedel"
	"github.com/shale-db/shale/internal/vfs"
	"github.com/shale-db/shale/memtable"
	"github.com/shale-db/shale/sstable"
	"github.com/shale-db/shale/wal"
)

// repairTable is a table being written by a repair.
type repairTable struct {
	r   *repairer
	num uint64
	f   vfs.File
	w   *sstable.Writer
}

func (r *repairer) newTableWriter() (*repairTable, error) {
	num := r.newNum()
	f, err := r.fs.Create(filename.Make(r.dir, filename.Table, num))
	if err != nil {
		return nil, err
	}
	db := DB{opts: r.opts}
	return &repairTable{r: r, num: num, f: f, w: sstable.NewWriter(f, db.tableWriterOptions())}, nil
}

func (t *repairTable) add(k, v []byte) error { return t.w.Add(k, v) }

// abandon closes and removes the table.
func (t *repairTable) abandon() {
	t.f.Close()
	t.r.fs.Remove(filename.Make(t.r.dir, filename.Table, t.num))
}

// finish completes the table and returns its metadata, or nil (and the
// file removed) if it has no entries.
func (t *repairTable) finish() (*manifest.FileMeta, error) {
	if t.w.Meta().Entries == 0 {
		t.w.Close()
		t.abandon()
		return nil, nil
	}
	meta, err := finishTable(t.num, t.f, t.w)
	if err != nil {
		t.r.fs.Remove(filename.Make(t.r.dir, filename.Table, t.num))
		return nil, err
	}
	return meta, nil
}

// replayRecord applies one WAL record to mem; a malformed batch is a drop.
func (r *repairer) replayRecord(lr *LogRepair, mem *memtable.Memtable, rec []byte, off int64) error {
	n, err := batchrepr.ValidateCommitted(rec)
	if err != nil {
		lr.Drops = append(lr.Drops, wal.Drop{File: lr.Name, Offset: off, Bytes: int64(len(rec)),
			Reason: fmt.Sprintf("malformed batch: %v", err)})
		return nil
	}
	if n == 0 {
		return nil
	}
	seq := batchrepr.Seq(rec)
	if err := mem.Apply(rec, seq); err != nil {
		return markCorruption(err)
	}
	lr.Records++
	lr.Entries += int64(n)
	r.lastSeq = max(r.lastSeq, seq+uint64(n)-1)
	return nil
}

// memToTable writes mem to a new table, an input of the merge.
func (r *repairer) memToTable(mem *memtable.Memtable) error {
	if rd := mem.RangeDels(); len(rd) > 0 {
		r.rangeDels = rangedel.Merge(r.rangeDels, rd)
	}
	if mem.Empty() {
		return nil
	}
	tw, err := r.newTableWriter()
	if err != nil {
		return err
	}
	it := mem.NewIter()
	for ok := it.First(); ok; ok = it.Next() {
		if err := tw.add(it.Key(), it.Value()); err != nil {
			tw.abandon()
			return err
		}
	}
	meta, err := tw.finish()
	if err != nil {
		return err
	}
	r.inputs = append(r.inputs, meta)
	return nil
}

// merge merges every input into new tables of about TargetFileSize,
// keeping the newest entry of each user key by sequence number and
// dropping keys whose newest entry is a deletion: with every surviving
// entry in one merge, nothing older can reappear beneath it.
func (r *repairer) merge() (outputs []*manifest.FileMeta, err error) {
	var iters []iterator.Iterator
	var files []vfs.File
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	for _, meta := range r.inputs {
		name := r.tableName(meta.Num)
		f, err := r.fs.Open(filepath.Join(r.dir, name))
		if err != nil {
			return nil, err
		}
		files = append(files, f)
		st, err := f.Stat()
		if err != nil {
			return nil, err
		}
		t, err := sstable.Open(f, st.Size(), sstable.ReaderOptions{FileName: name})
		if err != nil {
			return nil, errors.Wrapf(err, "reopen %s", name)
		}
		iters = append(iters, t.NewScanIter())
	}
	m := merging.New(iters...)
	defer func() { err = errors.CombineErrors(err, m.Close()) }()
	return r.writeMerged(m)
}

// writeMerged writes the newest live entry of each user key of m: not a
// deletion, and not below a range deletion (of any input) that covers it.
// With every entry and range deletion in one merge, the outputs need no
// range deletions.
func (r *repairer) writeMerged(m iterator.Iterator) ([]*manifest.FileMeta, error) {
	var outputs []*manifest.FileMeta
	var tw *repairTable
	var prev []byte
	first := true
	for ok := m.First(); ok; ok = m.Next() {
		k := m.Key()
		uk := ikey.UserKey(k)
		if !first && bytes.Equal(uk, prev) {
			continue // an older version
		}
		prev, first = append(prev[:0], uk...), false
		if ikey.KindOf(k) == ikey.KindDelete || ikey.Seq(k) < r.rangeDels.DeletedAt(uk, ikey.MaxSeq) {
			continue
		}
		if tw == nil {
			var err error
			if tw, err = r.newTableWriter(); err != nil {
				return nil, err
			}
		}
		if err := tw.add(k, m.Value()); err != nil {
			tw.abandon()
			return nil, err
		}
		r.rep.Keys++
		if int64(tw.w.EstimatedSize()) >= r.opts.TargetFileSize {
			meta, err := tw.finish()
			if err != nil {
				return nil, err
			}
			outputs, tw = append(outputs, meta), nil
		}
	}
	if err := m.Err(); err != nil {
		if tw != nil {
			tw.abandon()
		}
		return nil, err
	}
	if tw != nil {
		meta, err := tw.finish()
		if err != nil {
			return nil, err
		}
		outputs = append(outputs, meta)
	}
	return outputs, nil
}
