package sstable

import (
	"bytes"
	"fmt"

	"github.com/shale-db/shale/internal/ikey"
	"github.com/shale-db/shale/internal/rangedel"
)

// RangeDelMetaKey is the metaindex key of a table's range-deletion block,
// RocksDB's name for the same block. Part of the format.
//
// The block is an ordinary block (restart interval 1) of entries
//
//	key:   internal key (start, seq, ikey.KindRangeDelete)
//	value: end (exclusive)
//
// in internal-key order: fragmented, so that two entries' ranges either
// coincide or do not overlap (a range deleted at several sequence numbers
// has one entry for each, newest first). LevelDB and goleveldb skip a
// metaindex entry they do not know: a table with this block would read as
// if nothing were deleted, which is why the directory that holds one
// carries a mark they refuse (see the shale package).
//
//	  start "b"       end "d"
//	b#9,RANGEDEL -> d        the keys in [b, d) below seq 9 and below 4
//	b#4,RANGEDEL -> d
//	d#4,RANGEDEL -> f        the keys in [d, f) below seq 4
const RangeDelMetaKey = "rocksdb.range_del"

// AddRangeDels gives the writer the table's range deletions, fragmented;
// the block is written at Close. Call it at most once, before Close.
func (w *Writer) AddRangeDels(s rangedel.Spans) {
	if len(s) == 0 || w.err != nil {
		return
	}
	w.rangeDels = s
	for _, sp := range s {
		w.meta.RangeDels += len(sp.Seqs)
		w.meta.LargestSeq = max(w.meta.LargestSeq, sp.Seqs[0])
	}
}

// writeRangeDels writes the range-deletion block and adds its metaindex
// entry; it widens the table's bounds to its ranges: the smallest key to
// the first start's newest entry, the largest to the last end with the
// largest sequence number, a key that sorts before every entry of the end
// key (the end is exclusive).
func (w *Writer) writeRangeDels(meta *blockWriter) error {
	if len(w.rangeDels) == 0 {
		return nil
	}
	var b blockWriter
	b.restartInterval = 1
	var k []byte
	for _, t := range w.rangeDels.Tombstones() {
		k = ikey.Append(k[:0], t.Start, t.Seq, ikey.KindRangeDelete)
		b.add(k, t.End)
	}
	h, err := w.writeBlock(b.finish(), w.opts.Compression)
	if err != nil {
		return err
	}
	var buf [maxHandleLen]byte
	meta.add([]byte(RangeDelMetaKey), appendHandle(buf[:0], h))
	first, last := w.rangeDels[0], w.rangeDels[len(w.rangeDels)-1]
	lo := ikey.Make(first.Start, first.Seqs[0], ikey.KindRangeDelete)
	hi := ikey.Make(last.End, ikey.MaxSeq, ikey.KindRangeDelete)
	if w.meta.Smallest == nil || ikey.Compare(lo, w.meta.Smallest) < 0 {
		w.meta.Smallest = lo
	}
	w.rangeDelLargest = hi
	return nil
}

func tableErr(file string, off int64, format string, args ...any) error {
	return &TableError{File: file, Offset: off, Reason: fmt.Sprintf(format, args...), Err: ErrCorrupt}
}

// decodeRangeDels decodes a range-deletion block (decoded already) and
// fragments what it holds; damage is an error naming the file and offset.
func decodeRangeDels(block []byte, file string, off int64) (rangedel.Spans, error) {
	var it blockIter
	if err := it.init(block, true, file, off); err != nil {
		return nil, err
	}
	var ts []rangedel.Tombstone
	for ok := it.First(); ok; ok = it.Next() {
		if !ikey.Valid(it.key) || ikey.KindOf(it.key) != ikey.KindRangeDelete {
			return nil, tableErr(file, off, "range-deletion block: entry %d: key %x is not a range deletion", len(ts), it.key)
		}
		start := ikey.UserKey(it.key)
		if bytes.Compare(start, it.val) >= 0 {
			return nil, tableErr(file, off, "range-deletion block: entry %d: end %q is not after start %q", len(ts), it.val, start)
		}
		ts = append(ts, rangedel.Tombstone{Start: bytes.Clone(start), End: bytes.Clone(it.val), Seq: ikey.Seq(it.key)})
	}
	if it.err != nil {
		return nil, it.err
	}
	return rangedel.Fragment(ts), nil
}
