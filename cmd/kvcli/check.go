package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/shale-db/shale/internal/filename"
	"github.com/shale-db/shale/internal/vfs"
	"github.com/shale-db/shale/sstable"
	"github.com/shale-db/shale/wal"
)

var checkCmd = &command{
	name:    "check",
	summary: "verify every checksum of the logs, tables and MANIFEST",
	detail: `Reads every file of the database directly, without opening the database,
and verifies: CURRENT; every record checksum of the MANIFEST it names and
every VersionEdit in it; every table file (footer, the checksum of every
block: data, index, metaindex and filter blocks, their decoding, the order
of the entries, and that each table the MANIFEST lists is there with the
size and key range it records); every record checksum of every
write-ahead log, and the batch in every record.

Prints one line per file ("ok: FILE: ..."), one line per piece of damage
("damage: FILE: REASON at offset N"), notes about what is normal (a torn
tail at the end of the newest log: a write cut short by a crash), and a
summary. Exit status 3 if anything is damaged, 0 if all that is live is
intact. A table the MANIFEST does not name is not part of the database (a
flush or compaction was writing it when the process stopped): it is
noted, not checked, and the next write Open deletes it. check takes the
database's lock shared, as read-only opens do, so it fails at once while
a writer has the database open; it changes nothing on disk.`,
	run: runCheck,
}

// checker accumulates the report of a check.
type checker struct {
	w       *bufio.Writer
	dir     string
	files   int            // files checked
	damaged map[string]int // problems by file
	order   []string       // damaged files in the order found
	// manifest is the MANIFEST CURRENT names ("" if none could be read).
	manifest string
}

func runCheck(e *env, c *command, args []string) error {
	fs := e.newFlagSet(c.name)
	if _, err := e.parse(c, fs, args, 0, 0); err != nil {
		return err
	}
	dir, err := e.needDB()
	if err != nil {
		return err
	}
	unlock, err := lockShared(dir)
	if err != nil {
		return err
	}
	defer unlock()
	ck := &checker{w: e.stdout, dir: dir, damaged: map[string]int{}}
	if err := ck.run(); err != nil {
		return err
	}
	return ck.summary()
}

// lockShared takes the database's lock shared, as a read-only Open does,
// without creating anything. A directory without CURRENT cannot be
// checked: CURRENT names the MANIFEST, which names the live files.
func lockShared(dir string) (func(), error) {
	if _, err := os.Stat(filename.Make(dir, filename.Current, 0)); err != nil {
		if _, derr := os.Stat(dir); errors.Is(derr, fs.ErrNotExist) {
			return nil, failuref("no database in %s: the directory does not exist", dir)
		}
		if errors.Is(err, fs.ErrNotExist) {
			return nil, failuref("CURRENT is missing in %s: it names the MANIFEST, which names the live files, so there is nothing to check against ('kvcli --db %s repair' rebuilds the MANIFEST from the tables and logs)", dir, dir)
		}
		return nil, failure(err)
	}
	lockPath := filename.Make(dir, filename.Lock, 0)
	if _, err := os.Stat(lockPath); err != nil {
		return func() {}, nil // no LOCK file: nobody can hold it
	}
	l, err := vfs.OS().Lock(lockPath, true)
	if errors.Is(err, vfs.ErrLocked) {
		return nil, failuref("database %s is locked by another process", dir)
	}
	if err != nil {
		return nil, failure(err)
	}
	return func() { l.Close() }, nil
}

// run checks CURRENT, the MANIFEST, the tables and the logs.
func (ck *checker) run() error {
	names, err := listDir(ck.dir)
	if err != nil {
		return err
	}
	var vs *versionState
	if m, ok := ck.checkCurrent(); ok {
		ck.manifest = m
		vs = ck.checkManifest(m)
	}
	var tables, logs []uint64
	for _, name := range names {
		t, num, ok := filename.Parse(name)
		switch {
		case !ok:
		case t == filename.Table:
			tables = append(tables, num)
		case t == filename.Log:
			logs = append(logs, num)
		}
	}
	ck.checkTables(names, tables, vs)
	ck.checkLogs(logs, vs)
	ck.noteLost()
	return nil
}

// listDir returns the names in dir, sorted.
func listDir(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, failure(err)
	}
	names := make([]string, len(ents))
	for i, e := range ents {
		names[i] = e.Name()
	}
	return names, nil
}

// openRegular opens the file at path for reading if it is a regular file,
// as the engine opens its own files (vfs.ErrNotRegular otherwise): opening
// a FIFO in a file's place would wait for a writer.
func openRegular(path string) (vfs.File, error) { return vfs.OS().Open(path) }

// maxCurrentLen is the longest CURRENT check reads: "MANIFEST-" and a
// number of up to 20 digits and a newline fit with room to spare.
const maxCurrentLen = 256

