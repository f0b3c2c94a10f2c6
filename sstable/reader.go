package sstable

import (
	"github.com/shale-db/shale/internal/rangedel"

	"encoding/binary"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/cockroachdb/errors"
	"github.com/golang/snappy"
	"github.com/shale-db/shale/internal/cache"
	"github.com/shale-db/shale/internal/ikey"
	"github.com/shale-db/shale/internal/iterator"
)

// maxDecodedLen caps the decoded length of a snappy block (256 MiB), on top
// of snappy's own bound: an element of n input bytes yields at most 64/3*n
// output bytes (a 3-byte copy of 64), so a block of n bytes decodes to at
// most maxSnappyExpansion*n.
const (
	maxDecodedLen      = 256 << 20
	maxSnappyExpansion = 22
)

// ReaderOptions configures a Reader. The zero value is valid.
type ReaderOptions struct {
	// FileName names the file in error messages.
	FileName string
	// FileNum identifies the file in Cache: it must be unique among the
	// readers that share a cache (the database's file number).
	FileNum uint64
	// Cache, if not nil, holds data blocks across reads.
	Cache *cache.Cache
}

// Reader reads a table. Open checks the footer, metaindex, filter and index
// blocks; data blocks are read (and their checksums verified) on demand.
// A Reader is safe for concurrent use by any number of Get calls and
// iterators, provided its io.ReaderAt is.
type Reader struct {
	r      io.ReaderAt
	size   int64
	opts   ReaderOptions
	footer Footer
	index  []byte // decoded index block
	// indexTab lists index's entries for Get, or is nil (see
	// buildIndexTable).
	indexTab []indexEntry
	// filter is the table's bloom filter (nil: none usable), once
	// filterLoaded is set. A Reader with a cache reads it at the first
	// Get that needs it (loadedFilter); one without reads it at Open.
	filter       *filterReader
	filterLoaded atomic.Bool
	filterMu     sync.Mutex // guards loading the filter, kept after Open, closed
	filterHandle BlockHandle
	closed       bool
	// filterErr is why a filter the metaindex names was dropped, if it was.
	filterErr error
	// kept holds the memory of index, indexTab and the filter when it
	// comes from the block cache's maps (ReaderOptions.Cache), released
	// by Close: on the Go heap, the tables' index and filter blocks were
	// most of what a database keeps live, and the collector let the heap
	// grow to twice that.
	kept     []*cache.Value
	pinned   int64       // bytes of kept charged with Cache.Pin
	metaKeys []metaEntry // every metaindex entry, for Layout
	// rangeDels are the table's range deletions, read at Open.
	rangeDels rangedel.Spans

	skipChecksums bool // only for fuzzing
}

// metaEntry is one metaindex entry.
type metaEntry struct {
	name   string
	handle BlockHandle
	ok     bool // handle decoded
}

// Open reads the footer, metaindex, filter and index blocks of the table
// of size bytes in r. A damaged table gives an error matching ErrCorrupt,
// but for a damaged filter block, which is dropped (FilterErr says why);
// an error reading r fails Open whatever the block. The filter is used
// only if the metaindex names FilterMetaKey (filters under the old name
// are ignored). Open does not take ownership of r.
func Open(r io.ReaderAt, size int64, opts ReaderOptions) (*Reader, error) {
	return open(r, size, opts, true)
}

// open is Open; verify false skips checksums, so that fuzzing reaches the
// decoders behind them.
func open(r io.ReaderAt, size int64, opts ReaderOptions, verify bool) (*Reader, error) {
	t := &Reader{r: r, size: size, opts: opts, skipChecksums: !verify}
	if size < FooterLen {
		return nil, t.corrupt(0, "file of %d bytes is too short for a table", size)
	}
	var fb [FooterLen]byte
	if err := t.readAt(fb[:], size-FooterLen); err != nil {
		return nil, err
	}
	var reason string
	if t.footer, reason = decodeFooter(fb[:]); reason != "" {
		return nil, t.corrupt(size-FooterLen, "footer: %s", reason)
	}
	if err := t.readMetaIndex(); err != nil {
		t.Close()
		return nil, err
	}
	index, err := t.keepBlock(t.footer.Index)
	if err != nil {
		t.Close()
		return nil, err
	}
	var it blockIter
	if err := it.init(index, true, opts.FileName, int64(t.footer.Index.Offset)); err != nil {
		t.Close()
		return nil, err
	}
	t.index = index
	t.indexTab = buildIndexTable(index, opts.FileName, int64(t.footer.Index.Offset), t.allocIndexTable)
	return t, nil
}

