package main

import (
	"fmt"
	"strings"

	"github.com/shale-db/shale"
)

var backupCmd = &command{
	name:    "backup",
	args:    "DEST | -",
	summary: "copy the database consistently into a new directory, or as a tar stream",
	detail: `Opens the database read-only and writes a consistent copy of it: into
the directory DEST (created; it must not exist or be empty), with tables
hard-linked when DEST is on the same file system and copied otherwise, or,
with "-", as a tar stream on standard output. DEST opens like any database;
to restore a stream, unpack it into an empty directory:

    kvcli --db DIR backup - > backup.tar
    mkdir restored && tar -x -f backup.tar -C restored

The database's lock keeps kvcli out while a program has the database open:
such a program takes its own backups while it runs, with db.Checkpoint(DIR)
or db.Backup(w) (the same stream), which copy a consistent state while
writes go on.

A damaged log is copied as it is, and the copy's Open drops what the
source's did (see 'kvcli help recovery'). When the read-only Open dropped
anything, backup still writes the copy, the best one there is, then names
on stderr each damaged log and what was dropped from it, and exits with
status 3. A torn write at the end of the newest log is no loss: that write
was never acknowledged.`,
	run: runBackup,
}

func runBackup(e *env, c *command, args []string) (err error) {
	fs := e.newFlagSet(c.name)
	rest, err := e.parse(c, fs, args, 1, 1)
	if err != nil {
		return err
	}
	if rest[0] == "-" && isTerminal(e.rawStdout) {
		return usageError("backup - writes a tar stream to standard output, which is a terminal: redirect it to a file or a pipe (kvcli backup - > db.tar)")
	}
	db, err := e.openRead()
	if err != nil {
		return err
	}
	defer closeDB(db, &err)
	if rest[0] == "-" {
		if err := db.Backup(e.stdout); err != nil {
			return failure(err)
		}
		return copyLacks(db.Recovery())
	}
	if err := db.Checkpoint(rest[0]); err != nil {
		return failure(err)
	}
	fmt.Fprintf(e.stderr, "backup: copied to %s\n", rest[0])
	return copyLacks(db.Recovery())
}

// copyLacks returns the failure a backup ends with when Open's recovery
// dropped records the copy therefore lacks, naming each damaged log and
// what was dropped from it; nil if it dropped nothing. A torn tail is no
// loss: a crash cut that write before it was acknowledged.
func copyLacks(rep shale.RecoveryReport) error {
	var lacks []string
	for _, lr := range rep.Logs {
		if !lr.Damaged() {
			continue
		}
		var bytes int64
		for _, d := range lr.Drops {
			bytes += d.Bytes
		}
		var what string
		switch n := len(lr.Drops); {
		case n == 0:
			// PointInTime stopped in an earlier log.
			what = "all of it (point-in-time recovery stopped in an earlier log)"
		case n == 1:
			what = fmt.Sprintf("1 damaged stretch, %d bytes", bytes)
		default:
			what = fmt.Sprintf("%d damaged stretches, %d bytes", n, bytes)
		}
		if lr.Stopped && len(lr.Drops) > 0 {
			what += ", and the rest of the log (point-in-time recovery stopped there)"
		}
		lacks = append(lacks, fmt.Sprintf("%06d.log: %s", lr.FileNum, what))
	}
	if len(lacks) == 0 {
		return nil
	}
	return failuref("backup: the copy lacks what recovery dropped from %s; those records are lost (see 'kvcli check')",
		strings.Join(lacks, "; "))
}
