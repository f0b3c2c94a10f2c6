package sstable

import "github.com/shale-db/shale/internal/manual"

// readaheadSize is how much of a table one read brings in once an iterator
// reads blocks in file order: at 4 KiB blocks (about 2.2 KiB once
// compressed), one read serves about 30 of them where each would otherwise
// be a read of its own. At 256 KiB, the buffers of a scan over six tables
// beside a compaction of as many took 2 MiB more of the process's peak
// memory (db_bench's readseq and the recovery workload, shalebench), for
// no measurable gain in speed: the kernel's own readahead keeps the page
// cache ahead of either size.
const readaheadSize = 64 << 10

// readaheadAfter is how many blocks an iterator reads in a row, each
// starting where the one before ended, before reads go through readahead:
// a point lookup or a short scan reads one or two blocks and no more.
const readaheadAfter = 2

// readaheadPool holds the readahead buffers, outside the Go heap: a
// compaction holds one for each table it reads at once, and on the heap
// they counted twice (the collector's headroom) and lingered in a
// sync.Pool across collections (3 MiB of the heap while readrandom's
// opening compaction ran). A few are kept for the next iterator.
var readaheadPool = manual.Pool{Size: readaheadSize, Keep: 4}

// readahead serves the data blocks of a table that an iterator reads in
// file order (a scan, a compaction's input) from reads of readaheadSize
// bytes. The zero value is ready; release returns its buffer.
type readahead struct {
	have bool   // next is set
	next uint64 // the offset just past the last block asked for
	run  int    // blocks asked for in a row, each at the last one's end

	// group, if not nil, counts the blocks read in order by every table
	// iterator of one scan (see ScanGroup).
	group *ScanGroup

	buf *manual.Buf // from readaheadPool; nil until the first read
	win []byte      // the file's bytes from off, read ahead
	off uint64

	// dec holds the last two blocks decoded for this iterator alone (see
	// scratch); decNext is the one to decode into next.
	dec     [2][]byte
	decNext int
}

// block returns the bytes of the block at h and its trailer if readahead
// holds them or reads them ahead now; nil (and no error) sends the caller
// to read the block alone. A failed read ahead is the block's read error:
// it is not retried in smaller pieces, which could hide a failing disk
// until later. The bytes are valid until the next call.
func (ra *readahead) block(t *Reader, h BlockHandle) ([]byte, error) {
	if ra == nil {
		return nil, nil
	}
	if ra.have && h.Offset == ra.next {
		ra.run++
		if ra.group != nil {
			ra.group.blocks++
		}
	} else {
		ra.run = 0
	}
	ra.have, ra.next = true, h.Offset+h.Length+TrailerLen
	if ra.run < readaheadAfter || t.checkHandle(h) != nil {
		return nil, nil
	}
	end := h.Offset + h.Length + TrailerLen
	if h.Offset >= ra.off && end <= ra.off+uint64(len(ra.win)) {
		return ra.win[h.Offset-ra.off : end-ra.off], nil
	}
	n := min(uint64(readaheadSize), uint64(t.size-FooterLen)-h.Offset)
	if end-h.Offset > n {
		return nil, nil // a block larger than the readahead
	}
	if ra.buf == nil {
		ra.buf = readaheadPool.Get()
	}
	ra.win = nil
	win := ra.buf.B[:n]
	if err := t.readAt(win, int64(h.Offset)); err != nil {
		return nil, err
	}
	ra.win, ra.off = win, h.Offset
	return ra.win[:end-h.Offset], nil
}

// noFillAfter is how many blocks read in a row, each at the last one's end,
// make a long scan: 64 blocks of 4 KiB, 256 KiB of one table.
const noFillAfter = 64

// longScan reports whether the iterator has read so many blocks in order
// from the file that it is scanning a large range: the blocks it reads from
// here on are not added to the block cache. A scan larger than the cache
// would otherwise evict every block that point reads use and gain nothing,
// since it reads each block once; blocks it finds in the cache it still
// uses. (LevelDB leaves this to its ReadOptions.fill_cache.) In a group,
// the blocks that the group's other iterators read in order count too,
// once this one reads in order as well.
func (ra *readahead) longScan() bool {
	if ra == nil {
		return false
	}
	return ra.run >= noFillAfter || ra.group != nil && ra.run > 0 && ra.group.blocks >= noFillAfter
}

// ScanGroup joins the table iterators of one scan that reads several
// tables side by side (a database iterator merging the tables of level 0)
// in deciding when the scan has become long (see longScan). Alone, each
// table's iterator would cache its first 64 blocks: a scan over the five
// tables a recovered database holds at level 0 put 320 blocks in the
// cache, and 1.3 MB more in the process's peak memory, where a scan of
// one table puts 64. The zero value is ready. A ScanGroup is not safe for
// concurrent use: its iterators are used by one goroutine, as the
// iterator that merges them is.
type ScanGroup struct {
	blocks int // blocks read in order since Reset, by all the group's iterators
}

// Reset starts the count over, as a new scan does: call it when the
// iterator that merges the group's iterators is positioned by a seek, a
// First or a Last. Reset on a nil group does nothing.
func (g *ScanGroup) Reset() {
	if g != nil {
		g.blocks = 0
	}
}

// ScanRun implements iterator.Scanner.
func (it *tableIter) ScanRun() int {
	if !it.ra.have {
		return 0
	}
	return it.ra.run + 1 // run counts the blocks after the first
}

// ContinueScan implements iterator.Scanner: a read of the table's first
// data block (at offset 0) continues the run of n blocks read before it in
// another table.
func (it *tableIter) ContinueScan(n int) {
	it.ra.have, it.ra.next, it.ra.run = true, 0, n-1
}

// scratch returns the buffer to decode the next block into, one that
// neither the current block nor the one before it occupies. Blocks that go
// to no cache (a compaction's, a long scan's) are decoded into two buffers
// in turn rather than each into a new allocation: whoever holds a value
// of the block before the current one (the entry an iterator above this
// one last returned, as it steps past the block's end) still reads it
// intact; nothing above holds one older than that, and what must live
// longer is copied (an iterator's saved value in reverse). Keys are not in
// the block at all: the block iterator rebuilds each into its own buffer.
func (ra *readahead) scratch() []byte {
	return ra.dec[ra.decNext]
}

// used records that b, decoded into scratch's buffer or a larger one that
// replaced it, is now the current block.
func (ra *readahead) used(b []byte) {
	if b != nil {
		ra.dec[ra.decNext] = b
		ra.decNext ^= 1
	}
}

// release returns the buffer to the pool.
func (ra *readahead) release() {
	if ra.buf != nil {
		ra.buf.Put()
	}
	*ra = readahead{}
}