// keepBlock reads the block at h, as readBlock, into memory that the
// Reader keeps until Close: the block cache's (not cached), else Go's.
func (t *Reader) keepBlock(h BlockHandle) ([]byte, error) {
	if t.opts.Cache == nil {
		return t.readBlock(h)
	}
	v, err := t.readDecoded(h, t.opts.Cache)
	if err != nil {
		return nil, err
	}
	t.keep(v)
	return v.Bytes(), nil
}

// keep holds v, allocated from the cache, until Close, charged to the
// cache's capacity.
func (t *Reader) keep(v *cache.Value) {
	t.kept = append(t.kept, v)
	n := int64(cap(v.Bytes()))
	t.pinned += n
	t.opts.Cache.Pin(n)
}

// allocIndexTable returns room for n index entries, kept as keepBlock
// keeps blocks. indexEntry holds no pointers, so it may live outside the
// Go heap.
func (t *Reader) allocIndexTable(n int) []indexEntry {
	if t.opts.Cache == nil || n == 0 {
		return make([]indexEntry, n)
	}
	v := t.opts.Cache.Alloc(n * int(unsafe.Sizeof(indexEntry{})))
	t.keep(v)
	return unsafe.Slice((*indexEntry)(unsafe.Pointer(unsafe.SliceData(v.Bytes()))), n)
}

// readMetaIndex reads the metaindex block and the filter block it names.
func (t *Reader) readMetaIndex() error {
	h := t.footer.MetaIndex
	meta, err := t.readBlock(h)
	if err != nil {
		return err
	}
	var it blockIter
	if err := it.init(meta, false, t.opts.FileName, int64(h.Offset)); err != nil {
		return err
	}
	lazy := false // a filter is left for the first Get to read
	for ok := it.First(); ok; ok = it.Next() {
		bh, n := decodeHandle(it.val)
		t.metaKeys = append(t.metaKeys, metaEntry{name: string(it.key), handle: bh, ok: n > 0})
		if string(it.key) == RangeDelMetaKey {
			// Unlike a filter, range deletions change what the table
			// says: damage to them fails Open.
			if n == 0 {
				return t.corrupt(int64(h.Offset), "metaindex: bad range-deletion block handle")
			}
			b, err := t.readBlock(bh)
			if err != nil {
				return err
			}
			if t.rangeDels, err = decodeRangeDels(b, t.opts.FileName, int64(bh.Offset)); err != nil {
				return err
			}
			continue
		}
		if string(it.key) != FilterMetaKey {
			continue
		}
		// A damaged filter is dropped, as LevelDB drops it: the table
		// still answers every read, only without the shortcut. An I/O
		// error is not damage: it fails Open, so that the caller hears of
		// it and a later Open reads the filter again.
		if n == 0 {
			t.filterErr = t.corrupt(int64(h.Offset), "metaindex: bad filter block handle")
			continue
		}
		t.filterHandle = bh
		if lazy = t.opts.Cache != nil; lazy {
			continue
		}
		if err := t.loadFilter(); err != nil {
			return err
		}
	}
	if !lazy {
		t.filterLoaded.Store(true) // read already, or none to read
	}
	return it.err
}

// loadFilter reads the filter block at filterHandle. Damage drops the
// filter, as LevelDB drops it: the table still answers every read, only
// without the shortcut. An I/O error is not damage: it is returned, and
// the filter is read again next time. Called by Open, or with filterMu
// held.
func (t *Reader) loadFilter() error {
	fb, err := t.keepBlock(t.filterHandle)
	switch {
	case err == nil:
		t.filter, _ = newFilterReader(fb)
	case errors.Is(err, ErrCorrupt):
		t.filterErr = err
	default:
		return err
	}
	t.filterLoaded.Store(true)
	return nil
}

// loadedFilter returns the table's filter, reading it first if a Reader
// with a cache has not yet: a table's filter (about 48 KB of a 2 MiB
// table) takes memory only once point reads use it, not while
// compactions and scans read the table. An I/O error reading it is
// returned (the next call reads again), as Open returns it when it reads
// the filter.
func (t *Reader) loadedFilter() (*filterReader, error) {
	if t.filterLoaded.Load() {
		return t.filter, nil
	}
	t.filterMu.Lock()
	defer t.filterMu.Unlock()
	if !t.filterLoaded.Load() && !t.closed {
		if err := t.loadFilter(); err != nil {
			return nil, err
		}
	}
	return t.filter, nil
}

