package shale

import (
	"github.com/cockroachdb/errors"
	"github.com/shale-db/shale/internal/filename"
	"github.com/shale-db/shale/internal/iterator"
	"github.com/shale-db/shale/internal/manifest"
	"github.com/shale-db/shale/internal/rangedel"
	"github.com/shale-db/shale/internal/vfs"
	"github.com/shale-db/shale/sstable"
)

// writeTable writes every entry of it (an internal iterator, closed here)
// and the range deletions rdels to a new table file, syncs the file and
// the directory, and returns its metadata, or nil if it had neither. The table is not live until an
// edit that adds it has been applied. num is its number, already among
// the pending outputs, or 0 to take one.
func (db *DB) writeTable(job int, it iterator.Iterator, rdels rangedel.Spans, num uint64) (meta *manifest.FileMeta, err error) {
	defer func() { err = errors.CombineErrors(err, it.Close()) }()
	ok := it.First()
	if !ok && (len(rdels) == 0 || it.Err() != nil) {
		if num != 0 {
			db.releaseOutputNums(num)
		}
		return nil, it.Err()
	}
	if num == 0 {
		num = db.newOutputNum()
	}
	f, w, err := db.createTable(num, job, "flushing")
	if err != nil {
		db.releaseOutputNums(num)
		return nil, err
	}
	for ; ok && err == nil; ok = it.Next() {
		err = w.Add(it.Key(), it.Value())
	}
	if err == nil {
		err = it.Err()
	}
	w.AddRangeDels(rdels)
	if err == nil {
		meta, err = finishTable(num, f, w)
	}
	if err == nil {
		err = db.syncDir()
	}
	if err != nil {
		f.Close() // a no-op error if finishTable closed it
		db.removeTable(job, num)
		db.releaseOutputNums(num)
		return nil, errors.Wrapf(err, "shale: write table %06d", num)
	}
	return meta, nil
}

// newOutputNum allocates the number of a table about to be written and
// keeps deleteObsoleteFiles from taking the table for a leftover until
// releaseOutputNums: it is in no version until its edit is applied.
func (db *DB) newOutputNum() uint64 {
	num := db.vs.NewFileNum()
	db.mu.Lock()
	db.mu.pendingOutputs[num] = struct{}{}
	db.mu.Unlock()
	return num
}

// releaseOutputNums lets deleteObsoleteFiles judge the tables like any
// other: their edit has been applied, or they were removed.
func (db *DB) releaseOutputNums(nums ...uint64) {
	db.mu.Lock()
	for _, num := range nums {
		delete(db.mu.pendingOutputs, num)
	}
	db.mu.Unlock()
}

// releaseOutputs is releaseOutputNums for a table's metadata (nil: none).
func (db *DB) releaseOutputs(meta *manifest.FileMeta) {
	if meta != nil {
		db.releaseOutputNums(meta.Num)
	}
}

// discardTable removes a table that no MANIFEST edit names (its flush was
// abandoned before its edit was written) and releases its number (nil:
// none).
func (db *DB) discardTable(meta *manifest.FileMeta) {
	if meta == nil {
		return
	}
	db.tables.Evict(meta.Num)
	if err := db.removeTable(0, meta.Num); err != nil {
		db.opts.Logger.Warn("shale: remove abandoned table", "table", meta.Num, "err", err)
	}
	db.releaseOutputNums(meta.Num)
}

// removeTable removes table file num and tells the listener.
func (db *DB) removeTable(job int, num uint64) error {
	name := filename.Make(db.dir, filename.Table, num)
	err := db.fs.Remove(name)
	db.events.tableDeleted(TableDeleteInfo{JobID: job, Path: name, FileNum: num, Err: err})
	return err
}

// removeLog removes WAL number num and tells the listener.
func (db *DB) removeLog(job int, num uint64) error {
	name := filename.Make(db.dir, filename.Log, num)
	err := db.fs.Remove(name)
	db.events.walDeleted(WALDeleteInfo{JobID: job, Path: name, FileNum: num, Err: err})
	return err
}

// createTable creates table file num and a writer over it, for job
// (reason: "flushing" or "compacting").
func (db *DB) createTable(num uint64, job int, reason string) (vfs.File, *sstable.Writer, error) {
	name := filename.Make(db.dir, filename.Table, num)
	f, err := db.fs.Create(name)
	if err != nil {
		return nil, nil, errors.Wrapf(err, "shale: create table %06d", num)
	}
	db.events.tableCreated(TableCreateInfo{JobID: job, Reason: reason, Path: name, FileNum: num})
	return f, sstable.NewWriter(f, db.tableWriterOptions()), nil
}

// finishTable completes table num after its last entry: it closes w, makes
// f durable and closes it, and returns the table's metadata. The caller
// syncs the directory.
func finishTable(num uint64, f vfs.File, w *sstable.Writer) (*manifest.FileMeta, error) {
	meta, err := closeTable(num, w)
	if err != nil {
		f.Close()
		return nil, err
	}
	if err := syncTable(num, f); err != nil {
		return nil, err
	}
	return meta, nil
}

// closeTable writes the end of table num (its last block, index, filter
// and footer) through w and returns the table's metadata. The file is
// neither synced nor closed.
func closeTable(num uint64, w *sstable.Writer) (*manifest.FileMeta, error) {
	if err := w.Close(); err != nil {
		return nil, errors.Wrapf(err, "shale: finish table %06d", num)
	}
	m := w.Meta()
	return &manifest.FileMeta{
		Num: num, Size: int64(m.Size), Smallest: m.Smallest, Largest: m.Largest,
		Entries: uint64(m.Entries + m.RangeDels), Deletions: uint64(m.Deletions + m.RangeDels),
		LargestSeq: m.LargestSeq, HasStats: true, RangeDels: m.RangeDels > 0,
	}, nil
}

// syncTable makes table file f (number num), written in full, durable and
// closes it.
func syncTable(num uint64, f vfs.File) error {
	err := f.Sync()
	if err = errors.CombineErrors(err, f.Close()); err != nil {
		return errors.Wrapf(err, "shale: finish table %06d", num)
	}
	return nil
}

func (db *DB) tableWriterOptions() sstable.WriterOptions {
	o := sstable.WriterOptions{
		BlockSize:       db.opts.BlockSize,
		RestartInterval: db.opts.BlockRestartInterval,
		BloomBitsPerKey: db.opts.BloomBitsPerKey,
		Compression:     sstable.SnappyCompression,
	}
	if db.opts.Compression == NoCompression {
		o.Compression = sstable.NoCompression
	}
	return o
}
