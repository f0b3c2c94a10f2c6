package shale

import (
	"fmt"
	"strings"

	"github.com/shale-db/shale/wal"
)

// RepairReport says what Repair found in each file, what it kept and what
// it dropped.
type RepairReport struct {
	// Tables lists every table file found, by file number.
	Tables []TableRepair
	// Missing lists the tables that the old MANIFEST named but that were
	// not in the directory (known only if the MANIFEST could be read).
	Missing []string
	// StaleManifest is set when the old MANIFEST could be read but does
	// not name every table present: it is older than the tables (it was
	// truncated), so Missing most likely lists tables compacted away, and
	// they do not count as lost.
	StaleManifest bool
	// Obsolete lists the tables that a MANIFEST in the directory records
	// as replaced by a compaction: a crash cut their deletion short. They
	// are moved to lost/ unread: their versions are older than the
	// compaction's outputs, and merged they could win over them (the last
	// level's outputs carry sequence number 0).
	Obsolete []string
	// ObsoleteLogs lists the write-ahead logs that a MANIFEST in the
	// directory records as flushed to tables (numbered below its log
	// number): a crash cut their deletion short. They are moved to lost/
	// unread, for the same reason as Obsolete tables.
	ObsoleteLogs []string
	// Logs lists every write-ahead log replayed, oldest first.
	Logs []LogRepair
	// Rewritten is set when the surviving entries were merged into new
	// tables (Outputs); when every table was intact, disjoint and no log
	// held anything, the tables are kept as they are.
	Rewritten bool
	// Outputs lists the tables of the repaired database, all in the last
	// level, in key order.
	Outputs []string
	// Keys counts the live keys of the repaired database (newest version
	// of each key, deletions dropped) when Rewritten; else the entries of
	// the tables kept.
	Keys int64
	// Manifest names the MANIFEST that Repair wrote.
	Manifest string
	// MovedToLost lists the files moved to the lost/ directory: damaged,
	// unreadable and obsolete tables, damaged logs and the old MANIFESTs.
	// Nothing that could hold data is deleted.
	MovedToLost []string
}

// TableRepair is what Repair found in one table file.
type TableRepair struct {
	// Name is the file's name in the database directory.
	Name string
	// Entries counts the entries read from intact blocks and kept, and
	// Bytes the bytes of those blocks.
	Entries, Bytes int64
	// Blocks counts the data blocks the index lists.
	Blocks int
	// Drops lists the damaged data blocks, whose entries were dropped.
	// Their keys cannot be counted; each names the key range it held.
	Drops []BlockDrop
	// Unreadable is set when nothing of the table could be read (Err
	// says why): the whole file was dropped.
	Unreadable bool
	// Err is why the table is unreadable or was rewritten, or "".
	Err string
}

// BlockDrop is a damaged data block that Repair dropped.
type BlockDrop struct {
	Offset, Bytes int64
	// After and UpTo bound the user keys the block held: after After
	// (the previous block's index key; "" for the first) and up to UpTo.
	After, UpTo string
	Reason      string
}

// LogRepair is what Repair found in one write-ahead log.
type LogRepair struct {
	// Name is the file's name in the database directory.
	Name string
	// Records counts the batches replayed, Entries the puts and deletes in
	// them.
	Records, Entries int64
	// Drops lists the damaged stretches skipped (the log was replayed in
	// SkipCorrupt mode); TornTail is a write cut short at the end.
	Drops    []wal.Drop
	TornTail *wal.Drop
}

// Lost reports whether Repair dropped any data: a damaged block, an
// unreadable table, a damaged stretch of a log, a missing table.
func (r *RepairReport) Lost() bool {
	if len(r.Missing) > 0 && !r.StaleManifest {
		return true
	}
	for _, t := range r.Tables {
		if t.Unreadable || len(t.Drops) > 0 {
			return true
		}
	}
	for _, l := range r.Logs {
		if len(l.Drops) > 0 {
			return true
		}
	}
	return false
}

// String formats the report: one line per file, then the result. A repair
// that stopped before it wrote its MANIFEST (Repair returned an error) has
// no result, and its report says so.
func (r *RepairReport) String() string {
	var sb strings.Builder
	for _, t := range r.Tables {
		switch {
		case t.Unreadable:
			fmt.Fprintf(&sb, "table %s: unreadable, dropped whole: %s\n", t.Name, t.Err)
		case len(t.Drops) > 0 || t.Err != "":
			fmt.Fprintf(&sb, "table %s: kept %d entries (%d bytes) from %d of %d blocks; rewritten\n",
				t.Name, t.Entries, t.Bytes, t.Blocks-len(t.Drops), t.Blocks)
		default:
			fmt.Fprintf(&sb, "table %s: ok, %d entries in %d blocks\n", t.Name, t.Entries, t.Blocks)
		}
		for _, d := range t.Drops {
			fmt.Fprintf(&sb, "  dropped block at offset %d (%d bytes, keys after %q up to %q): %s\n",
				d.Offset, d.Bytes, d.After, d.UpTo, d.Reason)
		}
	}
	for _, name := range r.Obsolete {
		fmt.Fprintf(&sb, "table %s: replaced by a compaction, as the MANIFEST records; not merged\n", name)
	}
	for _, name := range r.ObsoleteLogs {
		fmt.Fprintf(&sb, "log %s: flushed to tables, as the MANIFEST records; not replayed\n", name)
	}
	for _, name := range r.Missing {
		if r.StaleManifest {
			fmt.Fprintf(&sb, "table %s: named by the old MANIFEST, which is older than the tables present: probably compacted away\n", name)
		} else {
			fmt.Fprintf(&sb, "table %s: named by the old MANIFEST but missing: its entries are lost\n", name)
		}
	}
	for _, l := range r.Logs {
		fmt.Fprintf(&sb, "log %s: replayed %d batches (%d entries)\n", l.Name, l.Records, l.Entries)
		for _, d := range l.Drops {
			fmt.Fprintf(&sb, "  dropped %d bytes at offset %d: %s\n", d.Bytes, d.Offset, d.Reason)
		}
		if l.TornTail != nil {
			fmt.Fprintf(&sb, "  torn write at the end (%d bytes at offset %d), as a crash leaves\n", l.TornTail.Bytes, l.TornTail.Offset)
		}
	}
	for _, name := range r.MovedToLost {
		fmt.Fprintf(&sb, "moved %s to lost/\n", name)
	}
	if r.Manifest == "" {
		sb.WriteString("no result: the repair stopped before it wrote a MANIFEST\n")
		return sb.String()
	}
	verb := "kept as they were"
	if r.Rewritten {
		verb = "rewritten"
	}
	fmt.Fprintf(&sb, "result: %d keys in %d tables (%s), %s\n", r.Keys, len(r.Outputs), verb, r.Manifest)
	if r.Lost() {
		sb.WriteString("data was lost: see the dropped blocks and stretches above\n")
	} else {
		sb.WriteString("nothing was lost\n")
	}
	return sb.String()
}