// corrupt returns an ErrCorrupt error at offset off of this table.
func (t *Reader) corrupt(off int64, format string, args ...any) error {
	return &TableError{File: t.opts.FileName, Offset: off, Reason: fmt.Sprintf(format, args...), Err: ErrCorrupt}
}

// readAt fills b from offset off; a short file is corruption.
func (t *Reader) readAt(b []byte, off int64) error {
	n, err := t.r.ReadAt(b, off)
	if n == len(b) {
		return nil
	}
	if err == nil || err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
		return t.corrupt(off, "read %d of %d bytes: file truncated", n, len(b))
	}
	return errors.Wrapf(err, "sstable: %s: read at offset %d", t.name(), off)
}

func (t *Reader) name() string {
	if t.opts.FileName == "" {
		return "table"
	}
	return t.opts.FileName
}

// checkHandle reports whether the block and its trailer lie before the footer.
func (t *Reader) checkHandle(h BlockHandle) error {
	limit := uint64(t.size - FooterLen)
	if h.Offset > limit || h.Length > limit-h.Offset || TrailerLen > limit-h.Offset-h.Length {
		return t.corrupt(int64(min(h.Offset, limit)), "block handle %s is outside the %d-byte table", h, t.size)
	}
	return nil
}

// readBlock reads the block at h, verifies its checksum and decodes it.
// The result is Go memory, newly allocated and never modified afterwards:
// for the blocks a Reader keeps (index, filter), not the cache's.
func (t *Reader) readBlock(h BlockHandle) ([]byte, error) {
	v, err := t.readDecoded(h, nil)
	if err != nil {
		return nil, err
	}
	return v.Bytes(), nil
}

// rawPoolMax is the largest block, trailer included, read through rawPool:
// blocks are about 4 KiB, and 64 KiB covers every block of a table written
// with a larger block size up to that.
const rawPoolMax = 64 << 10

var rawPool = sync.Pool{New: func() any {
	b := make([]byte, rawPoolMax)
	return &b
}}

// decodeBlock decompresses a block whose trailer said typ.
func (t *Reader) decodeBlock(raw []byte, typ byte, off int64, dst []byte) ([]byte, error) {
	switch typ {
	case blockTypeNone:
		return raw, nil
	case blockTypeSnappy:
		return t.decodeSnappy(raw, off, dst)
	case blockTypeZstd:
		return nil, &TableError{File: t.opts.FileName, Offset: off,
			Reason: "block is zstd-compressed (compression type 2), which shale does not support",
			Err:    ErrUnsupported}
	}
	return nil, t.corrupt(off, "unknown block compression type %d", typ)
}

// readRawBlock reads the block at h and its trailer and verifies the
// checksum; it returns the stored bytes and the compression type.
func (t *Reader) readRawBlock(h BlockHandle) ([]byte, byte, error) {
	if err := t.checkHandle(h); err != nil {
		return nil, 0, err
	}
	buf := make([]byte, h.Length+TrailerLen)
	if err := t.readAt(buf, int64(h.Offset)); err != nil {
		return nil, 0, err
	}
	return t.verifyRaw(h, buf)
}

// verifyRaw checks the block at h, whose bytes and trailer are buf, against
// its checksum, and returns the stored bytes and the compression type.
func (t *Reader) verifyRaw(h BlockHandle, buf []byte) ([]byte, byte, error) {
	n := int(h.Length)
	typ := buf[n]
	stored := binary.LittleEndian.Uint32(buf[n+1:])
	if got := blockChecksum(buf[:n], typ); got != stored && !t.skipChecksums {
		return nil, 0, t.corrupt(int64(h.Offset), "block checksum mismatch (stored %#08x, computed %#08x)", stored, got)
	}
	return buf[:n:n], typ, nil
}

// decodeSnappy decodes a snappy block after bounding its claimed length.
func (t *Reader) decodeSnappy(src []byte, off int64, dst []byte) ([]byte, error) {
	n, err := t.snappyLen(src, off)
	if err != nil {
		return nil, err
	}
	if cap(dst) < n {
		dst = make([]byte, n)
	}
	return t.snappyInto(src, off, dst[:n])
}

