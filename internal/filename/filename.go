// Package filename names the files of a database directory as LevelDB does:
// NNNNNN.log, NNNNNN.ldb (NNNNNN.sst is read too), MANIFEST-NNNNNN, CURRENT,
// LOCK and LOG, and parses those names back.
package filename

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// Type is the kind of a database file.
type Type int

// File types.
const (
	Log Type = iota
	Table
	Manifest
	Current
	Lock
	InfoLog
	Temp
)

// Make returns the path of the file of type t and number num in dir. num is
// ignored for CURRENT, LOCK and LOG.
func Make(dir string, t Type, num uint64) string {
	return filepath.Join(dir, Name(t, num))
}

// Name returns the base name of the file of type t and number num.
func Name(t Type, num uint64) string {
	switch t {
	case Log:
		return fmt.Sprintf("%06d.log", num)
	case Table:
		return fmt.Sprintf("%06d.ldb", num)
	case Manifest:
		return fmt.Sprintf("MANIFEST-%06d", num)
	case Current:
		return "CURRENT"
	case Lock:
		return "LOCK"
	case InfoLog:
		return "LOG"
	case Temp:
		return fmt.Sprintf("%06d.dbtmp", num)
	}
	panic("filename: unknown type")
}

// MaxNum is the largest file number a database uses: far beyond any count
// of files, and far enough below 2^64 that the next number never wraps to
// zero (which would reuse the numbers of live files).
const MaxNum = 1<<62 - 1

// MaxStartNum is the largest file number a database may hold when it is
// opened to be written: the 2^32 numbers above it are the room it
// allocates new files in, so that every file it names stays within MaxNum
// and parses back. Past it, a database opens read-only only.
const MaxStartNum = MaxNum - 1<<32

// Parse reports the type and number of a base name. ok is false for names
// that are not database files (they are left alone), numbers above MaxNum
// included.
func Parse(name string) (t Type, num uint64, ok bool) {
	switch name {
	case "CURRENT":
		return Current, 0, true
	case "LOCK":
		return Lock, 0, true
	case "LOG", "LOG.old":
		return InfoLog, 0, true
	}
	if rest, found := strings.CutPrefix(name, "MANIFEST-"); found {
		n, err := strconv.ParseUint(rest, 10, 64)
		return Manifest, n, err == nil && n <= MaxNum
	}
	i := strings.IndexByte(name, '.')
	if i <= 0 {
		return 0, 0, false
	}
	n, err := strconv.ParseUint(name[:i], 10, 64)
	if err != nil || n > MaxNum {
		return 0, 0, false
	}
	switch name[i+1:] {
	case "log":
		return Log, n, true
	case "ldb", "sst":
		return Table, n, true
	case "dbtmp":
		return Temp, n, true
	}
	return 0, 0, false
}
