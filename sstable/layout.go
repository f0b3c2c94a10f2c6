package sstable

import "strings"

// Layout describes where a table's parts are and whether each block reads
// back, for inspection tools (kvcli sst dump). It is computed by Layout,
// which reads every block.
type Layout struct {
	// Size is the file size given to Open.
	Size int64
	// Footer holds the metaindex and index block handles.
	Footer Footer
	// MetaIndex lists the metaindex entries in order.
	MetaIndex []MetaEntry
	// FilterName is the metaindex key of the filter this Reader uses
	// (FilterMetaKey), or "" if it uses none.
	FilterName string
	// Blocks lists the data blocks in index order, then the filter block
	// (if used), the metaindex block and the index block.
	Blocks []BlockInfo
}

// MetaEntry is one metaindex entry: a name and the handle it maps to.
type MetaEntry struct {
	Name   string
	Handle BlockHandle
	// Valid is false if the value did not decode as a block handle.
	Valid bool
}

// BlockInfo describes one block.
type BlockInfo struct {
	// Kind is "data", "filter", "meta" (another block the metaindex
	// names), "metaindex" or "index".
	Kind   string
	Handle BlockHandle
	// IndexKey is a data block's index entry: an internal key >= every key
	// in the block and < every key of the next block.
	IndexKey []byte
	// Compression is the trailer's compression byte: 0 none, 1 snappy,
	// 2 zstd (not supported); -1 if the block could not be read.
	Compression int
	// DecodedLen is the block's length after decompression.
	DecodedLen int
	// Entries counts the entries of a data, metaindex or index block.
	Entries int
	// Err is nil if the checksum matched and the block decoded and
	// iterated cleanly; otherwise it says what is wrong (ErrCorrupt or
	// ErrUnsupported).
	Err error
}

// Layout reads every block of the table and describes it. Damage in a
// data block is reported in its BlockInfo rather than as an error; the
// error is for damage that hides the list of blocks (the index).
func (t *Reader) Layout() (*Layout, error) {
	l := &Layout{Size: t.size, Footer: t.footer}
	for _, m := range t.metaKeys {
		l.MetaIndex = append(l.MetaIndex, MetaEntry{Name: m.name, Handle: m.handle, Valid: m.ok})
	}
	iv, ib, err := t.acquireIndex()
	if err != nil {
		return l, err
	}
	defer iv.Release()
	var idx blockIter
	t.indexIter(&idx, ib)
	for ok := idx.First(); ok; ok = idx.Next() {
		info := BlockInfo{Kind: "data", IndexKey: append([]byte(nil), idx.key...)}
		h, err := t.blockHandle(idx.val)
		if err != nil {
			info.Compression, info.Err = -1, err
		} else {
			info = t.blockInfo(info, h, true)
		}
		l.Blocks = append(l.Blocks, info)
	}
	if idx.err != nil {
		return l, idx.err
	}
	if t.HasFilter() {
		l.FilterName = FilterMetaKey
	}
	// Every block the metaindex names, used or not (a filter under the old
	// name, a damaged filter that was dropped, another tool's block), so
	// that every checksum in the file is verified.
	for _, m := range t.metaKeys {
		if !m.ok {
			continue
		}
		kind := "meta"
		if strings.HasPrefix(m.name, "filter.") {
			kind = "filter"
		}
		l.Blocks = append(l.Blocks, t.blockInfo(BlockInfo{Kind: kind}, m.handle, false))
	}
	l.Blocks = append(l.Blocks, t.blockInfo(BlockInfo{Kind: "metaindex"}, t.footer.MetaIndex, false))
	l.Blocks = append(l.Blocks, t.blockInfo(BlockInfo{Kind: "index"}, t.footer.Index, true))
	return l, nil
}

// blockInfo reads the block at h (bypassing the cache) and fills in info.
// internal says whether its keys are internal keys; entries are counted
// for every kind but the filter.
func (t *Reader) blockInfo(info BlockInfo, h BlockHandle, internal bool) BlockInfo {
	info.Handle, info.Compression = h, -1
	raw, typ, err := t.readRawBlock(h)
	if err != nil {
		info.Err = err
		return info
	}
	info.Compression = int(typ)
	b, err := t.decodeBlock(raw, typ, int64(h.Offset), nil)
	if err != nil {
		info.Err = err
		return info
	}
	info.DecodedLen = len(b)
	if info.Kind == "filter" || info.Kind == "meta" {
		return info // not necessarily in block format
	}
	var it blockIter
	if info.Err = it.init(b, internal, t.opts.FileName, int64(h.Offset)); info.Err != nil {
		return info
	}
	for ok := it.First(); ok; ok = it.Next() {
		info.Entries++
	}
	info.Err = it.err
	return info
}
