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

// Reader reads a table. Open checks the footer, metaindex and index
// blocks; data blocks are read (and their checksums verified) on demand,
// and so is the filter block, at the first Get that needs it.
// A Reader is safe for concurrent use by any number of Get calls and
// iterators, provided its io.ReaderAt is.
//
// With a cache (ReaderOptions.Cache), the index and filter blocks are
// cached there like data blocks, under the same capacity: the memory a
// database's open tables take grows with the cache, not with the data (a
// table's index and filter blocks are about 5% of it). The Reader keeps a
// pointer to each and takes a reference with Value.TryRef, so a Get whose
// blocks are cached takes no lock; one whose block was evicted finds it in
// the cache again or reads it. An index or filter block larger than the
// cache can hold (a shard's share, a sixteenth of its capacity), and every
// such block of a Reader without a cache, is kept by the Reader until
// Close.
type Reader struct {
	r      io.ReaderAt
	size   int64
	opts   ReaderOptions
	footer Footer
	// index and filter point to the Values holding the index block (Aux:
	// *indexBlock) and the filter block (Aux: *filterReader) as last
	// loaded: nil before, and possibly freed since (TryRef tells).
	index, filter atomic.Pointer[cache.Value]
	// metaMu serializes loading the index and filter blocks, and guards
	// own, closed and filterErr.
	metaMu sync.Mutex
	// own holds the index and filter blocks the cache did not take
	// (Cache.Keep), until Close.
	own    []*cache.Value
	closed bool
	// filterHandle locates the filter block, if hasFilter.
	filterHandle BlockHandle
	hasFilter    bool
	// filterDropped is set once the filter block was found damaged: reads
	// go on without it. filterErr says why, or why the metaindex's entry
	// for it was unusable.
	filterDropped atomic.Bool
	filterErr     error
	metaKeys      []metaEntry // every metaindex entry, for Layout
	// rangeDels are the table's range deletions, read at Open.
	rangeDels rangedel.Spans

	// rawBlocks is set while the data blocks last read were stored
	// uncompressed (see readDataBlock).
	rawBlocks atomic.Bool

	skipChecksums bool // only for fuzzing
}

// indexBlock is a decoded index block and, if it has one, the table of its
// entries for Get (see buildIndexTable), both in one Value's bytes.
//
// A block is loaded without a table, and Get searches it with a block
// iterator. The table comes with the block's tabAfter'th use while it stays
// cached: it makes Get's search faster, but building it takes about as
// long as reading the block, which is wasted on a block that is evicted
// before its next use (a database many times the cache, read at random).
type indexBlock struct {
	data []byte
	tab  []indexEntry
	uses atomic.Int32 // Gets that used the block without a table
	// noTab is set once buildIndexTable has made none: the block's
	// entries are not all restart points, or do not fit the table.
	noTab atomic.Bool
}

// tabAfter is the use of an index block that gives it its table, and
// tabRetry how many uses later a try that did not land is made again (the
// block was replaced, or its table closed, under the try).
const (
	tabAfter = 4
	tabRetry = 1024
)

// metaEntry is one metaindex entry.
type metaEntry struct {
	name   string
	handle BlockHandle
	ok     bool // handle decoded
}

// Open reads the footer, metaindex and index blocks of the table of size
// bytes in r. A damaged table gives an error matching ErrCorrupt, but for
// a damaged filter block, which is dropped when a read first meets it
// (FilterErr says why); an error reading r fails Open whatever the block.
// Without a cache Open reads the filter too. The filter is used only if
// the metaindex names FilterMetaKey (filters under the old name are
// ignored). Open does not take ownership of r.
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
	v, _, err := t.acquireIndex()
	if err != nil {
		t.Close()
		return nil, err
	}
	v.Release()
	if opts.Cache == nil {
		// Nothing would evict it: read it now, as reads will need it.
		v, _, err := t.acquireFilter()
		if err != nil {
			t.Close()
			return nil, err
		}
		v.Release()
	}
	return t, nil
}

