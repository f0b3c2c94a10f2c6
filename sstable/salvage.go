package sstable

import (
	"github.com/shale-db/shale/internal/ikey"
)

// Entry is one key/value pair of a data block.
type Entry struct {
	Key, Value []byte // an internal key and its value
}

// Salvage reads the table's data blocks in index order, bypassing the
// cache, for a repair. For each block it returns a BlockInfo (Err nil if
// the block is intact: checksum, decoding, entry order, and every key
// after those of the blocks before it), and calls keep with the entries of
// each intact block, in order; a damaged block's entries are never passed,
// not even those before the damage. The slices passed to keep are newly
// allocated and stay valid. An error from keep stops Salvage and is
// returned; so is damage in the index block that hides the rest of the
// blocks (the blocks listed so far are returned with it).
func (t *Reader) Salvage(keep func([]Entry) error) ([]BlockInfo, error) {
	var blocks []BlockInfo
	var last []byte // the largest key passed to keep
	iv, ib, err := t.acquireIndex()
	if err != nil {
		return nil, err
	}
	defer iv.Release()
	var idx blockIter
	t.indexIter(&idx, ib)
	for ok := idx.First(); ok; ok = idx.Next() {
		info := BlockInfo{Kind: "data", IndexKey: append([]byte(nil), idx.key...), Compression: -1}
		h, err := t.blockHandle(idx.val)
		if err != nil {
			info.Err = err
			blocks = append(blocks, info)
			continue
		}
		info.Handle = h
		entries, err := t.salvageBlock(&info, last)
		info.Err = err
		blocks = append(blocks, info)
		if err != nil || len(entries) == 0 {
			continue
		}
		last = entries[len(entries)-1].Key
		if err := keep(entries); err != nil {
			return blocks, err
		}
	}
	return blocks, idx.err
}

// salvageBlock reads the data block info.Handle and returns its entries,
// or the reason the block is damaged. Every key must be after last.
func (t *Reader) salvageBlock(info *BlockInfo, last []byte) ([]Entry, error) {
	h := info.Handle
	raw, typ, err := t.readRawBlock(h)
	if err != nil {
		return nil, err
	}
	info.Compression = int(typ)
	b, err := t.decodeBlock(raw, typ, int64(h.Offset), nil)
	if err != nil {
		return nil, err
	}
	info.DecodedLen = len(b)
	var it blockIter
	if err := it.init(b, true, t.opts.FileName, int64(h.Offset)); err != nil {
		return nil, err
	}
	var entries []Entry
	for ok := it.First(); ok; ok = it.Next() {
		if !ikey.Valid(it.key) || (last != nil && ikey.Compare(it.key, last) <= 0) {
			return nil, t.corrupt(int64(h.Offset), "data block key %q out of order or malformed", it.key)
		}
		e := Entry{Key: append([]byte(nil), it.key...), Value: append([]byte(nil), it.val...)}
		entries = append(entries, e)
		last = e.Key
	}
	if it.err != nil {
		return nil, it.err
	}
	info.Entries = len(entries)
	return entries, nil
}
