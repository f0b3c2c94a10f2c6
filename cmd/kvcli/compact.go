package main

import (
	"bytes"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/shale-db/shale"
)

var compactCmd = &command{
	name:    "compact",
	args:    "[--start KEY] [--end KEY]",
	summary: "merge the tables holding a key range (all keys by default)",
	detail: `Flushes the memtable, then merges every table holding keys in
[--start, --end) into new tables in the last level, dropping overwritten
and deleted data. Without flags it compacts the whole database. Background
compactions that the open finds due run too. On a terminal it shows the
bytes compacted as it goes; at the end it prints the tables per level
before and after, the bytes read and written, and the metrics of this
process (flushes, compactions by kind, write amplification, stalls),
which 'kvcli stats' cannot show.`,
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
	if lo != nil && hi != nil && bytes.Compare(lo, hi) > 0 {
		return usageError(fmt.Sprintf("--start %s is after --end %s: the range is reversed", e.show(lo), e.show(hi)))
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
	stop := e.showCompactionProgress(db)
	err = db.Compact(lo, hi)
	stop()
	if err != nil {
		return failure(err)
	}
	after, err := db.Stats()
	if err != nil {
		return failure(err)
	}
	m := db.Metrics()
	fmt.Fprintf(e.stdout, "tables before: %s\n", levelCounts(before))
	fmt.Fprintf(e.stdout, "tables after:  %s\n", levelCounts(after))
	fmt.Fprintf(e.stdout, "compacted: %d bytes read, %d bytes written\n\n", m.CompactionBytesIn, m.CompactionBytesOut)
	fmt.Fprint(e.stdout, m)
	return nil
}

// showCompactionProgress shows, on a terminal, the bytes compactions have
// read and written so far, every progressEvery, until the returned
// function is called.
func (e *env) showCompactionProgress(db *shale.DB) (stop func()) {
	p := e.newProgress("compacted")
	if p == nil {
		return func() {}
	}
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		shown := false
		for {
			select {
			case <-done:
				if shown {
					fmt.Fprintln(p.w)
				}
				return
			case <-t.C:
				m := db.Metrics()
				fmt.Fprintf(p.w, "\rkvcli: compacting: %d bytes read, %d written", m.CompactionBytesIn, m.CompactionBytesOut)
				shown = true
			}
		}
	}()
	return func() { close(done); <-exited }
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
