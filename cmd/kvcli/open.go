package main

import (
	"errors"
	"io/fs"
	"log/slog"
	"os"

	"github.com/shale-db/shale/internal/filename"

	"github.com/shale-db/shale"
)

// openRead opens the database read-only: nothing on disk changes, and a
// directory without a database is an error rather than a new database.
func (e *env) openRead() (*shale.DB, error) {
	return e.open(true)
}

// openWrite opens the database for writing, creating it if there is none.
func (e *env) openWrite() (*shale.DB, error) {
	return e.open(false)
}

// openExisting opens an existing database for writing; a directory without
// one is an error.
func (e *env) openExisting() (*shale.DB, error) {
	dir, err := e.needDB()
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filename.Make(dir, filename.Current, 0)); errors.Is(err, fs.ErrNotExist) {
		return nil, failuref("no database in %s", dir)
	}
	return e.open(false)
}

func (e *env) open(readOnly bool) (*shale.DB, error) {
	dir, err := e.needDB()
	if err != nil {
		return nil, err
	}
	mode, err := e.recoveryMode()
	if err != nil {
		return nil, err
	}
	// No Logger: a writable Open logs to the database's LOG file, a
	// read-only one nowhere; reportRecovery says on stderr, in one line,
	// whatever recovery dropped.
	db, err := shale.Open(dir, &shale.Options{ReadOnly: readOnly, Recovery: mode})
	if err != nil {
		return nil, failure(err)
	}
	e.reportRecovery(db, readOnly)
	return db, nil
}

// logger reports warnings and worse on stderr, for crashtest's writer
// child, whose stderr the parent shows when a cycle fails.
func (e *env) logger() *slog.Logger {
	h := slog.NewTextHandler(e.stderr, &slog.HandlerOptions{
		Level: slog.LevelWarn,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 {
				return slog.Attr{}
			}
			return a
		},
	})
	return slog.New(h)
}

// closeDB closes db, keeping the first error.
func closeDB(db *shale.DB, err *error) {
	if cerr := db.Close(); cerr != nil && *err == nil {
		*err = failure(cerr)
	}
}
