package main

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/shale-db/shale"
	"github.com/shale-db/shale/internal/batchrepr"
	"github.com/shale-db/shale/internal/dbiter"
	"github.com/shale-db/shale/internal/manifest"
	"github.com/shale-db/shale/sstable"
	"github.com/shale-db/shale/wal"
)

// Exit statuses. They are part of kvcli's interface: scripts test them.
const (
	exitOK       = 0 // success
	exitNotFound = 1 // get: the key has no value
	exitUsage    = 2 // bad command line
	exitFailure  = 3 // anything else: I/O error, lock held, damage found
)

// exitError carries an exit status with the error that caused it.
type exitError struct {
	code int
	err  error // nil only for errHelpShown
	// own is set on a message kvcli wrote itself (usageError, notFound),
	// which quotes the user's keys and arguments: errorLine prints it as
	// it is, not cleaned up as a library error's chain.
	own bool
}

func (e *exitError) Error() string {
	if e.err == nil {
		return ""
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// errHelpShown ends a command whose -h printed its help: exit status 0.
var errHelpShown = &exitError{code: exitOK}

// usageError is a bad command line: exit status 2.
func usageError(msg string) error {
	return &exitError{code: exitUsage, err: errors.New(msg), own: true}
}

// notFound is a get of a key that has no value: exit status 1.
func notFound(msg string) error {
	return &exitError{code: exitNotFound, err: errors.New(msg), own: true}
}

// failure is any other error: exit status 3.
func failure(err error) error {
	return &exitError{code: exitFailure, err: err}
}

// failuref is failure with a formatted message.
func failuref(format string, args ...any) error {
	return failure(fmt.Errorf(format, args...))
}

// exitCode returns the exit status for err.
func exitCode(err error) int {
	var x *exitError
	if errors.As(err, &x) {
		return x.code
	}
	return exitFailure
}

// errorLine returns the one line kvcli prints on stderr for err: "kvcli: "
// and the cause as one sentence. The library's messages chain package
// prefixes and contexts ("shale: table 000004 is missing: tablecache: open
// table 000004: ...: shale: corruption"); the line drops the package
// prefixes and a part repeated twice in a row, and says "(damaged data)"
// in place of a closing corruption sentinel. Damage is written as "FILE:
// REASON at offset N". A message kvcli wrote itself is printed as it is:
// the key in "kvcli get shale"'s "shale: not found" is no package prefix.
func errorLine(err error) string {
	if err == errHelpShown {
		return ""
	}
	if x, ok := err.(*exitError); ok && x.own {
		return "kvcli: " + strings.ReplaceAll(x.err.Error(), "\n", " ")
	}
	msg, damaged := trimSentinels(err, describe(err))
	msg = packagePrefix.ReplaceAllString(msg, "$1")
	parts := strings.Split(msg, ": ")
	parts = slices.Compact(parts)
	msg = strings.ReplaceAll(strings.Join(parts, ": "), "\n", " ")
	if damaged {
		msg += " (damaged data)"
	}
	return "kvcli: " + msg
}

// packagePrefix matches the message prefix of one of the module's packages
// at the start of a message or of one of its ": "-separated parts.
var packagePrefix = regexp.MustCompile(`(^|: )(?:` + strings.Join(modulePackages, "|") + `): `)

// modulePackages are the names of the module's packages whose errors
// kvcli may print. TestModulePackages keeps the list complete.
var modulePackages = []string{
	"shale", "kvcli", "wal", "sstable", "memtable", "compaction", "batchrepr", "cache", "manual",
	"dbiter", "filename", "ikey", "iterator", "itertest", "keyfilter", "leveliter", "manifest",
	"merging", "rangedel", "tablecache", "vfs",
}

// corruptionSentinels are the errors whose text ends a message that
// reports damage; errorLine says "(damaged data)" instead.
var corruptionSentinels = []error{
	shale.ErrCorruption, wal.ErrCorrupt, sstable.ErrCorrupt, manifest.ErrCorrupt,
	batchrepr.ErrCorrupt, dbiter.ErrCorrupt,
}

// trimSentinels removes from the end of msg each ": "+sentinel text of a
// corruption sentinel err matches, and reports whether it removed any.
func trimSentinels(err error, msg string) (string, bool) {
	trimmed := false
	for again := true; again; {
		again = false
		for _, s := range corruptionSentinels {
			if t, ok := strings.CutSuffix(msg, ": "+s.Error()); ok && errors.Is(err, s) {
				msg, trimmed, again = t, true, true
			}
		}
	}
	return msg, trimmed
}

// describe formats the damage errors of the format packages from their
// fields, and any other error by its message.
func describe(err error) string {
	var te *sstable.TableError
	if errors.As(err, &te) {
		return fmt.Sprintf("%s: %s at offset %d", orUnnamed(te.File, "table"), te.Reason, te.Offset)
	}
	var we *wal.CorruptionError
	if errors.As(err, &we) {
		return fmt.Sprintf("%s: %s at offset %d (%d bytes)", orUnnamed(we.File, "log"), we.Reason, we.Offset, we.Bytes)
	}
	return err.Error()
}

func orUnnamed(name, def string) string {
	if name == "" {
		return def
	}
	return name
}
