package main

import (
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
	rec    []byte
	recOff int64
	inRec  bool
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
	case wal.FirstType:
		d.cut("a FIRST fragment follows")
		d.rec, d.recOff, d.inRec = append(d.rec[:0], fr.Payload...), fr.Offset, true
	case wal.MiddleType, wal.LastType:
		if !d.inRec {
			d.damaged++
			fmt.Fprintf(d.w, "  damage: %s fragment without a FIRST before it: dropped\n", fr.Type)
			return
		}
		d.rec = append(d.rec, fr.Payload...)
		if fr.Type == wal.LastType {
			d.inRec = false
			d.emit(d.recOff, d.rec)
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

// emit prints a complete record.
func (d *logDumper) emit(off int64, rec []byte) {
	d.records++
	fmt.Fprintf(d.w, "  record @%d, %d bytes:\n", off, len(rec))
	if d.decode(d.w, rec) {
		d.decoded++
	}
}
