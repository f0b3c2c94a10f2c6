// Package wal reads and writes the record log of LevelDB: the format of
// shale's write-ahead log and of its MANIFEST. The bytes are LevelDB's, so
// the package also reads and writes the .log files of LevelDB, goleveldb and
// Pebble (Pebble's record.Writer; not its LogWriter, which adds other
// fragment types).
//
// # Use
//
// Write records with a Writer, which buffers whole blocks; call Flush to hand
// what is buffered to the underlying io.Writer (then sync the file yourself if
// the records must survive power loss):
//
//	w := wal.NewWriter(f)
//	err := w.WriteRecord(batch)
//	err = w.Flush()
//
// Read them back with a Reader; Next returns io.EOF at the end of the log:
//
//	r := wal.NewReader(f, wal.Named("000005.log"), wal.OnDrop(report))
//	for {
//		rec, err := r.Next()
//		if err == io.EOF {
//			break
//		}
//		...
//	}
//
// A Reader skips damage as LevelDB's reader does and reports every skipped
// stretch to the OnDrop callback, or, with the Strict option, stops at the
// first damage with an error matching ErrCorrupt. A log that ends in the
// middle of a record (a torn tail: the normal result of a crash during a
// write) ends the log like io.EOF, and is reported as a Drop with TornTail set,
// never as damage. NextReader streams a record too large to hold in memory,
// NewRangeReader reads the records that begin in a byte range, and Scanner
// lists the physical fragments of a log for inspection tools.
//
// # Concurrency
//
// A Writer, Reader or Scanner is not safe for concurrent use. Distinct
// Readers over one io.ReaderAt may run concurrently.
//
// # Format
//
// The log is a sequence of 32 KiB blocks; only the last may be partial. A
// block holds fragments (LevelDB: physical records) and, when fewer than
// HeaderSize bytes remain after the last fragment, a zero trailer that readers
// skip. A fragment is a 7-byte header and its payload:
//
//	+-----------+-----------+--------+-------------------+
//	| checksum  | length    | type   | payload           |
//	| uint32 LE | uint16 LE | uint8  | length bytes      |
//	+-----------+-----------+--------+-------------------+
//	0           4           6        7                   7+length
//
// The checksum is the CRC-32C (Castagnoli) of the type byte and the payload,
// masked as LevelDB masks it: ((c >> 15) | (c << 17)) + 0xa282ead8. A record
// that fits in the rest of its block is one FULL fragment; a larger one is a
// FIRST fragment, zero or more MIDDLE fragments (each filling a whole block),
// and a LAST fragment. A fragment never starts in the last 6 bytes of a
// block; when exactly 7 bytes remain, a record other than the empty one
// begins with a FIRST fragment of zero payload bytes that fills them. Type 0
// with length 0 marks zeroed (preallocated) space.
//
// # Packed and compressed records (shale's)
//
// The format's own document names two shortcomings, no packing of tiny
// records and no compression, and says each could be fixed by new record
// types. A Writer given PackSmallRecords or CompressRecords writes these;
// a Reader reads them without being told, and without the options a
// Writer writes LevelDB's bytes exactly. The numbers avoid 5 to 12, which
// RocksDB and Pebble use for types of their own. Part of the format:
//
//	type 13 PACKED          one fragment, never split, holding whole records:
//	                        +--------+---------+--------+---------+-----+
//	                        | uvarint| record 0| uvarint| record 1| ... |
//	                        | len 0  |         | len 1  |         |     |
//	                        +--------+---------+--------+---------+-----+
//	type 14 PACKED-SNAPPY   PACKED whose payload is snappy-compressed
//	type 16 SNAPPY-FULL     FULL whose record is snappy-compressed
//	type 17 SNAPPY-FIRST    FIRST of a record whose fragments, joined (this
//	                        one, then MIDDLE and LAST as usual), are
//	                        snappy-compressed
//
// Each record of a pack starts, for offsets and ranges, where the pack's
// header starts; a damaged pack loses its records, all of them in its
// block. The checksum covers the stored (compressed) bytes; a decoded
// length is bounded (24 times the stored bytes) before anything is
// allocated, and a payload that does not decode is damage. LevelDB's
// reader drops fragments of a type it does not know, and the MIDDLE and
// LAST fragments after one.
package wal