// snappyInto decodes a snappy block into dst, whose length is what
// snappyLen returned for it.
func (t *Reader) snappyInto(src []byte, off int64, dst []byte) ([]byte, error) {
	out, err := snappy.Decode(dst, src)
	if err != nil || len(out) != len(dst) {
		return nil, t.corrupt(off, "snappy block does not decode: %v", err)
	}
	return out, nil
}

// snappyLen returns the decoded length a snappy block claims, once it is
// found plausible.
func (t *Reader) snappyLen(src []byte, off int64) (int, error) {
	n, err := snappy.DecodedLen(src)
	if err != nil {
		return 0, t.corrupt(off, "snappy block header: %v", err)
	}
	if limit := min(uint64(len(src))*maxSnappyExpansion, maxDecodedLen); uint64(n) > limit {
		return 0, t.corrupt(off, "snappy block claims %d decoded bytes from %d (limit %d)", n, len(src), limit)
	}
	return n, nil
}

// dataBlock returns the decoded data block at h and the cache Value that
// holds it, which the caller releases when it stops reading the block. The
// block comes from the cache if it has it; a block read from the file is
// added to it unless noFill or the reading iterator is deep in a long scan
// (see readahead.longScan). ra, if not nil, is the reading iterator's
// readahead, which serves blocks read in order from larger reads; a block
// that goes to no cache is decoded into ra's own buffers and has no Value.
func (t *Reader) dataBlock(h BlockHandle, noFill bool, ra *readahead) ([]byte, *cache.Value, error) {
	if v := t.opts.Cache.Get(t.opts.FileNum, h.Offset); v != nil {
		return v.Bytes(), v, nil
	}
	raw, err := ra.block(t, h)
	keep := !noFill && !ra.longScan()
	var v *cache.Value
	switch {
	case err != nil:
	case raw != nil && !keep:
		// A block no one else will see is decoded into the iterator's
		// own buffers.
		b, err := t.decodeRaw(h, raw, ra.scratch())
		ra.used(b)
		return b, nil, err
	case raw != nil:
		v, err = t.decodeValue(h, raw, t.opts.Cache)
	default:
		v, err = t.readDataBlock(h)
	}
	if err != nil {
		return nil, nil, err
	}
	if keep {
		t.opts.Cache.Set(t.opts.FileNum, h.Offset, v)
	}
	return v.Bytes(), v, nil
}

// readDataBlock reads the block at h from the file and decodes it into a
// new Value from the block cache's memory.
func (t *Reader) readDataBlock(h BlockHandle) (*cache.Value, error) {
	return t.readDecoded(h, t.opts.Cache)
}

// readDecoded reads the block at h and decodes it into a new Value from c
// (nil: Go memory). The stored bytes are read into a pooled buffer and only
// the decoded block is kept.
func (t *Reader) readDecoded(h BlockHandle, c *cache.Cache) (*cache.Value, error) {
	if err := t.checkHandle(h); err != nil {
		return nil, err
	}
	n := int(h.Length + TrailerLen)
	var buf []byte
	if n <= rawPoolMax {
		bp := rawPool.Get().(*[]byte)
		defer rawPool.Put(bp)
		buf = (*bp)[:n]
	} else {
		buf = make([]byte, n)
	}
	if err := t.readAt(buf, int64(h.Offset)); err != nil {
		return nil, err
	}
	return t.decodeValue(h, buf, c)
}

// decodeValue verifies and decodes the block at h from raw, its bytes and
// trailer, into a new Value from c (nil: Go memory).
func (t *Reader) decodeValue(h BlockHandle, raw []byte, c *cache.Cache) (*cache.Value, error) {
	stored, typ, err := t.verifyRaw(h, raw)
	if err != nil {
		return nil, err
	}
	off := int64(h.Offset)
	switch typ {
	case blockTypeNone:
		v := c.Alloc(len(stored))
		copy(v.Bytes(), stored)
		return v, nil
	case blockTypeSnappy:
		n, err := t.snappyLen(stored, off)
		if err != nil {
			return nil, err
		}
		v := c.Alloc(n)
		if _, err := t.snappyInto(stored, off, v.Bytes()); err != nil {
			v.Release()
			return nil, err
		}
		return v, nil
	}
	_, err = t.decodeBlock(stored, typ, off, nil)
	return nil, err
}

