package main

import (
	"bufio"
	"fmt"
	"strings"

	"github.com/shale-db/shale/internal/manifest"
)

var manifestCmd = &command{
	name:    "manifest",
	args:    "dump FILE",
	summary: "list a MANIFEST's fragments and VersionEdits",
	detail: `"manifest dump FILE" lists each physical fragment of the MANIFEST file
FILE (it is a record log, like a WAL), each damaged or torn stretch, and
the VersionEdit each record holds, then the version that replaying them
all gives: comparator, log number, next file number, last sequence and the
tables by level. Works on LevelDB's and goleveldb's MANIFESTs too. Reads the
file only.

A FILE without a directory part is taken inside --db, when it is given
("kvcli --db DIR manifest dump MANIFEST-000005"). A directory, or a file
that is plainly of another kind (CURRENT, a log, a table), is refused with
exit status 2. A file none of whose records is a VersionEdit ends the
dump with exit status 3, as does one not named as a MANIFEST none of whose
fragments is intact; damage in a MANIFEST is listed, with exit status 0.`,
	run: runManifest,
}

func runManifest(e *env, c *command, args []string) error {
	fs := e.newFlagSet(c.name)
	file, err := e.parseDump(c, fs, args)
	if err != nil {
		return err
	}
	if file, err = e.dumpFile(file, kindManifest); err != nil {
		return err
	}
	s := newVersionState()
	n, err := dumpLogFile(e.stdout, file, func(w *bufio.Writer, rec []byte) bool {
		var ed manifest.VersionEdit
		if err := ed.Decode(rec); err != nil {
			fmt.Fprintf(w, "    damage: %v\n", err)
			return false
		}
		text := strings.TrimSuffix(ed.String(), "\n")
		if text == "" {
			text = "(empty edit)"
		}
		for _, line := range strings.Split(text, "\n") {
			fmt.Fprintf(w, "    %s\n", line)
		}
		for _, p := range s.apply(&ed) {
			fmt.Fprintf(w, "    inconsistent: %s\n", p)
		}
		return true
	})
	if err != nil {
		return err
	}
	if err := checkLogContent(file, kindManifest, n); err != nil {
		return err
	}
	writeVersion(e.stdout, s)
	return nil
}

// writeVersion prints the state a MANIFEST's edits lead to.
func writeVersion(w *bufio.Writer, s *versionState) {
	fmt.Fprintf(w, "version after %d edits:\n", s.edits)
	fmt.Fprintf(w, "  comparator: %s\n  log-number: %d\n  prev-log-number: %d\n  next-file-number: %d\n  last-sequence: %d\n",
		s.comparator, s.logNum, s.prevLogNum, s.nextFile, s.lastSeq)
	for _, t := range s.sorted() {
		fmt.Fprintf(w, "  L%d %s\n", t.level, &t.meta)
	}
}