// acquireIndex returns the table's index block and the Value holding it,
// which the caller releases once done with the block.
func (t *Reader) acquireIndex() (*cache.Value, *indexBlock, error) {
	if v := tryAcquire(&t.index); v != nil {
		return v, v.Aux.(*indexBlock), nil
	}
	v, err := t.acquireSlow(&t.index, t.footer.Index, t.loadIndex)
	if err != nil {
		return nil, nil, err
	}
	return v, v.Aux.(*indexBlock), nil
}

// acquireIndexForGet is acquireIndex for a Get, which counts as a use of
// a block without a table (see indexBlock) and, at its tabAfter'th, puts
// the block with its table in the cache in its place.
func (t *Reader) acquireIndexForGet() (*cache.Value, *indexBlock, error) {
	v, ib, err := t.acquireIndex()
	if err != nil || ib.tab != nil || ib.noTab.Load() {
		return v, ib, err
	}
	if n := ib.uses.Add(1); n < tabAfter || (n-tabAfter)%tabRetry != 0 {
		return v, ib, nil
	}
	nv := t.withTable(ib.data)
	if nv == nil {
		ib.noTab.Store(true) // the iterator searches
		return v, ib, nil
	}
	t.metaMu.Lock()
	defer t.metaMu.Unlock()
	if t.closed || t.index.Load() != v {
		nv.Release()
		return v, ib, nil
	}
	if !t.opts.Cache.Set(t.opts.FileNum, t.footer.Index.Offset, nv) && !t.opts.Cache.Fits(nv) {
		t.keepLocked(nv)
	}
	t.unkeepLocked(v)
	t.index.Store(nv)
	v.Release()
	return nv, nv.Aux.(*indexBlock), nil
}

// withTable returns a new Value holding a copy of the index block data
// and its entry table, or nil if buildIndexTable makes none.
func (t *Reader) withTable(data []byte) *cache.Value {
	var it blockIter
	off := int64(t.footer.Index.Offset)
	if it.init(data, true, t.opts.FileName, off) != nil || it.numRestarts == 0 {
		return nil
	}
	n := len(data)
	at := (n + 7) &^ 7 // indexEntry's alignment
	v := t.opts.Cache.Alloc(at + it.numRestarts*int(unsafe.Sizeof(indexEntry{})))
	b := v.Bytes()
	copy(b, data)
	ib := &indexBlock{data: b[:n:n]}
	ib.tab = buildIndexTable(ib.data, t.opts.FileName, off, func(k int) []indexEntry {
		return unsafe.Slice((*indexEntry)(unsafe.Pointer(&b[at])), k)
	})
	if ib.tab == nil {
		v.Release()
		return nil
	}
	v.Aux = ib
	return v
}

// acquireFilter returns the table's filter and the Value holding it, which
// the caller releases once done with the filter; both are nil if the table
// has no usable filter. A damaged filter block is dropped, as LevelDB
// drops it: the table still answers every read, only without the
// shortcut. An I/O error is not damage: it is returned, and the next call
// reads the block again.
func (t *Reader) acquireFilter() (*cache.Value, *filterReader, error) {
	if !t.hasFilter || t.filterDropped.Load() {
		return nil, nil, nil
	}
	if v := tryAcquire(&t.filter); v != nil {
		return v, v.Aux.(*filterReader), nil
	}
	v, err := t.acquireSlow(&t.filter, t.filterHandle, t.loadFilter)
	if v == nil || err != nil {
		return nil, nil, err
	}
	return v, v.Aux.(*filterReader), nil
}

// errReaderClosed is returned by reads of a Reader after its Close.
var errReaderClosed = errors.New("sstable: read of a closed table")

// tryAcquire takes a reference to the Value p points to, without a lock,
// if it is still cached (or kept by its table); else it returns nil.
func tryAcquire(p *atomic.Pointer[cache.Value]) *cache.Value {
	if v := p.Load(); v != nil && v.Resident() && v.TryRef() {
		return v
	}
	return nil
}