// readHead returns the first limit bytes of the file at path and its size.
func readHead(path string, limit int) ([]byte, int64, error) {
	f, err := openRegular(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	b, err := io.ReadAll(io.LimitReader(f, int64(limit)))
	return b, max(st.Size(), int64(len(b))), err
}

// checkCurrent reads CURRENT and returns the MANIFEST it names.
func (ck *checker) checkCurrent() (string, bool) {
	ck.files++
	b, size, err := readHead(filepath.Join(ck.dir, "CURRENT"), maxCurrentLen)
	if err != nil {
		ck.damage("CURRENT", 0, "cannot be read: %v", err)
		return "", false
	}
	if size > maxCurrentLen {
		ck.damage("CURRENT", maxCurrentLen, "is %d bytes long, beginning %q: it names a MANIFEST in one short line", size, b[:min(len(b), 64)])
		return "", false
	}
	name, found := strings.CutSuffix(string(b), "\n")
	t, _, ok := filename.Parse(name)
	switch {
	case !found:
		ck.damage("CURRENT", int64(len(b)), "does not end with a newline (an incomplete write?)")
		return "", false
	case !ok || t != filename.Manifest || strings.ContainsAny(name, "/\\\n"):
		ck.damage("CURRENT", 0, "%q does not name a MANIFEST", b)
		return "", false
	}
	ck.ok("CURRENT", "names %s", name)
	return name, true
}

// noteLost lists the logs a writable Open moved to lost/.
func (ck *checker) noteLost() {
	names, err := listDir(filepath.Join(ck.dir, "lost"))
	if err != nil {
		return
	}
	for _, n := range names {
		ck.note("lost/"+n, "kept by a recovery that found it damaged; not checked")
	}
}

// damage reports a problem in file at offset off (-1: no offset applies).
func (ck *checker) damage(file string, off int64, format string, args ...any) {
	if ck.damaged[file] == 0 {
		ck.order = append(ck.order, file)
	}
	ck.damaged[file]++
	msg := fmt.Sprintf(format, args...)
	if off >= 0 {
		msg += fmt.Sprintf(" at offset %d", off)
	}
	fmt.Fprintf(ck.w, "damage: %s: %s\n", file, msg)
}

// damageErr reports err, an error from reading file, with the offset it
// names.
func (ck *checker) damageErr(file string, err error) {
	var te *sstable.TableError
	var we *wal.CorruptionError
	switch {
	case errors.As(err, &te):
		ck.damage(file, te.Offset, "%s", te.Reason)
	case errors.As(err, &we):
		ck.damage(file, we.Offset, "%s (%d bytes)", we.Reason, we.Bytes)
	default:
		if ck.damaged[file] == 0 {
			ck.order = append(ck.order, file)
		}
		ck.damaged[file]++
		fmt.Fprintf(ck.w, "damage: %s: %v\n", file, err)
	}
}

func (ck *checker) ok(file, format string, args ...any) {
	if ck.damaged[file] == 0 {
		fmt.Fprintf(ck.w, "ok: %s: %s\n", file, fmt.Sprintf(format, args...))
	}
}

func (ck *checker) note(file, format string, args ...any) {
	fmt.Fprintf(ck.w, "note: %s: %s\n", file, fmt.Sprintf(format, args...))
}

// summary prints the last line and returns the exit error if anything is
// damaged.
func (ck *checker) summary() error {
	problems := 0
	for _, n := range ck.damaged {
		problems += n
	}
	if problems == 0 {
		fmt.Fprintf(ck.w, "check: %s checked, no damage\n", plural(ck.files, "file"))
		return nil
	}
	files := strings.Join(ck.order, ", ")
	found := plural(problems, "problem") + " in " + plural(len(ck.order), "file")
	fmt.Fprintf(ck.w, "check: %s checked, %s: %s\n", plural(ck.files, "file"), found, files)
	for _, name := range ck.order {
		switch t, _, _ := filename.Parse(name); t {
		case filename.Log:
			// Open skips damaged WAL records, as --recovery says.
		case filename.Table:
			// Tables are read as keys are: Open works.
			fmt.Fprintf(ck.w, "check: %s is damaged: Open works, and reads of the keys in its damaged blocks fail; 'kvcli --db %s repair' salvages what can be read (see 'kvcli help repair')\n", name, ck.dir)
		default:
			fmt.Fprintf(ck.w, "check: Open cannot get past damage to %s: 'kvcli --db %s repair' salvages what can be read (see 'kvcli help repair')\n", name, ck.dir)
		}
	}
	return failuref("check: %s: %s (%s)", ck.dir, found, files)
}

// plural returns "1 file", "2 files".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
