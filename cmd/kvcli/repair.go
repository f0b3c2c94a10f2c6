package main

import (
	"fmt"
	"slices"

	"github.com/shale-db/shale"
)

var repairCmd = &command{
	name:    "repair",
	summary: "salvage a damaged database: keep what can be read, write a new MANIFEST",
	detail: `For damage that Open cannot get past: a lost or damaged CURRENT or
MANIFEST, a damaged or missing table. Reads every table block by block and
keeps the entries of every intact block; replays every write-ahead log,
skipping damaged stretches; merges what survives, keeping the newest
version of each key, into new tables; and writes a new MANIFEST naming
them. Damaged files and the old MANIFEST move to the lost/ subdirectory;
nothing is deleted that could still hold data.

Prints one line per file with what was kept and what was dropped (blocks,
bytes, the key range of each dropped block), then the result. Exit status
3 if anything was lost, 0 if not. Run 'kvcli check' first to see the
damage; take a copy of the directory first if its bytes matter. The
database must not be open elsewhere.`,
	run: runRepair,
}

// Register backup and repair. This file's init runs after command.go's
// (files initialize in name order), which sets the command list.
func init() {
	at := slices.Index(commands, helpCmd)
	if at < 0 {
		at = len(commands)
	}
	commands = slices.Insert(commands, at, backupCmd, repairCmd)
	commandGlobals["backup"] = []string{"db", "recovery"}
	commandGlobals["repair"] = []string{"db"}
}

func runRepair(e *env, c *command, args []string) error {
	fs := e.newFlagSet(c.name)
	if _, err := e.parse(c, fs, args, 0, 0); err != nil {
		return err
	}
	dir, err := e.needDB()
	if err != nil {
		return err
	}
	rep, err := shale.Repair(dir, nil)
	// A repair refused before it looked at any file has nothing to report.
	if err == nil || len(rep.Tables)+len(rep.Logs)+len(rep.Obsolete)+len(rep.Missing)+len(rep.MovedToLost) > 0 {
		fmt.Fprint(e.stdout, rep.String())
	}
	if err != nil {
		return failure(err)
	}
	if rep.Lost() {
		return failuref("repair: %s: data was lost (see above); the damaged files are in %s/lost", dir, dir)
	}
	return nil
}
