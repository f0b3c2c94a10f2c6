package sstable

import (
	"github.com/shale-db/shale/internal/cache"
	"github.com/shale-db/shale/internal/iterator"
)

// tableIter is the two-level iterator over a table: the index block picks a
// data block, whose iterator gives the entries. Empty or exhausted data
// blocks are skipped in the direction of travel. Errors are sticky: after
// one, every positioning call returns false and Err reports it.
type tableIter struct {
	t *Reader
	// indexV holds the table's index block, which index iterates over,
	// until Close.
	indexV *cache.Value
	index  blockIter
	data   blockIter
	noFill bool // blocks read are not added to the cache (NewScanIter)

	block    []byte // the decoded data block data iterates over
	blockOff uint64 // its offset; meaningful when block != nil
	// cur holds block when it came through the cache, prev the block
	// before it: both stay valid until the next block replaces them (see
	// readahead.scratch for why the one before the current one too).
	cur, prev *cache.Value
	ra        readahead
	err       error
}

var (
	_ iterator.Iterator = (*tableIter)(nil)
	_ iterator.Scanner  = (*tableIter)(nil)
)

// loadBlock points data at the block of the current index entry.
func (it *tableIter) loadBlock() bool {
	h, err := it.t.blockHandle(it.index.val)
	if err != nil {
		it.err = err
		return false
	}
	if it.block == nil || it.blockOff != h.Offset {
		b, v, err := it.t.dataBlock(h, it.noFill, &it.ra)
		if err != nil {
			it.err = err
			return false
		}
		it.prev.Release()
		it.prev, it.cur = it.cur, v
		it.block, it.blockOff = b, h.Offset
	}
	if err := it.data.init(it.block, true, it.t.opts.FileName, int64(h.Offset)); err != nil {
		it.err = err
		return false
	}
	return true
}

// stop records the first error of the data or index iterator, if any, and
// leaves the iterator unpositioned.
func (it *tableIter) stop() bool {
	if it.err == nil {
		it.err = it.data.err
	}
	if it.err == nil {
		it.err = it.index.err
	}
	it.data.valid = false
	return false
}

// skipForward moves to the first entry of the next non-empty block.
func (it *tableIter) skipForward() bool {
	for {
		if it.data.err != nil || !it.index.Next() || !it.loadBlock() {
			return it.stop()
		}
		if it.data.First() {
			return true
		}
	}
}

// skipBackward moves to the last entry of the previous non-empty block.
func (it *tableIter) skipBackward() bool {
	for {
		if it.data.err != nil || !it.index.Prev() || !it.loadBlock() {
			return it.stop()
		}
		if it.data.Last() {
			return true
		}
	}
}

// First moves to the first entry of the table.
func (it *tableIter) First() bool {
	if it.err != nil || !it.index.First() || !it.loadBlock() {
		return it.stop()
	}
	if it.data.First() {
		return true
	}
	return it.skipForward()
}

// Last moves to the last entry of the table.
func (it *tableIter) Last() bool {
	if it.err != nil || !it.index.Last() || !it.loadBlock() {
		return it.stop()
	}
	if it.data.Last() {
		return true
	}
	return it.skipBackward()
}

// SeekGE moves to the first entry whose internal key is >= key. The index
// entry of a block is >= every key in it and < every key of the next, so
// the first index entry >= key names the only block to look in (or the
// next, if key falls between the block's last key and its separator).
func (it *tableIter) SeekGE(key []byte) bool {
	if it.err != nil || !it.index.SeekGE(key) || !it.loadBlock() {
		return it.stop()
	}
	if it.data.SeekGE(key) {
		return true
	}
	return it.skipForward()
}

// SeekLT moves to the last entry whose internal key is < key.
func (it *tableIter) SeekLT(key []byte) bool {
	if it.err != nil {
		return false
	}
	if !it.index.SeekGE(key) {
		// Every block ends before key: start from the last one.
		if it.index.err != nil || !it.index.Last() {
			return it.stop()
		}
	}
	if !it.loadBlock() {
		return it.stop()
	}
	if it.data.SeekLT(key) {
		return true
	}
	return it.skipBackward()
}

// Next moves to the following entry.
func (it *tableIter) Next() bool {
	if it.err != nil || !it.data.valid {
		return false
	}
	if it.data.Next() {
		return true
	}
	return it.skipForward()
}

// Prev moves to the preceding entry.
func (it *tableIter) Prev() bool {
	if it.err != nil || !it.data.valid {
		return false
	}
	if it.data.Prev() {
		return true
	}
	return it.skipBackward()
}

// Key returns the current internal key, valid until the next positioning
// call; nil when unpositioned.
func (it *tableIter) Key() []byte {
	if !it.data.valid {
		return nil
	}
	return it.data.key
}

// Value returns the current value. It aliases a block that must not be
// modified, and stays valid until the iterator has moved to the block after
// the next one, or closes.
func (it *tableIter) Value() []byte {
	if !it.data.valid {
		return nil
	}
	return it.data.val
}

// Err returns the error that stopped the iterator, if any.
func (it *tableIter) Err() error { return it.err }

// Close releases the iterator and returns Err. Calling it twice is safe.
func (it *tableIter) Close() error {
	it.indexV.Release()
	it.indexV = nil
	// An index iterator over no block: a closed iterator positions nowhere.
	it.index.data, it.index.numRestarts, it.index.restartsOff = nil, 0, 0
	it.index.offset, it.index.next = 0, 0
	it.index.valid = false
	it.ra.release()
	it.prev.Release()
	it.cur.Release()
	it.prev, it.cur = nil, nil
	it.block = nil
	it.data.data = nil
	it.data.valid = false
	return it.err
}
