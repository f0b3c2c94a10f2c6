package main

import (
	"encoding/binary"

	"github.com/golang/snappy"

	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/shale-db/shale/wal"
)

// logDumper prints the physical fragments of a record log (a WAL or a
// MANIFEST) and, after the fragment that completes each record, the record
// decoded by its decode function. It assembles records from the fragments
// itself, so that the listing shows exactly where each record and each
// damaged stretch lies.
type logDumper struct {
	w *bufio.Writer
	// decode prints a record, indented, and reports whether it decoded as
	// the kind of record the log should hold.
	decode func(w *bufio.Writer, rec []byte) bool
	// The record under way: its fragments so far, from offset recOff.
	rec       []byte
	recOff    int64
	inRec     bool
	recSnappy bool // the record began with a SNAPPY-FIRST fragment
	logCounts
}

// logCounts are what a log dump found, for its summary line and for the
// callers' checks of what the file is.
type logCounts struct {
	frags, records, damaged, torn int
	decoded                       int // records that decode as the log's kind
}

// dumpLogFile dumps the log at path and returns what it found.
func dumpLogFile(w *bufio.Writer, path string, decode func(*bufio.Writer, []byte) bool) (logCounts, error) {
	f, err := os.Open(path)
	if err != nil {
		return logCounts{}, failure(err)
	}
	defer f.Close()
	d := &logDumper{w: w, decode: decode}
	s := wal.NewScanner(bufio.NewReaderSize(f, wal.BlockSize))
	for {
		fr, err := s.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return d.logCounts, failure(err)
		}
		d.fragment(fr)
	}
	d.cut("the log ends inside it")
	fmt.Fprintf(w, "%s: %d fragments, %d records, %d damaged stretches, %d torn tails\n",
		filepath.Base(path), d.frags, d.records, d.damaged, d.torn)
	return d.logCounts, nil
}

// fragment prints one fragment or skipped stretch and advances the record.
func (d *logDumper) fragment(fr wal.Fragment) {
	if fr.Problem != "" {
		d.problem(fr)
		return
	}
	d.frags++
	fmt.Fprintf(d.w, "@%d %s fragment, %d bytes, checksum ok\n", fr.Offset, fr.Type, fr.Length)
	switch fr.Type {
	case wal.FullType:
		d.cut("a FULL fragment follows")
		d.emit(fr.Offset, fr.Payload)
	case wal.SnappyFullType:
		d.cut("a SNAPPY-FULL fragment follows")
		d.emitCompressed(fr.Offset, fr.Payload)
	case wal.PackedType, wal.PackedSnappyType:
		d.cut("a pack follows")
		d.emitPack(fr)
	case wal.FirstType, wal.SnappyFirstType:
		d.cut("a FIRST fragment follows")
		d.rec, d.recOff, d.inRec = append(d.rec[:0], fr.Payload...), fr.Offset, true
		d.recSnappy = fr.Type == wal.SnappyFirstType
	case wal.MiddleType, wal.LastType:
		if !d.inRec {
			d.damaged++
			fmt.Fprintf(d.w, "  damage: %s fragment without a FIRST before it: dropped\n", fr.Type)
			return
		}
		d.rec = append(d.rec, fr.Payload...)
		if fr.Type == wal.LastType {
			d.inRec = false
			if d.recSnappy {
				d.emitCompressed(d.recOff, d.rec)
			} else {
				d.emit(d.recOff, d.rec)
			}
		}
	default:
		d.damaged++
		d.cut("a fragment of unknown type follows")
		fmt.Fprintf(d.w, "  damage: unknown fragment type: dropped\n")
	}
}

// problem prints a stretch that holds no fragment.
func (d *logDumper) problem(fr wal.Fragment) {
	switch fr.Problem {
	case "zeroed space":
		fmt.Fprintf(d.w, "@%d zeroed space, %d bytes (preallocated; skipped)\n", fr.Offset, fr.Span)
		return
	case "incomplete header", "incomplete record":
		d.torn++
		fmt.Fprintf(d.w, "@%d torn tail: %s, %d bytes (the log ends inside a write)\n", fr.Offset, fr.Problem, fr.Span)
	default:
		d.damaged++
		fmt.Fprintf(d.w, "@%d damage: %s, %d bytes skipped (to the end of the block)\n", fr.Offset, fr.Problem, fr.Span)
	}
	d.cut("the stretch above interrupts it")
}

// cut drops the record under way, if any, saying why.
func (d *logDumper) cut(why string) {
	if !d.inRec {
		return
	}
	d.inRec = false
	fmt.Fprintf(d.w, "  record @%d (%d bytes so far) is incomplete: %s: dropped\n", d.recOff, len(d.rec), why)
}

// emitCompressed prints a complete snappy-compressed record (shale's
// SNAPPY types), or the damage that keeps it from decoding.
func (d *logDumper) emitCompressed(off int64, stored []byte) {
	rec, err := snappy.Decode(nil, stored)
	if err != nil {
		d.damaged++
		fmt.Fprintf(d.w, "  damage: record @%d: compressed payload does not decode: %v: dropped\n", off, err)
		return
	}
	fmt.Fprintf(d.w, "  (snappy-compressed: %d bytes stored)\n", len(stored))
	d.emit(off, rec)
}

// emitPack prints the records of a pack (shale's PACKED types), each at the
// pack's offset, or the damage that keeps it from splitting.
func (d *logDumper) emitPack(fr wal.Fragment) {
	data := fr.Payload
	if fr.Type == wal.PackedSnappyType {
		var err error
		if data, err = snappy.Decode(nil, data); err != nil {
			d.damaged++
			fmt.Fprintf(d.w, "  damage: pack @%d: compressed payload does not decode: %v: dropped\n", fr.Offset, err)
			return
		}
	}
	var recs [][]byte
	for len(data) > 0 {
		n, w := binary.Uvarint(data)
		if w <= 0 || n > uint64(len(data)-w) {
			d.damaged++
			fmt.Fprintf(d.w, "  damage: pack @%d: malformed record %d: dropped\n", fr.Offset, len(recs))
			return
		}
		recs = append(recs, data[w:w+int(n)])
		data = data[w+int(n):]
	}
	fmt.Fprintf(d.w, "  pack of %d records\n", len(recs))
	for _, rec := range recs {
		d.emit(fr.Offset, rec)
	}
}

// emit prints a complete record.
func (d *logDumper) emit(off int64, rec []byte) {
	d.records++
	fmt.Fprintf(d.w, "  record @%d, %d bytes:\n", off, len(rec))
	if d.decode(d.w, rec) {
		d.decoded++
	}
}
