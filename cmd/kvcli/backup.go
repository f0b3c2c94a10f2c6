package main

import "fmt"

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
writes go on.`,
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
		return nil
	}
	if err := db.Checkpoint(rest[0]); err != nil {
		return failure(err)
	}
	fmt.Fprintf(e.stderr, "backup: copied to %s\n", rest[0])
	return nil
}
