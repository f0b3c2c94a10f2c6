package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/shale-db/shale/internal/filename"
	"github.com/shale-db/shale/internal/ikey"
	"github.com/shale-db/shale/sstable"
)

// compareUser compares the user keys of two internal keys.
func compareUser(a, b []byte) int {
	return bytes.Compare(ikey.UserKey(a), ikey.UserKey(b))
}

// checkTables verifies every table file in the directory, and that every
// table the MANIFEST lists is one of them. names are the directory's
// entries, nums the numbers of its table files.
func (ck *checker) checkTables(names []string, nums []uint64, vs *versionState) {
	onDisk := map[uint64]string{}
	for _, name := range names {
		if t, num, ok := filename.Parse(name); ok && t == filename.Table {
			onDisk[num] = name
		}
	}
	if vs != nil {
		for _, t := range vs.sorted() {
			if _, ok := onDisk[t.meta.Num]; !ok {
				name := filename.Name(filename.Table, t.meta.Num)
				ck.damage(name, 0, "missing: the MANIFEST lists it in L%d", t.level)
			}
		}
	}
	slices.Sort(nums)
	for _, num := range nums {
		var meta *liveTable
		if vs != nil {
			t, ok := vs.tables[num]
			if !ok {
				// Not part of the database: a table a flush or compaction
				// was writing when the process stopped (or one replaced
				// and not yet deleted). Whatever it holds is not damage.
				if ck.damaged[ck.manifest] > 0 {
					// The MANIFEST's damage may have taken the edit
					// that added it: it may well be live.
					ck.note(onDisk[num], "not in what could be read of the MANIFEST, which is damaged: it may "+
						"hold live data; 'kvcli --db %s repair' rebuilds the MANIFEST from the tables and logs", ck.dir)
				} else {
					ck.note(onDisk[num], "not in the MANIFEST: left over by an interrupted flush or compaction "+
						"(or replaced by one); not part of the database, deleted at the next write Open")
				}
				continue
			}
			meta = &t
		}
		ck.checkTable(onDisk[num], meta, vs)
	}
}

// checkTable verifies one table file. meta is what the MANIFEST says of
// it, nil if it does not list it.
func (ck *checker) checkTable(name string, meta *liveTable, vs *versionState) {
	path := filepath.Join(ck.dir, name)
	f, err := openRegular(path)
	if err != nil {
		ck.damageErr(name, err)
		return
	}
	defer f.Close()
	ck.files++
	fi, err := f.Stat()
	if err != nil {
		ck.damageErr(name, err)
		return
	}
	size := fi.Size()
	if meta != nil && meta.meta.Size != size {
		ck.damage(name, min(size, meta.meta.Size), "file is %d bytes, the MANIFEST says %d", size, meta.meta.Size)
	}
	t, err := sstable.Open(f, size, sstable.ReaderOptions{FileName: name})
	if err != nil {
		ck.damageErr(name, err)
		return
	}
	defer t.Close()
	blocks, ok := ck.checkBlocks(name, t)
	if ok {
		ck.checkEntries(name, t, meta, vs)
	}
	state := "MANIFEST unreadable"
	if meta != nil {
		state = "L" + strconv.Itoa(meta.level)
	}
	ck.ok(name, "%d blocks, checksums ok (%s)", blocks, state)
}

// checkBlocks verifies the checksum and decoding of every block Layout
// lists (data, index, metaindex and every block the metaindex names), and
// that each metaindex entry is a block handle. It reports whether all were
// sound.
func (ck *checker) checkBlocks(name string, t *sstable.Reader) (int, bool) {
	l, err := t.Layout()
	if err != nil {
		ck.damageErr(name, err)
		return 0, false
	}
	sound := true
	for _, b := range l.Blocks {
		if b.Err != nil {
			ck.damageErr(name, b.Err)
			sound = false
		}
	}
	for _, m := range l.MetaIndex {
		if !m.Valid {
			ck.damage(name, int64(l.Footer.MetaIndex.Offset), "metaindex entry %q is not a block handle", m.Name)
			sound = false
		}
	}
	return len(l.Blocks), sound
}

// checkEntries iterates over the table: entries decode, come in strictly
// increasing internal-key order, have a known kind, span exactly the key
// range the MANIFEST records, and carry no sequence number above the
// MANIFEST's last sequence (a reader would not see them).
func (ck *checker) checkEntries(name string, t *sstable.Reader, meta *liveTable, vs *versionState) {
	it := t.NewIter()
	defer it.Close()
	var first, prev []byte
	var maxSeq uint64
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		if _, _, _, valid := ikey.Parse(k); !valid {
			ck.damage(name, -1, "entry %d: malformed internal key %x", n, k)
			return
		}
		if n > 0 && ikey.Compare(prev, k) >= 0 {
			ck.damage(name, -1, "entry %d (%s) is not after entry %d (%s)", n, ikeyText(k), n-1, ikeyText(prev))
			return
		}
		if n == 0 {
			first = append([]byte(nil), k...)
		}
		maxSeq = max(maxSeq, ikey.Seq(k))
		prev = append(prev[:0], k...)
		n++
	}
	if err := it.Err(); err != nil {
		ck.damageErr(name, err)
		return
	}
	if meta == nil {
		return
	}
	if maxSeq > vs.lastSeq {
		ck.damage(name, -1, "holds sequence number %d, above the MANIFEST's last sequence %d: readers would not see it", maxSeq, vs.lastSeq)
	}
	if n == 0 {
		ck.damage(name, -1, "table is empty, the MANIFEST lists it with keys")
		return
	}
	if ikey.Compare(first, meta.meta.Smallest) != 0 || ikey.Compare(prev, meta.meta.Largest) != 0 {
		ck.damage(name, -1, "keys span [%s .. %s], the MANIFEST says [%s .. %s]",
			ikeyText(first), ikeyText(prev), ikeyText(meta.meta.Smallest), ikeyText(meta.meta.Largest))
	}
}

// ikeyText formats an internal key as "KEY#SEQ,KIND" with the user key
// escaped.
func ikeyText(k []byte) string { return formatIkey(k, escape) }

// formatIkey formats an internal key as "KEY#SEQ,KIND", the user key
// formatted by show.
func formatIkey(k []byte, show func([]byte) string) string {
	if !ikey.Valid(k) {
		return fmt.Sprintf("(invalid internal key %x)", k)
	}
	return fmt.Sprintf("%s#%d,%s", show(ikey.UserKey(k)), ikey.Seq(k), ikey.KindOf(k))
}
