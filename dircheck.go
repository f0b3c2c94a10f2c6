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

// maxMissingNamed bounds the table names a missing-tables error lists.
const maxMissingNamed = 10

// checkFilesAgainstManifest compares the directory with the MANIFEST Open
// loaded, before Open starts its own.
//
// It refuses a database whose MANIFEST names a table that is not in the
// directory, as LevelDB and goleveldb do: its entries cannot be read, and a
// read or compaction that needs it would fail later, at a time no one
// chose. Repair rebuilds the database from the files present (and reports
// the table as lost).
//
// It marks the number of every file in the directory used: a crash in a
// switch to a new MANIFEST can leave one numbered above what the MANIFEST
// that CURRENT names has allocated, and Open's must come after it (in
// number order, which Repair reads them in) and make it obsolete. A
// database whose numbers are then within 2^32 of the largest is refused
// for writing.
func (db *DB) checkFilesAgainstManifest() error {
	names, err := db.fs.List(db.dir)
	if err != nil {
		return errors.Wrap(err, "shale: list database directory")
	}
	present := make(map[uint64]bool, len(names))
	var highest uint64
	highestName := filename.Name(filename.Manifest, db.vs.ManifestNumber())
	for _, name := range names {
		t, num, ok := filename.Parse(name)
		if !ok {
			continue
		}
		if num >= highest {
			highest, highestName = num, name
		}
		db.vs.MarkFileNumUsed(num)
		if t == filename.Table {
			present[num] = true
		}
	}
	// A database within 2^32 numbers of the largest a file name holds (a
	// damaged or crafted MANIFEST or file name: files are not made at that
	// rate) is refused for writing, not written into names no Open reads.
	if next := db.vs.PeekFileNum(); next > filename.MaxStartNum+1 && !db.opts.ReadOnly {
		return errors.Wrapf(ErrCorruption, "shale: the file numbers of %s are used up: the next is %d, above %d (the highest file is %s); it opens read-only",
			db.dir, next, uint64(filename.MaxStartNum)+1, highestName)
	}
	v := db.vs.Current()
	defer v.Unref()
	var missing []string
	n := 0
	for _, files := range v.Levels {
		for _, f := range files {
			if present[f.Num] {
				continue
			}
			n++
			if len(missing) < maxMissingNamed {
				missing = append(missing, filename.Name(filename.Table, f.Num))
			}
		}
	}
	if n == 0 {
		return nil
	}
	list := strings.Join(missing, ", ")
	if n > len(missing) {
		list += " and " + strconv.Itoa(n-len(missing)) + " more"
	}
	what, whose := "a table", "its"
	if n > 1 {
		what, whose = strconv.Itoa(n)+" tables", "their"
	}
	return errors.Wrapf(ErrCorruption, "shale: %s names %s missing from %s (%s): %s entries cannot be read; Repair (kvcli repair) rebuilds the database from the files present",
		filename.Name(filename.Manifest, db.vs.ManifestNumber()), what, db.dir, list, whose)
}
