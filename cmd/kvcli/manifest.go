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
file only.`,
	run: runManifest,
}

func runManifest(e *env, c *command, args []string) error {
	fs := e.newFlagSet(c.name)
	file, err := e.parseDump(c, fs, args)
	if err != nil {
		return err
	}
	s := newVersionState()
	err = dumpLogFile(e.stdout, file, func(w *bufio.Writer, rec []byte) {
		var ed manifest.VersionEdit
		if err := ed.Decode(rec); err != nil {
			fmt.Fprintf(w, "    damage: %v\n", err)
			return
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
	})
	if err != nil {
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