// decodeRaw verifies and decodes the block at h from raw, its bytes and
// trailer, which the caller reuses: the result never aliases raw. It is
// decoded into dst if dst has room, else into a new allocation.
func (t *Reader) decodeRaw(h BlockHandle, raw, dst []byte) ([]byte, error) {
	stored, typ, err := t.verifyRaw(h, raw)
	if err != nil {
		return nil, err
	}
	if typ == blockTypeNone {
		return append(dst[:0], stored...), nil
	}
	return t.decodeBlock(stored, typ, int64(h.Offset), dst)
}

// indexIter returns an iterator over the index block.
func (t *Reader) indexIter(it *blockIter) {
	// The index block was validated by Open, so init cannot fail.
	_ = it.init(t.index, true, t.opts.FileName, int64(t.footer.Index.Offset))
}

// blockHandle decodes the handle in an index entry.
func (t *Reader) blockHandle(v []byte) (BlockHandle, error) {
	h, n := decodeHandle(v)
	if n == 0 {
		return BlockHandle{}, t.corrupt(int64(t.footer.Index.Offset), "index block: bad block handle")
	}
	return h, nil
}

// Get looks up the newest entry for user key ukey with sequence number <=
// seq: the first entry >= ikey.SeekKey(ukey, seq), if its user key is
// ukey. The bloom filter is consulted first. found is false if there is no
// such entry; a deletion is found with kind ikey.KindDelete.
//
// A value found is appended to dst[:0] (so dst, if it has room, holds it):
// the block it was read from may be reused once Get returns.
func (t *Reader) Get(ukey []byte, seq uint64, dst []byte) (value []byte, kind ikey.Kind, found bool, err error) {
	value, _, kind, found, err = t.GetEntry(ukey, seq, dst)
	return value, kind, found, err
}

// GetEntry is Get that also returns the sequence number of the entry
// found, which a range deletion covering ukey may be above.
func (t *Reader) GetEntry(ukey []byte, seq uint64, dst []byte) (value []byte, entrySeq uint64, kind ikey.Kind, found bool, err error) {
	seek := ikey.SeekKey(ukey, seq)
	var pos indexPos
	h, ok, err := pos.seek(t, seek)
	if !ok {
		return nil, 0, 0, false, err
	}
	f, err := t.loadedFilter()
	if err != nil {
		return nil, 0, 0, false, err
	}
	if f != nil && !f.mayContain(h.Offset, bloomHash(ukey)) {
		return nil, 0, 0, false, nil
	}
	for {
		b, v, err := t.dataBlock(h, false, nil)
		if err != nil {
			return nil, 0, 0, false, err
		}
		value, entrySeq, kind, found, done, err := t.getInBlock(b, h, ukey, seek, dst)
		v.Release()
		if done {
			return value, entrySeq, kind, found, err
		}
		// Every entry of this block is < seek: the answer, if any, is the
		// first entry of the next block.
		if h, ok, err = pos.next(t); !ok {
			return nil, 0, 0, false, err
		}
	}
}

// getInBlock is Get's search of one block, b at h. done is false when
// every entry of the block is below seek.
func (t *Reader) getInBlock(b []byte, h BlockHandle, ukey, seek, dst []byte) (value []byte, seq uint64, kind ikey.Kind, found, done bool, err error) {
	var data blockIter
	if err := data.init(b, true, t.opts.FileName, int64(h.Offset)); err != nil {
		return nil, 0, 0, false, true, err
	}
	if !data.SeekGE(seek) {
		return nil, 0, 0, false, data.err != nil, data.err
	}
	u, s, k, ok := ikey.Parse(data.key)
	if !ok {
		return nil, 0, 0, false, true, t.corrupt(int64(h.Offset), "entry %s has an unknown kind", ikey.String(data.key))
	}
	if string(u) != string(ukey) {
		return nil, 0, 0, false, true, nil
	}
	return append(dst[:0], data.val...), s, k, true, true, nil
}

// indexPos is Get's position in the index: in indexTab when the table has
// one, else in a block iterator over the index block.
type indexPos struct {
	i   int
	idx blockIter
}

// seek finds the first index entry >= key and returns its block handle;
// ok is false past the last entry or on error.
func (p *indexPos) seek(t *Reader, key []byte) (BlockHandle, bool, error) {
	if t.indexTab != nil {
		p.i = seekIndex(t.index, t.indexTab, key)
		return p.handle(t)
	}
	t.indexIter(&p.idx)
	if !p.idx.SeekGE(key) {
		return BlockHandle{}, false, p.idx.err
	}
	h, err := t.blockHandle(p.idx.val)
	return h, err == nil, err
}