// acquireSlow is acquireIndex's and acquireFilter's way when the Value
// they point to is gone (or was never loaded). Under metaMu, the cache may
// still have the block (another Reader of the file cached it, or a
// concurrent caller just did); if not, load reads it, and it goes to the
// cache, or to own if the cache does not take it. A nil Value with a nil
// error means load dropped the block.
func (t *Reader) acquireSlow(p *atomic.Pointer[cache.Value], h BlockHandle, load func(BlockHandle) (*cache.Value, error)) (*cache.Value, error) {
	t.metaMu.Lock()
	defer t.metaMu.Unlock()
	if t.closed {
		return nil, errReaderClosed
	}
	if v := tryAcquire(p); v != nil {
		return v, nil
	}
	shared := false // another block of the table has this offset
	if v := t.opts.Cache.Get(t.opts.FileNum, h.Offset); v != nil {
		// The key is the block's offset, so the cached Value is this
		// block as load made it, unless the table is damaged so that
		// two of its handles share an offset.
		if sameKind(v.Aux, p == &t.index) {
			p.Store(v)
			return v, nil
		}
		v.Release()
		shared = true
	}
	v, err := load(h)
	if v == nil || err != nil {
		return nil, err
	}
	if shared || (!t.opts.Cache.Set(t.opts.FileNum, h.Offset, v) && !t.opts.Cache.Fits(v)) {
		t.keepLocked(v)
	}
	p.Store(v)
	return v, nil
}

// sameKind reports whether aux, a cached Value's, is an index block's (if
// index) or a filter block's.
func sameKind(aux any, index bool) bool {
	if index {
		_, ok := aux.(*indexBlock)
		return ok
	}
	_, ok := aux.(*filterReader)
	return ok
}

// keepLocked keeps v, taking a reference of its own, until Close: a block
// the cache did not take. Called with metaMu held.
func (t *Reader) keepLocked(v *cache.Value) {
	v.Ref()
	t.opts.Cache.Keep(v)
	t.own = append(t.own, v)
}

// unkeepLocked gives back the reference keepLocked took to v, if it took
// one: v has been replaced. Called with metaMu held.
func (t *Reader) unkeepLocked(v *cache.Value) {
	for i, o := range t.own {
		if o == v {
			t.own = append(t.own[:i], t.own[i+1:]...)
			t.opts.Cache.Unkeep(v)
			v.Release()
			return
		}
	}
}

// loadIndex reads and checks the index block at h into a new Value whose
// Aux is the *indexBlock, without its entry table.
func (t *Reader) loadIndex(h BlockHandle) (*cache.Value, error) {
	v, err := t.readMeta(h)
	if err != nil {
		return nil, err
	}
	var it blockIter
	if err := it.init(v.Bytes(), true, t.opts.FileName, int64(h.Offset)); err != nil {
		v.Release()
		return nil, err
	}
	v.Aux = &indexBlock{data: v.Bytes()}
	return v, nil
}

// readMeta is readDecoded for an index or filter block, which is usually
// stored uncompressed (filter blocks always are, and index blocks of the
// tables shale writes): it reads the block and its trailer into a Value
// from the cache's memory and keeps the block there, with no copy, unless
// it is compressed.
func (t *Reader) readMeta(h BlockHandle) (*cache.Value, error) {
	if err := t.checkHandle(h); err != nil {
		return nil, err
	}
	n := int(h.Length + TrailerLen)
	raw := t.opts.Cache.Alloc(n)
	if err := t.readAt(raw.Bytes(), int64(h.Offset)); err != nil {
		raw.Release()
		return nil, err
	}
	stored, typ, err := t.verifyRaw(h, raw.Bytes())
	if err == nil && typ == blockTypeNone {
		raw.Trim(len(stored))
		return raw, nil
	}
	defer raw.Release()
	if err != nil {
		return nil, err
	}
	return t.decodeStored(h, stored, typ, t.opts.Cache)
}

