package main

import (
	"bufio"
	"io"
	"path/filepath"
	"slices"

	"github.com/shale-db/shale/internal/batchrepr"
	"github.com/shale-db/shale/internal/filename"
	"github.com/shale-db/shale/internal/manifest"
	"github.com/shale-db/shale/wal"
)

// logRecord is called for each record of a log a check reads; off is the
// record's offset.
type logRecord func(rec []byte, off int64)

// readLog reads every record of the log file name with a Reader that
// reports every skipped stretch: damage is reported with its offset, and a
// torn tail is passed to torn. It returns the number of records, or -1 if
// the file cannot be read.
func (ck *checker) readLog(name string, fn logRecord, torn func(wal.Drop)) int {
	f, err := openRegular(filepath.Join(ck.dir, name))
	if err != nil {
		ck.damageErr(name, err)
		return -1
	}
	defer f.Close()
	ck.files++
	r := wal.NewReader(bufio.NewReaderSize(f, wal.BlockSize), wal.Named(name), wal.OnDrop(func(d wal.Drop) {
		if d.TornTail {
			torn(d)
			return
		}
		ck.damage(name, d.Offset, "%s (%d bytes dropped)", d.Reason, d.Bytes)
	}))
	n := 0
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return n
		}
		if err != nil {
			ck.damageErr(name, err)
			return n
		}
		n++
		fn(rec, r.LastRecordOffset())
	}
}

// checkManifest verifies the MANIFEST named name and returns the version
// its edits lead to (as far as they can be read).
func (ck *checker) checkManifest(name string) *versionState {
	vs := newVersionState()
	n := ck.readLog(name, func(rec []byte, off int64) {
		var e manifest.VersionEdit
		if err := e.Decode(rec); err != nil {
			ck.damage(name, off, "undecodable VersionEdit: %v", err)
			return
		}
		for _, p := range vs.apply(&e) {
			ck.damage(name, off, "VersionEdit %s", p)
		}
	}, func(d wal.Drop) {
		ck.note(name, "torn tail at offset %d (%d bytes): an edit that was never completely written, and so never acknowledged; not damage", d.Offset, d.Bytes)
	})
	if n < 0 {
		return nil
	}
	switch {
	case vs.comparator == manifest.MarkedComparator:
		ck.note(name, "marked (comparator %q): its logs or tables may hold range deletions, which LevelDB and goleveldb cannot read, so both refuse to open this directory; the mark comes off once compaction has dropped the last of them ('kvcli compact')", vs.comparator)
	case vs.comparator != manifest.BytewiseComparator:
		ck.damage(name, 0, "comparator %q, want %q", vs.comparator, manifest.BytewiseComparator)
	case vs.nextFile == 0:
		ck.damage(name, 0, "no next file number in any edit")
	}
	ck.checkLevels(name, vs)
	ck.ok(name, "%d edits, %d live tables, log number %d, last sequence %d", n, len(vs.tables), vs.logNum, vs.lastSeq)
	if vs.comparator == manifest.BytewiseComparator {
		ck.note(name, "LevelDB's: goleveldb and LevelDB open this directory")
	}
	return vs
}

// checkLevels verifies that the tables of each level above 0 do not
// overlap.
func (ck *checker) checkLevels(name string, vs *versionState) {
	ts := vs.sorted()
	for lvl := 1; lvl < manifest.NumLevels; lvl++ {
		var level []liveTable
		for _, t := range ts {
			if t.level == lvl {
				level = append(level, t)
			}
		}
		slices.SortFunc(level, func(a, b liveTable) int { return compareUser(a.meta.Smallest, b.meta.Smallest) })
		for i := 1; i < len(level); i++ {
			if compareUser(level[i-1].meta.Largest, level[i].meta.Smallest) >= 0 {
				ck.damage(name, 0, "tables %06d and %06d of L%d overlap", level[i-1].meta.Num, level[i].meta.Num, lvl)
			}
		}
	}
}

// checkLogs verifies every write-ahead log. The logs the database still
// needs are those numbered from the MANIFEST's log number on; only the
// newest of them may end in a torn write.
func (ck *checker) checkLogs(nums []uint64, vs *versionState) {
	live := func(n uint64) bool {
		return vs == nil || n >= vs.logNum || (vs.prevLogNum != 0 && n == vs.prevLogNum)
	}
	var newest uint64
	for _, n := range nums {
		if live(n) {
			newest = max(newest, n)
		}
	}
	for _, n := range nums {
		ck.checkLog(n, live(n), n == newest)
	}
}

// checkLog verifies one write-ahead log: record checksums and batches.
func (ck *checker) checkLog(num uint64, live, newest bool) {
	name := filename.Name(filename.Log, num)
	n := ck.readLog(name, func(rec []byte, off int64) {
		if _, err := batchrepr.ValidateCommitted(rec); err != nil {
			ck.damage(name, off, "malformed batch: %v", err)
		}
	}, func(d wal.Drop) {
		if live && !newest {
			ck.damage(name, d.Offset, "torn write (%s, %d bytes) at the end of a log that is not the newest", d.Reason, d.Bytes)
			return
		}
		ck.note(name, "torn tail at offset %d (%s, %d bytes): the log ends inside a record, as a crash leaves a write it cut short (never acknowledged) and as a file cut short afterwards would, which the format cannot tell apart; recovery drops it", d.Offset, d.Reason, d.Bytes)
	})
	if n < 0 {
		return
	}
	state := "live"
	if !live {
		state = "obsolete: its writes are in tables; it will be deleted"
	}
	ck.ok(name, "%d records (%s)", n, state)
}
