package sstable

import (
	"encoding/binary"
	"math/bits"

	"github.com/shale-db/shale/internal/ikey"
)

// A filter block holds one filter for each range of 2^baseLg bytes of the
// file: filter i covers the data blocks that start in [i<<baseLg,
// (i+1)<<baseLg). baseLg is stored in the block's last byte, and readers
// (LevelDB's, goleveldb's, this package's) take it from there. LevelDB
// writes 11, a filter for every 2 KiB; a compressed 4 KiB block is about
// that long, so each block had its own filter and about every other range
// an empty one, each costing its 4-byte offset and a byte for k besides the
// filter's rounding. The Writer sets baseLg to log2 of the block size
// (filterBaseLgFor): a filter covers about two compressed blocks, and the
// filters of fillrandom's 632,000 keys take 0.80 MiB instead of 0.85. A
// filter's bits stay per key, so its false positives are as rare.
const (
	leveldbFilterBaseLg = 11
	maxFilterBaseLg     = 20
)

// filterBaseLgFor returns the baseLg the Writer uses for blocks of
// blockSize bytes: log2 of it, rounded down, within [11, 20].
func filterBaseLgFor(blockSize int) uint8 {
	lg := uint8(bits.Len(uint(blockSize))) - 1
	return min(max(lg, leveldbFilterBaseLg), maxFilterBaseLg)
}

// filterWriter builds a filter block as LevelDB's FilterBlockBuilder does:
// the writer calls startBlock with each data block's offset before adding
// that block's keys, and finish after the last.
type filterWriter struct {
	bitsPerKey int
	baseLg     uint8
	hashes     []uint32 // hashes of the user keys since the last filter
	lastUser   []byte   // last user key hashed, to hash each once per filter
	haveLast   bool
	buf        []byte   // filters generated so far
	offsets    []uint32 // start of each filter in buf
}

// startBlock moves to the data block that starts at offset, generating
// filters (empty ones for ranges that start no block) up to its range.
func (f *filterWriter) startBlock(offset uint64) {
	idx := offset >> f.baseLg
	for uint64(len(f.offsets)) < idx {
		f.generate()
	}
}

// addKey adds an internal key: the filter is over its user key, since Get
// asks about a user key at any sequence number.
func (f *filterWriter) addKey(k []byte) {
	u := ikey.UserKey(k)
	if f.haveLast && string(u) == string(f.lastUser) {
		return
	}
	f.lastUser = append(f.lastUser[:0], u...)
	f.haveLast = true
	f.hashes = append(f.hashes, bloomHash(u))
}

// generate closes the current filter (empty if no keys were added).
func (f *filterWriter) generate() {
	f.offsets = append(f.offsets, uint32(len(f.buf)))
	if len(f.hashes) > 0 {
		f.buf = appendBloom(f.buf, f.hashes, f.bitsPerKey)
	}
	f.hashes = f.hashes[:0]
	f.haveLast = false
}

// finish returns the filter block: filters, their offsets (fixed32 each),
// the offset of that array (fixed32), then baseLg in a byte.
func (f *filterWriter) finish() []byte {
	if len(f.hashes) > 0 {
		f.generate()
	}
	arrayOff := uint32(len(f.buf))
	for _, o := range f.offsets {
		f.buf = binary.LittleEndian.AppendUint32(f.buf, o)
	}
	f.buf = binary.LittleEndian.AppendUint32(f.buf, arrayOff)
	return append(f.buf, f.baseLg)
}

// filterReader answers "may this data block hold this user key?" from a
// filter block. A malformed block answers "maybe" everywhere it is
// unsure: a filter may only ever save reads, never hide a key.
type filterReader struct {
	data     []byte // the filters: data[:arrayOff]
	offsets  []byte // the fixed32 offsets array
	num      int
	baseLg   uint
	disabled bool
}

// newFilterReader parses a filter block. ok is false if it is malformed,
// in which case the table is read without a filter.
func newFilterReader(b []byte) (*filterReader, bool) {
	if len(b) < 5 {
		return nil, false
	}
	baseLg := uint(b[len(b)-1])
	arrayOff := binary.LittleEndian.Uint32(b[len(b)-5:])
	if uint64(arrayOff) > uint64(len(b)-5) || baseLg > 63 {
		return nil, false
	}
	return &filterReader{
		data:    b[:arrayOff],
		offsets: b[arrayOff : len(b)-5],
		num:     (len(b) - 5 - int(arrayOff)) / 4,
		baseLg:  baseLg,
	}, true
}

// mayContain reports whether the data block at blockOffset may hold an
// entry whose user key hashes to h.
func (f *filterReader) mayContain(blockOffset uint64, h uint32) bool {
	idx := blockOffset >> f.baseLg
	if idx >= uint64(f.num) {
		return true
	}
	start := binary.LittleEndian.Uint32(f.offsets[4*idx:])
	limit := uint32(len(f.data))
	if idx+1 < uint64(f.num) {
		limit = binary.LittleEndian.Uint32(f.offsets[4*idx+4:])
	}
	if start > limit || limit > uint32(len(f.data)) {
		return true
	}
	return bloomMayContain(f.data[start:limit], h)
}
