package main

import (
	"bufio"
	"fmt"

	"github.com/shale-db/shale/internal/batchrepr"
	"github.com/shale-db/shale/internal/ikey"
)

var walCmd = &command{
	name:    "wal",
	args:    "dump FILE",
	summary: "list a write-ahead log's fragments and batches",
	detail: `"wal dump FILE" lists each physical fragment of the log FILE (offset,
type, length, whether its checksum holds), each damaged or torn stretch,
and, after the fragment that completes each record, the batch it holds:
its sequence number and its entries, one "SEQ PUT KEY VALUE" or "SEQ DEL
KEY" line each, tab-separated and escaped as scan's output is. Values
longer than 64 bytes are cut short unless --full is given. Works on the
.log files of LevelDB and goleveldb too. Reads the file only.

A FILE without a directory part is taken inside --db, when it is given.
A directory, or a file that is plainly of another kind (a table, a
MANIFEST, CURRENT), is refused with exit status 2. A file none of whose
records is a batch ends the dump with exit status 3, as does one not
named as a log none of whose fragments is intact; damage in a log is
listed, with exit status 0.`,
	run: runWAL,
}

func runWAL(e *env, c *command, args []string) error {
	fs := e.newFlagSet(c.name)
	full := fs.Bool("full", false, "print whole values")
	file, err := e.parseDump(c, fs, args)
	if err != nil {
		return err
	}
	if file, err = e.dumpFile(file, kindLog); err != nil {
		return err
	}
	n, err := dumpLogFile(e.stdout, file, func(w *bufio.Writer, rec []byte) bool {
		return e.writeBatch(w, rec, *full)
	})
	if err != nil {
		return err
	}
	return checkLogContent(file, kindLog, n)
}

// writeBatch prints the batch in rec, or why it does not decode, and
// reports whether it decoded.
func (e *env) writeBatch(w *bufio.Writer, rec []byte, full bool) bool {
	r := batchrepr.NewReader(rec)
	if r.Err() != nil {
		fmt.Fprintf(w, "    damage: malformed batch: %v\n", r.Err())
		return false
	}
	fmt.Fprintf(w, "    batch: sequence %d, %d entries\n", r.Seq(), r.Count())
	seq := r.Seq()
	for {
		kind, k, v, ok := r.Next()
		if !ok {
			break
		}
		fmt.Fprintf(w, "    %d\t%s\t%s", seq, kind, e.show(k))
		switch kind {
		case ikey.KindSet:
			fmt.Fprintf(w, "\t%s", e.clip(v, full))
		case ikey.KindRangeDelete:
			fmt.Fprintf(w, "\tto %s (exclusive)", e.showBound(v, "no end"))
		}
		w.WriteByte('\n')
		seq++
	}
	if r.Err() != nil {
		fmt.Fprintf(w, "    damage: malformed batch: %v\n", r.Err())
		return false
	}
	return true
}

// clipLen is how much of a value the dumps show without --full.
const clipLen = 64

// clip formats v for a dump: whole with full, else its first clipLen bytes
// and its length.
func (e *env) clip(v []byte, full bool) string {
	if full || len(v) <= clipLen {
		return e.show(v)
	}
	return fmt.Sprintf("%s... (%d bytes)", e.show(v[:clipLen]), len(v))
}