// loadFilter reads the filter block at h into a new Value whose Aux is the
// *filterReader. Damage drops the filter for good (a nil Value and a nil
// error). Called with metaMu held.
func (t *Reader) loadFilter(h BlockHandle) (*cache.Value, error) {
	v, err := t.readMeta(h)
	if err == nil {
		if f, ok := newFilterReader(v.Bytes()); ok {
			v.Aux = f
			return v, nil
		}
		v.Release()
		err = t.corrupt(int64(h.Offset), "filter block: malformed")
	}
	if !errors.Is(err, ErrCorrupt) {
		return nil, err
	}
	t.filterErr = err
	t.filterDropped.Store(true)
	return nil, nil
}

// readMetaIndex reads the metaindex block and the range deletions it names.
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
		// A damaged filter is dropped (see acquireFilter).
		if n == 0 {
			t.filterErr = t.corrupt(int64(h.Offset), "metaindex: bad filter block handle")
			continue
		}
		t.filterHandle, t.hasFilter = bh, true
	}
	return it.err
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
		if v.Aux == nil {
			return v.Bytes(), v, nil
		}
		// A damaged table's index or filter handle has this block's
		// offset: read the block itself, and leave the cache alone.
		v.Release()
		noFill = true
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
		v, _, err = t.decodeValue(h, raw, t.opts.Cache)
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
// new Value from the block cache's memory. While the table's blocks come
// stored uncompressed (rawBlocks: values that do not compress, whose
// blocks the writer stores as they are), a block is read straight into its
// Value and kept there with its trailer's five bytes cut off (readRaw): a
// copy of the whole block less, into memory the processor's caches have
// not seen (0.37 µs, 7% of a random Get's time, from a database of random
// values several times the block cache).
func (t *Reader) readDataBlock(h BlockHandle) (*cache.Value, error) {
	if t.rawBlocks.Load() {
		if err := t.checkHandle(h); err != nil {
			return nil, err
		}
		return t.readRaw(h, t.opts.Cache)
	}
	v, typ, err := t.readStored(h, t.opts.Cache)
	if err == nil && typ == blockTypeNone {
		t.rawBlocks.Store(true)
	}
	return v, err
}

// readDecoded reads the block at h and decodes it into a new Value from c
// (nil: Go memory). The stored bytes are read into a pooled buffer and only
// the decoded block is kept (but see readDataBlock).
func (t *Reader) readDecoded(h BlockHandle, c *cache.Cache) (*cache.Value, error) {
	v, _, err := t.readStored(h, c)
	return v, err
}

// readStored is readDecoded that also returns the block's compression
// type as its trailer gave it.
func (t *Reader) readStored(h BlockHandle, c *cache.Cache) (*cache.Value, byte, error) {
	if err := t.checkHandle(h); err != nil {
		return nil, 0, err
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
		return nil, 0, err
	}
	return t.decodeValue(h, buf, c)
}

// readRaw is readDecoded for a data block expected to be stored
// uncompressed: it is read, with its trailer, into a Value from c and kept
// there. One that is not is decoded into a second Value, and the blocks
// read after it go through the pooled buffer again.
func (t *Reader) readRaw(h BlockHandle, c *cache.Cache) (*cache.Value, error) {
	v := c.Alloc(int(h.Length + TrailerLen))
	if err := t.readAt(v.Bytes(), int64(h.Offset)); err != nil {
		v.Release()
		return nil, err
	}
	stored, typ, err := t.verifyRaw(h, v.Bytes())
	if err != nil {
		v.Release()
		return nil, err
	}
	if typ == blockTypeNone {
		v.Trim(len(stored))
		return v, nil
	}
	t.rawBlocks.Store(false)
	d, err := t.decodeStored(h, stored, typ, c)
	v.Release()
	return d, err
}

// decodeValue verifies and decodes the block at h from raw, its bytes and
// trailer, into a new Value from c (nil: Go memory), and returns the
// compression type the trailer gave.
func (t *Reader) decodeValue(h BlockHandle, raw []byte, c *cache.Cache) (*cache.Value, byte, error) {
	stored, typ, err := t.verifyRaw(h, raw)
	if err != nil {
		return nil, 0, err
	}
	v, err := t.decodeStored(h, stored, typ, c)
	return v, typ, err
}

