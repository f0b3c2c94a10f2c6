package shale

import (
	stderrors "errors"
	"strconv"

	"github.com/cockroachdb/errors"
	"github.com/shale-db/shale/internal/batchrepr"
	"github.com/shale-db/shale/internal/dbiter"
	"github.com/shale-db/shale/internal/manifest"
	"github.com/shale-db/shale/sstable"
	"github.com/shale-db/shale/wal"
)

// Error values. Each matches errors.Is, from the standard library or from
// github.com/cockroachdb/errors, through any wrapping this package adds.
var (
	// ErrNotFound is returned by Get when the key has no value.
	ErrNotFound = errors.New("shale: not found")
	// ErrClosed is returned by every method of a closed DB, Snapshot or
	// Iterator.
	ErrClosed = errors.New("shale: closed")
	// ErrLocked is returned by Open when another DB, in this process or
	// another (shale, goleveldb or LevelDB), holds the directory.
	ErrLocked = errors.New("shale: database is locked by another process")
	// ErrCorruption is matched by every error that reports damaged data on
	// disk. The error's message names the file and offset.
	ErrCorruption = errors.New("shale: corruption")
	// ErrReadOnly is returned by writes to a DB opened with
	// Options.ReadOnly.
	ErrReadOnly = errors.New("shale: database is read-only")
	// ErrDiskFull is matched by every error that came from a full disk or
	// an exhausted quota (ENOSPC, EDQUOT), whatever it failed: a write, a
	// flush, a compaction, Open or Close. It does not change what the
	// error means for the database: as for any failed write, nothing is
	// acknowledged until a reopen, and every write acknowledged before it
	// is kept.
	//
	// Writes do not resume by themselves once space is freed (RocksDB's
	// automatic recovery from ENOSPC does): after a failed write or sync
	// the kernel may have dropped pages the DB had handed it, so what is in
	// memory may no longer be what is on disk, and only a replay of the
	// log tells. Free space, Close the DB (which releases its lock and
	// files even when it returns the error) and Open it again. Open needs
	// room for what it replays (see Open).
	ErrDiskFull = errors.New("shale: disk full")
)

// diskFullError marks err, which came from a full disk, so that errors.Is
// matches ErrDiskFull as well as whatever err matched.
// An Open's says what Open needs (openError); any other's says how to
// resume.
type diskFullError struct {
	err    error
	atOpen bool
}

func (e *diskFullError) Error() string {
	if e.atOpen {
		return e.err.Error()
	}
	return e.err.Error() + " (the disk is full: free space, then Close the DB and Open it again to write; acknowledged writes are kept)"
}
func (e *diskFullError) Unwrap() error        { return e.err }
func (e *diskFullError) Is(target error) bool { return target == ErrDiskFull }

// markDiskFull returns err marked as ErrDiskFull if it came from a full
// disk, and err unchanged otherwise.
func markDiskFull(err error) error {
	if err == nil || !diskFull(err) || stderrors.Is(err, ErrDiskFull) {
		return err
	}
	return &diskFullError{err: err}
}

// corruptionError marks err as corruption while keeping err's own chain,
// so that errors.Is matches both ErrCorruption and whatever err matched.
type corruptionError struct{ err error }

func (e *corruptionError) Error() string        { return e.err.Error() }
func (e *corruptionError) Unwrap() error        { return e.err }
func (e *corruptionError) Is(target error) bool { return target == ErrCorruption }

// markCorruption returns err marked as corruption if it matches any of the
// lower layers' corruption sentinels, and err unchanged otherwise.
func markCorruption(err error) error {
	if err == nil || stderrors.Is(err, ErrCorruption) {
		return err
	}
	for _, s := range corruptionSentinels {
		if stderrors.Is(err, s) {
			return &corruptionError{err}
		}
	}
	return err
}

func itoa(i int) string { return strconv.Itoa(i) }

// corruptionSentinels are the lower layers' corruption errors: anything
// matching one of them reaches the user marked as ErrCorruption.
var corruptionSentinels = []error{
	wal.ErrCorrupt, sstable.ErrCorrupt, manifest.ErrCorrupt, batchrepr.ErrCorrupt, dbiter.ErrCorrupt,
}
