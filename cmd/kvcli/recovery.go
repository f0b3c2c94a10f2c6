package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/shale-db/shale"
)

// recoveryModes maps --recovery's values to the library's modes.
var recoveryModes = map[string]shale.RecoveryMode{
	"skip": shale.SkipCorrupt, "point-in-time": shale.PointInTime, "strict": shale.Strict,
}

// recoveryMode returns the mode --recovery names.
func (e *env) recoveryMode() (shale.RecoveryMode, error) {
	m, ok := recoveryModes[e.recovery]
	if !ok {
		return 0, usageError(fmt.Sprintf("--recovery %q: want skip, point-in-time or strict", e.recovery))
	}
	return m, nil
}

// reportRecovery prints one line on stderr if Open's recovery dropped
// anything, saying how much, where the damaged logs went (a read command
// leaves them in place) and where to read more. A writable Open has also
// written the details to the database's LOG file.
func (e *env) reportRecovery(db *shale.DB, readOnly bool) {
	rep := db.Recovery()
	var drops, records int
	var bytes int64
	var logs, moved []string
	stopped := false
	for _, lr := range rep.Logs {
		if !lr.Damaged() {
			continue
		}
		logs = append(logs, fmt.Sprintf("%06d.log", lr.FileNum))
		records += lr.Records
		drops += len(lr.Drops)
		for _, d := range lr.Drops {
			bytes += d.Bytes
		}
		stopped = stopped || lr.Stopped
		if lr.MovedTo != "" {
			moved = append(moved, lr.MovedTo)
		}
	}
	if len(logs) == 0 {
		return
	}
	var b strings.Builder
	stretches := fmt.Sprintf("%d damaged stretches", drops)
	if drops == 1 {
		stretches = "1 damaged stretch"
	}
	fmt.Fprintf(&b, "kvcli: recovery (%s) dropped %s (%d bytes) in %s",
		e.recovery, stretches, bytes, strings.Join(logs, ", "))
	if stopped {
		b.WriteString(", and stopped replaying there")
	}
	fmt.Fprintf(&b, "; %s replayed", plural(records, "intact record"))
	switch {
	case readOnly:
		b.WriteString("; nothing was moved (a write command moves the log to lost/)")
	case len(moved) > 0:
		fmt.Fprintf(&b, "; the damaged log is kept in %s, details in %s",
			filepath.Dir(moved[0])+string(filepath.Separator), filepath.Join(e.db, "LOG"))
	}
	b.WriteString(`; see "kvcli help recovery"`)
	fmt.Fprintln(e.stderr, b.String())
}

const recoveryHelp = `Recovery: what Open does with a damaged write-ahead log

Every write goes to a write-ahead log (NNNNNN.log) before it is applied;
Open replays the logs that no table holds yet. A crash in the middle of a
write leaves an incomplete record at the end of the newest log: that is a
torn write, normal, and dropped silently (the write was never acknowledged).
Anything else that fails its checksum is damage: a bad disk block, a file
overwritten. --recovery says what to do with it:

  skip           (default) replay what can be read, skip the damage (as
                 LevelDB, the rest of a damaged 32 KiB block goes with it)
  point-in-time  stop at the first damage: what is kept is exactly the
                 writes before it, with none of the later ones
  strict         refuse to open (exit 3), leaving the logs as they are

When recovery drops anything, kvcli prints one line on stderr: how many
damaged stretches and bytes, in which log. A write command (put, delete,
load, compact) then moves the damaged log into the lost/ directory of the
database, where its bytes can still be examined ("kvcli wal dump
lost/NNNNNN.log"), and the details go to the database's LOG file. A read
command (get, scan, dump, stats) moves and writes nothing: it reports the
same drops each time, until a write command opens the database.
`
