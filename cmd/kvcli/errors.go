package main

import (
	"errors"
	"fmt"
	"strings"

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
	return &exitError{code: exitUsage, err: errors.New(msg)}
}

// notFound is a get of a key that has no value: exit status 1.
func notFound(msg string) error {
	return &exitError{code: exitNotFound, err: errors.New(msg)}
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

// errorLine returns the one line kvcli prints on stderr for err:
// "kvcli: " and the cause, with the library's own package prefix dropped
// ("kvcli: database DIR is locked by another process"). Damage is written
// as "FILE: REASON at offset N".
func errorLine(err error) string {
	if err == errHelpShown {
		return ""
	}
	msg := describe(err)
	for _, p := range []string{"shale: ", "kvcli: "} {
		msg = strings.TrimPrefix(msg, p)
	}
	msg = strings.ReplaceAll(msg, "\n", " ")
	return "kvcli: " + msg
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