// next moves to the next index entry.
func (p *indexPos) next(t *Reader) (BlockHandle, bool, error) {
	if t.indexTab != nil {
		p.i++
		return p.handle(t)
	}
	if !p.idx.Next() {
		return BlockHandle{}, false, p.idx.err
	}
	h, err := t.blockHandle(p.idx.val)
	return h, err == nil, err
}

func (p *indexPos) handle(t *Reader) (BlockHandle, bool, error) {
	if p.i >= len(t.indexTab) {
		return BlockHandle{}, false, nil
	}
	return t.indexTab[p.i].h, true, nil
}

// NewIter returns an iterator over the table's entries. It is not safe for
// concurrent use, but any number may be used concurrently. The Reader must
// stay open while it is in use.
func (t *Reader) NewIter() iterator.Iterator {
	return t.NewIterIn(nil)
}

// NewIterIn is NewIter for an iterator that counts the blocks it reads in
// order with the other iterators of g (see ScanGroup); a nil g is none.
func (t *Reader) NewIterIn(g *ScanGroup) iterator.Iterator {
	it := t.newTableIter()
	it.ra.group = g
	return it
}

// tableIterPool holds table iterators given back with Recycle: a short
// scan (a seek and a few steps, as db_bench's seekrandom makes) otherwise
// allocated one and the key buffers of its two block iterators each time.
var tableIterPool = sync.Pool{New: func() any { return new(tableIter) }}

// maxKeptKey is the largest key buffer a recycled iterator keeps.
const maxKeptKey = 4 << 10

// newTableIter returns an unpositioned iterator over t, from the pool.
func (t *Reader) newTableIter() *tableIter {
	it := tableIterPool.Get().(*tableIter)
	index, data := it.index, it.data
	*it = tableIter{t: t}
	it.index.key, it.index.spare = emptied(index.key, maxKeptKey), emptied(index.spare, maxKeptKey)
	it.data.key, it.data.spare = emptied(data.key, maxKeptKey), emptied(data.spare, maxKeptKey)
	t.indexIter(&it.index)
	return it
}

// Recycle closes it, an iterator from a Reader's NewIter, NewIterIn or
// NewScanIter, and keeps it for reuse by a later one. Whoever calls it
// must hold the only reference to it and not use it again; other
// iterators are left alone.
func Recycle(it iterator.Iterator) {
	ti, ok := it.(*tableIter)
	if !ok {
		return
	}
	_ = ti.Close() // the caller has had Close's error
	ti.t, ti.err = nil, nil
	ti.index.data, ti.data.data = nil, nil
	ti.index.val, ti.data.val = nil, nil
	tableIterPool.Put(ti)
}

// NewScanIter is NewIter for reading a table once through, as a
// compaction does: blocks found in the cache are used, but blocks read
// from the file are not added to it, so that a compaction does not evict
// the blocks that reads need.
func (t *Reader) NewScanIter() iterator.Iterator {
	it := t.newTableIter()
	it.noFill = true
	return it
}

// RangeDels returns the table's range deletions, fragmented (nil if it has
// none). They must not be modified.
func (t *Reader) RangeDels() rangedel.Spans { return t.rangeDels }

// HasFilter reports whether Get consults a bloom filter. It reads the
// filter if it was not yet (false if that fails).
func (t *Reader) HasFilter() bool {
	f, _ := t.loadedFilter()
	return f != nil
}

// FilterErr returns why the filter block the table names was dropped (it
// was damaged), or nil. Such a table reads correctly, only slower. It
// reads the filter if it was not yet, and returns the I/O error if that
// fails.
func (t *Reader) FilterErr() error {
	if _, err := t.loadedFilter(); err != nil {
		return err
	}
	t.filterMu.Lock()
	defer t.filterMu.Unlock()
	return t.filterErr
}

// Close releases the Reader's index and filter blocks, which come from
// the block cache's memory when ReaderOptions.Cache is set: the Reader and
// every iterator from it must be done with. It does not close the
// io.ReaderAt, which the caller closes once the Reader's iterators are
// closed. A second Close does nothing.
func (t *Reader) Close() error {
	t.filterMu.Lock()
	defer t.filterMu.Unlock()
	t.closed = true
	for _, v := range t.kept {
		v.Release()
	}
	t.kept = nil
	t.opts.Cache.Unpin(t.pinned)
	t.pinned = 0
	t.index, t.indexTab, t.filter = nil, nil, nil
	return nil
}
