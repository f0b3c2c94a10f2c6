package shale

import (
	"github.com/cockroachdb/errors"
	"github.com/shale-db/shale/internal/filename"
	"github.com/shale-db/shale/internal/iterator"
	"github.com/shale-db/shale/internal/manifest"
	"github.com/shale-db/shale/sstable"
)

// writeTable writes every entry of it (an internal iterator, closed here)
// to a new table file, syncs the file and the directory, and returns its
// metadata, or nil if it had no entries. The table is not live until an
// edit that adds it has been applied.
func (db *DB) writeTable(it iterator.Iterator) (meta *manifest.FileMeta, err error) {
	defer func() { err = errors.CombineErrors(err, it.Close()) }()
	if !it.First() {
		return nil, it.Err()
	}
	num := db.vs.NewFileNum()
	name := filename.Make(db.dir, filename.Table, num)
	f, err := db.fs.Create(name)
	if err != nil {
		return nil, errors.Wrap(err, "shale: create table")
	}
	defer func() {
		if err != nil {
			f.Close()
			db.fs.Remove(name)
		}
	}()
	w := sstable.NewWriter(f, db.tableWriterOptions())
	for ok := true; ok; ok = it.Next() {
		if err := w.Add(it.Key(), it.Value()); err != nil {
			return nil, errors.Wrapf(err, "shale: write table %06d", num)
		}
	}
	if err := it.Err(); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, errors.Wrapf(err, "shale: write table %06d", num)
	}
	if err := f.Sync(); err != nil {
		return nil, errors.Wrapf(err, "shale: sync table %06d", num)
	}
	if err := f.Close(); err != nil {
		return nil, errors.Wrapf(err, "shale: close table %06d", num)
	}
	if err := db.syncDir(); err != nil {
		return nil, err
	}
	m := w.Meta()
	return &manifest.FileMeta{Num: num, Size: int64(m.Size), Smallest: m.Smallest, Largest: m.Largest}, nil
}

func (db *DB) tableWriterOptions() sstable.WriterOptions {
	o := sstable.WriterOptions{
		BlockSize:       db.opts.BlockSize,
		BloomBitsPerKey: db.opts.BloomBitsPerKey,
		Compression:     sstable.SnappyCompression,
	}
	if db.opts.Compression == NoCompression {
		o.Compression = sstable.NoCompression
	}
	return o
}