// decodeStored decodes stored, the verified bytes of the block at h whose
// trailer said typ, into a new Value from c (nil: Go memory).
func (t *Reader) decodeStored(h BlockHandle, stored []byte, typ byte, c *cache.Cache) (*cache.Value, error) {
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
	_, err := t.decodeBlock(stored, typ, off, nil)
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

// indexIter points it at ib, the table's index block.
func (t *Reader) indexIter(it *blockIter, ib *indexBlock) {
	// The index block was checked when it was loaded, so init cannot fail.
	_ = it.init(ib.data, true, t.opts.FileName, int64(t.footer.Index.Offset))
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
	var sb [getKeyRoom]byte // keeps a short key's seek key off the heap
	seek := ikey.Append(sb[:0], ukey, seq, ikey.KindSeek)
	iv, ib, err := t.acquireIndexForGet()
	if err != nil {
		return nil, 0, 0, false, err
	}
	defer iv.Release()
	pos := indexPos{ib: ib}
	h, ok, err := pos.seek(t, seek)
	if !ok {
		return nil, 0, 0, false, err
	}
	fv, f, err := t.acquireFilter()
	if err != nil {
		return nil, 0, 0, false, err
	}
	if f != nil {
		may := f.mayContain(h.Offset, bloomHash(ukey))
		fv.Release()
		if !may {
			return nil, 0, 0, false, nil
		}
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

// getKeyRoom is the room on Get's stack for its seek key: a longer one
// takes an allocation.
const getKeyRoom = 64

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
	ib  *indexBlock
	i   int
	idx blockIter
}

// seek finds the first index entry >= key and returns its block handle;
// ok is false past the last entry or on error.
func (p *indexPos) seek(t *Reader, key []byte) (BlockHandle, bool, error) {
	if p.ib.tab != nil {
		p.i = seekIndex(p.ib.data, p.ib.tab, key)
		return p.handle()
	}
	t.indexIter(&p.idx, p.ib)
	if !p.idx.SeekGE(key) {
		return BlockHandle{}, false, p.idx.err
	}
	h, err := t.blockHandle(p.idx.val)
	return h, err == nil, err
}

// next moves to the next index entry.
func (p *indexPos) next(t *Reader) (BlockHandle, bool, error) {
	if p.ib.tab != nil {
		p.i++
		return p.handle()
	}
	if !p.idx.Next() {
		return BlockHandle{}, false, p.idx.err
	}
	h, err := t.blockHandle(p.idx.val)
	return h, err == nil, err
}

func (p *indexPos) handle() (BlockHandle, bool, error) {
	if p.i >= len(p.ib.tab) {
		return BlockHandle{}, false, nil
	}
	return p.ib.tab[p.i].h, true, nil
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
	v, ib, err := t.acquireIndex()
	if err != nil {
		it.err = err
		return it
	}
	it.indexV = v
	t.indexIter(&it.index, ib)
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
	v, f, _ := t.acquireFilter()
	v.Release()
	return f != nil
}

// FilterErr returns why the filter block the table names was dropped (it
// was damaged), or nil. Such a table reads correctly, only slower. It
// reads the filter if it was not yet, and returns the I/O error if that
// fails.
func (t *Reader) FilterErr() error {
	v, _, err := t.acquireFilter()
	if err != nil {
		return err
	}
	v.Release()
	t.metaMu.Lock()
	defer t.metaMu.Unlock()
	return t.filterErr
}

// Close releases what the Reader keeps of its index and filter blocks
// (those it keeps itself; the cache's stay cached until evicted, or until
// the table's file is dropped from it): the Reader and every iterator from
// it must be done with. It does not close the io.ReaderAt, which the
// caller closes once the Reader's iterators are closed. A second Close
// does nothing.
func (t *Reader) Close() error {
	t.metaMu.Lock()
	defer t.metaMu.Unlock()
	t.closed = true
	t.index.Store(nil)
	t.filter.Store(nil)
	for _, v := range t.own {
		t.opts.Cache.Unkeep(v)
		v.Release()
	}
	t.own = nil
	return nil
}
