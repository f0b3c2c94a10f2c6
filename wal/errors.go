package wal

import (
	"fmt"

	"github.com/cockroachdb/errors"
)

// ErrCorrupt is matched, with the standard library's errors.Is, by every
// error that reports damage in a log: a *CorruptionError returned in strict
// mode, and the error a streamed record's Read returns when a later fragment
// proves damaged. A torn tail is not damage and never matches it.
var ErrCorrupt = errors.New("wal: corrupt log")

// errStale is returned by the Read of a record stream that a later call to
// Next or NextReader has replaced.
var errStale = errors.New("wal: stale record reader")

// CorruptionError describes damage found in a log: the stretch of the log
// [Offset, Offset+Bytes) yielded no record, for Reason. It matches ErrCorrupt.
type CorruptionError struct {
	File   string // the name given with Named, or ""
	Offset int64  // offset in the log where the damaged stretch begins
	Bytes  int64  // length of the damaged stretch
	Reason string // what was wrong, e.g. "checksum mismatch"
}

// Error returns "wal: FILE: offset N: REASON (M bytes)", without the file
// part when no name was given.
func (e *CorruptionError) Error() string {
	return "wal: " + where(e.File, e.Offset) + e.Reason +
		fmt.Sprintf(" (%d bytes)", e.Bytes)
}

// Unwrap returns ErrCorrupt, so that errors.Is(err, ErrCorrupt) holds.
func (e *CorruptionError) Unwrap() error { return ErrCorrupt }

// Drop describes a stretch of a log that a Reader skipped without yielding a
// record: [Offset, Offset+Bytes) of the log. Offsets count from the start of
// the log; Bytes counts every byte of the stretch, headers and trailers
// included.
type Drop struct {
	File   string // the name given with Named, or ""
	Offset int64  // offset in the log where the skipped stretch begins
	Bytes  int64  // length of the skipped stretch
	Reason string // why, e.g. "checksum mismatch" or "incomplete record"
	// TornTail is true when the log ends inside this stretch: the writer
	// stopped mid-record, as a crash during a write leaves a log. That is
	// the normal end of the newest log, not damage: it is reported even in
	// strict mode, and never as an error. When false, the stretch is damage.
	TornTail bool
}

// String returns a one-line description for logs and reports.
func (d Drop) String() string {
	kind := "damage"
	if d.TornTail {
		kind = "torn tail"
	}
	return fmt.Sprintf("wal: %s%s: %s, %d bytes dropped", where(d.File, d.Offset), kind, d.Reason, d.Bytes)
}

func where(file string, off int64) string {
	if file == "" {
		return fmt.Sprintf("offset %d: ", off)
	}
	return fmt.Sprintf("%s: offset %d: ", file, off)
}
