package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"strings"

	"github.com/shale-db/shale"
)

var deleteCmd = &command{
	name:    "delete",
	args:    "KEY | --start KEY --end KEY [--yes]",
	summary: "delete KEY, or every key in [--start, --end)",
	detail: `Deletes KEY, durably (synced to disk before delete returns). Deleting a
key that has no value succeeds and writes a deletion all the same. A
directory without a database is an error: delete creates none.

With --start and/or --end instead of KEY, deletes every key k with
start <= k < end, as one range deletion (one small write however many keys
it covers); a missing --start is the smallest key, a missing --end means
no end. On a terminal it asks first; elsewhere it needs --yes. A range
deletion marks the database so that LevelDB and goleveldb refuse to open
it until compaction has dropped the deletion (kvcli check says which state
a database is in; kvcli compact drops it).`,
	run: runDelete,
}

func runDelete(e *env, c *command, args []string) (err error) {
	fs := e.newFlagSet(c.name)
	var start, end string
	var yes bool
	fs.StringVar(&start, "start", "", "delete keys >= `KEY`")
	fs.StringVar(&end, "end", "", "delete keys < `KEY`")
	fs.BoolVar(&yes, "yes", false, "delete a range without asking")
	rest, err := e.parse(c, fs, args, 0, 1)
	if err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	ranged := set["start"] || set["end"]
	switch {
	case ranged && len(rest) > 0:
		return usageError("delete takes KEY or --start/--end, not both")
	case !ranged && len(rest) == 0:
		return usageError(fmt.Sprintf("usage: kvcli %s", synopsis(c)))
	case !ranged && set["yes"]:
		return usageError("--yes goes with --start/--end: deleting one KEY asks nothing")
	case !ranged:
		return deleteKey(e, rest[0])
	}
	var lo, hi []byte
	if set["start"] {
		if lo, err = e.arg("--start", start); err != nil {
			return err
		}
	}
	if set["end"] {
		if hi, err = e.arg("--end", end); err != nil {
			return err
		}
	}
	if lo != nil && hi != nil && bytes.Compare(lo, hi) >= 0 {
		return usageError(fmt.Sprintf("--start %s is not before --end %s: the range holds no key", e.show(lo), e.show(hi)))
	}
	if _, err := e.needDB(); err != nil {
		return err
	}
	what := fmt.Sprintf("every key in [%s, %s)", e.showBound(lo, "the first key"), e.showBound(hi, "the end"))
	if !yes {
		if !isTerminal(e.stdin) {
			return usageError("delete of " + what + " needs --yes when stdin is not a terminal to confirm it")
		}
		fmt.Fprintf(e.stderr, "kvcli: delete %s? type yes to go on: ", what)
		line, _ := bufio.NewReader(e.stdin).ReadString('\n')
		if strings.TrimSpace(line) != "yes" {
			return failuref("nothing deleted: %s was not confirmed", what)
		}
	}
	db, err := e.openExisting()
	if err != nil {
		return err
	}
	defer closeDB(db, &err)
	if err := db.DeleteRange(lo, hi, shale.Sync); err != nil {
		return failure(err)
	}
	return nil
}

// showBound shows a range bound, or what a missing one means.
func (e *env) showBound(b []byte, open string) string {
	if b == nil {
		return open
	}
	return e.show(b)
}

func deleteKey(e *env, arg string) (err error) {
	key, err := e.arg("key", arg)
	if err != nil {
		return err
	}
	db, err := e.openExisting()
	if err != nil {
		return err
	}
	defer closeDB(db, &err)
	if err := db.Delete(key, shale.Sync); err != nil {
		return failure(err)
	}
	return nil
}
