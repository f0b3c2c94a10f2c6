package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/shale-db/shale"
	"github.com/shale-db/shale/internal/filename"
)

var statsCmd = &command{
	name:    "stats",
	summary: "show the tree's levels, tables, logs and what recovery finds",
	detail: `Shows the shape of the tree, one row per level: tables, bytes, the
level's score (compaction is due at 1 or more) and its target size, and
which level is the base level that level 0 compacts into. Then lists the
tables (level, file, size, key range), the write-ahead logs, what replaying
those logs found (records, torn tail, damage dropped), and the logs that an
earlier recovery found damaged and moved to lost/.

Opens the database read-only in this process, so the replay it reports is
a dry run (nothing on disk changes), and it cannot show the counters of the
program that has the database open (flushes, compactions, write
amplification, stalls): a program reads those from DB.Metrics, and
'kvcli compact' prints its own at the end.`,
	run: runStats,
}

func runStats(e *env, c *command, args []string) (err error) {
	fs := e.newFlagSet(c.name)
	if _, err := e.parse(c, fs, args, 0, 0); err != nil {
		return err
	}
	db, err := e.openRead()
	if err != nil {
		return err
	}
	defer closeDB(db, &err)
	st, err := db.Stats()
	if err != nil {
		return failure(err)
	}
	w := e.stdout
	fmt.Fprintf(w, "database: %s\n", e.db)
	fmt.Fprintf(w, "last sequence: %d\n", st.LastSequence)
	fmt.Fprintf(w, "memtable: %d bytes (replayed from the logs)\n", st.MemtableSize)
	writeLevels(w, db.Metrics())
	e.writeTables(st.Tables)
	if err := e.writeFiles("logs", e.db, filename.Log); err != nil {
		return err
	}
	writeRecovery(e, db.Recovery())
	return e.writeFiles("lost (logs an earlier recovery found damaged and kept here)", filepath.Join(e.db, "lost"), filename.Log)
}

// writeTables lists the tables by level.
func (e *env) writeTables(tables []shale.TableInfo) {
	var total int64
	for _, t := range tables {
		total += t.Size
	}
	fmt.Fprintf(e.stdout, "tables: %d, %d bytes\n", len(tables), total)
	for _, t := range tables {
		fmt.Fprintf(e.stdout, "  L%d %s %10d bytes  [%s .. %s]\n", t.Level,
			filename.Name(filename.Table, t.FileNum), t.Size, e.show(t.Smallest), e.show(t.Largest))
	}
}

// writeFiles lists the files of type t in dir with their sizes; a missing
// dir lists nothing.
func (e *env) writeFiles(title, dir string, t filename.Type) error {
	ents, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return failure(err)
	}
	var lines []string
	for _, ent := range ents {
		if ft, _, ok := filename.Parse(ent.Name()); !ok || ft != t {
			continue
		}
		fi, err := ent.Info()
		if err != nil {
			return failure(err)
		}
		lines = append(lines, fmt.Sprintf("  %s %10d bytes\n", ent.Name(), fi.Size()))
	}
	fmt.Fprintf(e.stdout, "%s: %d\n", title, len(lines))
	for _, l := range lines {
		e.stdout.WriteString(l)
	}
	return nil
}

// writeRecovery says what replaying the logs found.
func writeRecovery(e *env, r shale.RecoveryReport) {
	fmt.Fprintf(e.stdout, "recovery (%s, read-only dry run): %d logs replayed\n", r.Mode, len(r.Logs))
	for _, l := range r.Logs {
		name := filename.Name(filename.Log, l.FileNum)
		fmt.Fprintf(e.stdout, "  %s: %d records", name, l.Records)
		if l.Stopped {
			e.stdout.WriteString(", replay stopped here (PointInTime)")
		}
		e.stdout.WriteString("\n")
		if t := l.TornTail; t != nil {
			fmt.Fprintf(e.stdout, "    torn tail: %s, %d bytes at offset %d (a write cut short by a crash; not damage)\n",
				t.Reason, t.Bytes, t.Offset)
		}
		for _, d := range l.Drops {
			fmt.Fprintf(e.stdout, "    damage: %s, %d bytes dropped at offset %d\n", d.Reason, d.Bytes, d.Offset)
		}
	}
}

// writeLevels prints the tree's shape, one row per level.
func writeLevels(w io.Writer, m shale.Metrics) {
	fmt.Fprintf(w, "levels (base level L%d):\n", m.BaseLevel)
	fmt.Fprintf(w, "  level  tables           bytes   score          target\n")
	for level, l := range m.Levels {
		score, target := "-", "-"
		if level < shale.NumLevels-1 {
			score = fmt.Sprintf("%.2f", l.Score)
		}
		if l.Target > 0 {
			target = fmt.Sprint(l.Target)
		}
		fmt.Fprintf(w, "  L%d     %6d  %14d  %6s  %14s\n", level, l.Tables, l.Bytes, score, target)
	}
}
