package main

import (
	"flag"
	"fmt"
	"strings"

	"github.com/shale-db/shale"
)

var compactCmd = &command{
	name:    "compact",
	args:    "[--start KEY] [--end KEY]",
	summary: "merge the tables holding a key range (all keys by default)",
	detail: `Flushes the memtable, then merges every table holding keys in
[--start, --end) into new tables, dropping overwritten and deleted data.
Without flags it compacts the whole database. Prints the tables per level
before and after.`,
	run: runCompact,
}

func runCompact(e *env, c *command, args []string) (err error) {
	fs := e.newFlagSet(c.name)
	var start, end string
	fs.StringVar(&start, "start", "", "compact keys >= `KEY`")
	fs.StringVar(&end, "end", "", "compact keys < `KEY`")
	if _, err := e.parse(c, fs, args, 0, 0); err != nil {
		return err
	}
	var lo, hi []byte
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
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
	db, err := e.openExisting()
	if err != nil {
		return err
	}
	defer closeDB(db, &err)
	before, err := db.Stats()
	if err != nil {
		return failure(err)
	}
	if err := db.Compact(lo, hi); err != nil {
		return failure(err)
	}
	after, err := db.Stats()
	if err != nil {
		return failure(err)
	}
	fmt.Fprintf(e.stdout, "tables before: %s\n", levelCounts(before))
	fmt.Fprintf(e.stdout, "tables after:  %s\n", levelCounts(after))
	return nil
}

// levelCounts describes the tables per level, as "L0: 3, L1: 2".
func levelCounts(s shale.Stats) string {
	var n [shale.NumLevels]int
	for _, t := range s.Tables {
		n[t.Level]++
	}
	var parts []string
	for level, c := range n {
		if c > 0 {
			parts = append(parts, fmt.Sprintf("L%d: %d", level, c))
		}
	}
	if parts == nil {
		return "none"
	}
	return strings.Join(parts, ", ")
}
