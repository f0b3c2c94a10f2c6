package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/shale-db/shale/internal/filename"
	"github.com/shale-db/shale/sstable"
)

// fileKind is the kind of file a dump command reads.
type fileKind int

const (
	kindLog fileKind = iota
	kindTable
	kindManifest
)

// dumpKinds describes each kind: what it is called, the command that
// dumps it, and the filename type that names it.
var dumpKinds = map[fileKind]struct {
	what, cmd string
	ftype     filename.Type
}{
	kindLog:      {"write-ahead log", "wal dump", filename.Log},
	kindTable:    {"table", "sst dump", filename.Table},
	kindManifest: {"MANIFEST", "manifest dump", filename.Manifest},
}

// dumpFile resolves the FILE argument of a dump command and checks that
// it names a file of kind want. A bare name (no directory part) is taken
// inside --db when --db (or $KVCLI_DB) is set. A directory, or a name that
// shale gives to another kind of file, is a usage error; so is a file of
// another name that ends as a table does, given to the log dumps. The
// content of a file of the right kind is checked by the dump itself.
func (e *env) dumpFile(file string, want fileKind) (string, error) {
	if e.db != "" && filepath.Base(file) == file && file != "." && file != ".." {
		file = filepath.Join(e.db, file)
	}
	fi, err := os.Stat(file)
	if err != nil {
		return "", failure(err)
	}
	k := dumpKinds[want]
	if fi.IsDir() {
		return "", usageError(fmt.Sprintf("%s is a directory: %s takes a %s file%s",
			file, k.cmd, k.what, exampleIn(file, k.ftype)))
	}
	t, _, named := filename.Parse(filepath.Base(file))
	if named && t != k.ftype {
		return "", usageError(wrongName(file, t, want))
	}
	if !named && want != kindTable && endsAsTable(file, fi.Size()) {
		return "", usageError(fmt.Sprintf("%s ends in a table's magic number: it is a table, not a %s; use kvcli sst dump",
			file, k.what))
	}
	return file, nil
}

// wrongName explains why the file at path, named as shale names files of
// type t, is not of kind want, and what to do instead.
func wrongName(path string, t filename.Type, want fileKind) string {
	k := dumpKinds[want]
	for kind, other := range dumpKinds {
		if other.ftype == t {
			return fmt.Sprintf("%s is a %s, not a %s: use kvcli %s", path, dumpKinds[kind].what, k.what, other.cmd)
		}
	}
	switch t {
	case filename.Current:
		hint := ""
		if b, err := os.ReadFile(path); err == nil {
			if m := strings.TrimSpace(string(b)); strings.HasPrefix(m, "MANIFEST-") {
				hint = fmt.Sprintf(" (kvcli manifest dump %s)", filepath.Join(filepath.Dir(path), m))
			}
		}
		return fmt.Sprintf("%s is not a %s: it holds the name of the current MANIFEST%s", path, k.what, hint)
	case filename.Lock:
		return fmt.Sprintf("%s is the database's lock file, not a %s", path, k.what)
	case filename.InfoLog:
		return fmt.Sprintf("%s is the database's text log (read it as text), not a %s", path, k.what)
	}
	return fmt.Sprintf("%s is a temporary file, not a %s", path, k.what)
}

// exampleIn suggests a file of type t in dir, as ", such as DIR/NAME", or
// returns "" if dir holds none.
func exampleIn(dir string, t filename.Type) string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	var names []string
	for _, ent := range ents {
		if ft, _, ok := filename.Parse(ent.Name()); ok && ft == t && !ent.IsDir() {
			names = append(names, ent.Name())
		}
	}
	if len(names) == 0 {
		return ""
	}
	slices.Sort(names)
	return ", such as " + filepath.Join(dir, names[len(names)-1])
}

// endsAsTable reports whether the file at path, of size bytes, ends in
// the magic number that ends every table.
func endsAsTable(path string, size int64) bool {
	if size < sstable.FooterLen {
		return false
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var b [8]byte
	if _, err := f.ReadAt(b[:], size-8); err != nil && !errors.Is(err, io.EOF) {
		return false
	}
	return binary.LittleEndian.Uint64(b[:]) == sstable.Magic
}

// checkLogContent checks what a dump found in the record log at path,
// which should be of kind want (a log or a MANIFEST): intact records that
// none decode as that kind mean another kind of file, and so does a file
// shale would not name so whose every fragment is damaged. Damage in a
// file named as the kind is the dump's to list, not an error.
func checkLogContent(path string, want fileKind, n logCounts) error {
	k := dumpKinds[want]
	other := dumpKinds[kindManifest]
	if want == kindManifest {
		other = dumpKinds[kindLog]
	}
	if n.records > 0 && n.decoded == 0 {
		return failuref("%s: no record in it is a %s (%d records): it is not a %s (a %s? try kvcli %s)",
			path, map[fileKind]string{kindLog: "write batch", kindManifest: "VersionEdit"}[want], n.records,
			k.what, other.what, other.cmd)
	}
	t, _, named := filename.Parse(filepath.Base(path))
	if (!named || t != k.ftype) && n.frags == 0 && n.damaged+n.torn > 0 {
		return failuref("%s: no fragment is intact: it is not a record log, or it is damaged throughout", path)
	}
	return nil
}
