package shale

import (
	stderrors "errors"
	"io/fs"
	"strconv"
	"strings"

	"github.com/cockroachdb/errors"
	"github.com/shale-db/shale/internal/filename"
)

// checkDir is what a writable Open checks before it creates anything in
// the directory: that it exists or may be created (ErrorIfNotExists), and
// that every entry in it is one that shale, LevelDB or goleveldb writes.
// A directory holding only such names is a database, possibly one a crash
// left half created; any other entry means it is not, and Open refuses
// rather than turn it into one or delete a file that merely looks like
// one of ours.
func (db *DB) checkDir() error {
	names, err := db.fs.List(db.dir)
	if stderrors.Is(err, fs.ErrNotExist) {
		if db.opts.ErrorIfNotExists {
			return &noDatabaseError{dir: db.dir}
		}
		return nil
	}
	if err != nil {
		return errors.Wrap(err, "shale: list database directory")
	}
	hasCurrent := false
	for _, name := range names {
		if !isDatabaseFile(name) {
			return errors.Newf("shale: %s is not a database: it holds %q, which no database writes", db.dir, name)
		}
		hasCurrent = hasCurrent || name == "CURRENT"
	}
	if db.opts.ErrorIfNotExists && !hasCurrent {
		return &noDatabaseError{dir: db.dir}
	}
	return nil
}

// isDatabaseFile reports whether name is an entry that a database
// directory may hold: the files filename names (LOCK, LOG, LOG.old,
// CURRENT, MANIFEST-*, logs, tables and temporary files), shale's lost/,
// and goleveldb's CURRENT.bak, CURRENT.<n> and NNNNNN.tmp.
func isDatabaseFile(name string) bool {
	if _, _, ok := filename.Parse(name); ok {
		return true
	}
	switch name {
	case "lost", "CURRENT.bak":
		return true
	}
	if rest, ok := strings.CutPrefix(name, "CURRENT."); ok {
		return isNumber(rest)
	}
	if rest, ok := strings.CutSuffix(name, ".tmp"); ok {
		return isNumber(rest)
	}
	return false
}

func isNumber(s string) bool {
	_, err := strconv.ParseUint(s, 10, 64)
	return err == nil
}
