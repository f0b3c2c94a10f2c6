// Package sstable reads and writes sorted tables in LevelDB's table format,
// so that goleveldb and LevelDB read the tables shale writes and shale
// reads theirs.
//
// A Writer takes internal keys (package ikey) in increasing order and
// writes a table to an io.Writer:
//
//	w := sstable.NewWriter(f, sstable.WriterOptions{})
//	for ... { err = w.Add(ikey, value) }
//	err = w.Close() // then the caller syncs and closes f
//	meta := w.Meta()
//
// Open reads one back from an io.ReaderAt; Get finds the newest version of
// a user key visible at a sequence number (bloom filter first) and NewIter
// iterates over every entry:
//
//	r, err := sstable.Open(f, size, sstable.ReaderOptions{FileName: name, FileNum: n, Cache: c})
//	value, kind, found, err := r.Get(ukey, seq, nil)
//	it := r.NewIter()
//
// A Writer is for one goroutine. A Reader is safe for concurrent use; each
// of its iterators is for one goroutine. Every byte read from a file is
// checked: damage is an error matching ErrCorrupt (with the standard
// errors.Is) that names the file and offset, never a panic or wrong data.
// Values returned by Get and iterators alias immutable blocks.
//
// # Format
//
// A table is a sequence of blocks, each followed by a 5-byte trailer, and a
// 48-byte footer:
//
//	+--------------+---------+-----+--------------+--------------+-------------+--------+
//	| data block 0 | trailer | ... | filter block | metaindex    | index block | footer |
//	|              |         |     | + trailer    | + trailer    | + trailer   |        |
//	+--------------+---------+-----+--------------+--------------+-------------+--------+
//
// Block trailer (TrailerLen = 5): the compression byte (0 none, 1 snappy
// block format, 2 zstd, which this package refuses), then fixed32 LE of
// the masked crc32c (Castagnoli) of the stored block and that byte. The
// mask is ((c >> 15) | (c << 17)) + 0xa282ead8. The Writer compresses a
// block only when snappy saves at least an eighth of it. It writes the
// snappy format with its own encoder (snappy_encode.go), which finds
// smaller encodings than golang/snappy's; golang/snappy decodes.
//
// Data, index and metaindex blocks share one layout. Each entry stores only
// what its key does not share with the previous key; every RestartInterval
// entries (32 in data blocks by default, LevelDB's 16; 1 in the index) an
// entry stores its whole key (a restart point), so a reader can
// binary-search the restart array:
//
//	+--------------------+----------------------+------------------+-----------+-------+
//	| shared (varint32)  | unshared (varint32)  | value length     | key delta | value |
//	|                    |                      | (varint32)       |           |       |
//	+--------------------+----------------------+------------------+-----------+-------+
//	... entries ... | restart offset 0 (fixed32) | ... | restart count (fixed32) |
//
// Data blocks (about BlockSize = 4 KiB before compression) map internal
// keys to values. The index block has one entry per data block: a key >=
// the block's last key and < the next block's first (shortened with
// ikey.Separator, and ikey.Successor after the last block) mapping to the
// block's handle (varint64 offset, varint64 length). The metaindex maps
// "filter.leveldb.BuiltinBloomFilter2" to the filter block's handle.
//
// The filter block holds bloom filters over user keys: filter i covers the
// data blocks that start in [i<<lg, (i+1)<<lg), with lg in the block's last
// byte (LevelDB writes 11; the Writer log2 of BlockSize, see
// filterBaseLgFor):
//
//	+----------+-----+------------+--------------------+-----+----------------------+----------+
//	| filter 0 | ... | filter n-1 | offset of filter 0 | ... | offset of this array | base lg  |
//	|          |     |            | (fixed32)          |     | (fixed32)            | (lg)     |
//	+----------+-----+------------+--------------------+-----+----------------------+----------+
//
// Each filter is LevelDB's bloom filter: bits set by k probes of double
// hashing (h, then h += h rotated right by 17) from LevelDB's Hash with
// seed 0xbc9f1d34, at least 64 bits, then k in one byte. Tables whose
// metaindex names "filter.leveldb.BuiltinBloomFilter" (goleveldb, and old
// LevelDB whose hash mishandled bytes >= 0x80) are read without a filter.
//
// Range deletions (shale's, RocksDB's block; part of the format): a table
// that holds any has a range-deletion block, named in the metaindex by
// "rocksdb.range_del" (RangeDelMetaKey), in the data blocks' layout with a
// restart interval of 1. Each entry maps the internal key (start, seq,
// ikey.KindRangeDelete = 15) to the end key: the user keys in [start, end)
// below seq are deleted. The ranges are fragmented (two entries' ranges
// coincide or do not overlap), in internal-key order:
//
//	key (start#seq,kind)    value (end)
//	+-------------------+   +-----+
//	| b#9,RANGEDEL      |-->| d   |   [b, d) deleted at 9 ...
//	| b#4,RANGEDEL      |-->| d   |   ... and at 4
//	| d#4,RANGEDEL      |-->| f   |   [d, f) deleted at 4
//	+-------------------+   +-----+
//
// The table's smallest key then covers the first start (first start, its
// newest seq, RANGEDEL) and its largest the last end as (end, MaxSeq,
// RANGEDEL), which sorts before every entry of the end key: the end is
// exclusive (ikey.IsRangeEnd). LevelDB and goleveldb skip a metaindex name
// they do not know and would read such a table as if nothing were deleted:
// a directory with one is marked so that both refuse it (see the shale
// package).
//
// Footer (FooterLen = 48): the metaindex handle and the index handle as
// varints, zero-padded to 40 bytes, then Magic 0xdb4775248b80fb57 as
// fixed64 LE.
package sstable
