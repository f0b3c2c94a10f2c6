package manifest

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/cockroachdb/errors"
	"github.com/shale-db/shale/internal/ikey"
	"github.com/shale-db/shale/internal/keyfilter"
)

// FileMeta describes one table file. It is immutable once it is part of a
// Version (versions share FileMetas); a table moved to another level
// without a rewrite gets a copy (Moved).
type FileMeta struct {
	Num      uint64 // file number: the table is filename.Make(dir, filename.Table, Num)
	Size     int64  // file size in bytes
	Smallest []byte // smallest internal key in the table
	Largest  []byte // largest internal key in the table

	// Stats are known for tables this process wrote (the MANIFEST does
	// not record them): entries, deletions among them, and the newest
	// sequence number. Compaction picking uses them to find tables dense
	// with deletions.
	Entries, Deletions, LargestSeq uint64
	HasStats                       bool
	// RangeDels says that the table holds range deletions (recorded in
	// the MANIFEST, which is then marked: see MarkedComparator).
	RangeDels bool

	// keys is the filter of the user keys of the memtable a flush wrote
	// the table from (see KeyFilter).
	keys *keyfilter.Filter
}

// KeyFilter returns the filter of the table's user keys that its flush
// handed it, or nil. A Get of a key the filter does not hold skips the
// table without reading its index or filter block. Only tables flushed by
// this process have one, and only in level 0 (see Moved): it lives in
// memory alone, a thirty-second of the write buffer (256 KiB for 8 MiB).
func (m *FileMeta) KeyFilter() *keyfilter.Filter { return m.keys }

// SetKeyFilter sets the table's KeyFilter, before the table is part of a
// version. f must hold the user key of every point entry of the table.
func (m *FileMeta) SetKeyFilter(f *keyfilter.Filter) { m.keys = f }

// Moved returns the FileMeta of the same table for a compaction that moves
// it to another level without rewriting it: a copy without the KeyFilter,
// which only level 0's many overlapping tables are worth the memory of.
// Versions that hold m keep it, filter and all, until they are released.
func (m *FileMeta) Moved() *FileMeta {
	c := *m
	c.keys = nil
	return &c
}

// String formats m as "000012 1234B [a#5,PUT .. z#3,DEL]".
func (m *FileMeta) String() string {
	return fmt.Sprintf("%06d %dB [%s .. %s]", m.Num, m.Size, keyString(m.Smallest), keyString(m.Largest))
}

// containsUserKey reports whether ukey lies within m's user-key range.
func (m *FileMeta) containsUserKey(ukey []byte) bool {
	return bytes.Compare(ukey, ikey.UserKey(m.Smallest)) >= 0 &&
		bytes.Compare(ukey, ikey.UserKey(m.Largest)) <= 0
}

// overlapsRange reports whether m's user-key range meets [start, end); a nil
// bound is open.
func (m *FileMeta) overlapsRange(start, end []byte) bool {
	if start != nil && bytes.Compare(ikey.UserKey(m.Largest), start) < 0 {
		return false
	}
	return end == nil || bytes.Compare(ikey.UserKey(m.Smallest), end) < 0
}

// Version is the set of live tables at one point in time.
//
// Invariants (checked by Check, which every Version built by this package
// passes): level 0 is ordered newest first, by file number descending, and
// its files may overlap; each level n >= 1 is ordered by smallest internal
// key and its files are disjoint in internal-key order (one user key may
// still span two adjacent files, as LevelDB writes them); every key is a
// valid internal key with Smallest <= Largest; a file number appears once.
//
// A Version is immutable: Levels and the FileMetas must not be modified.
// Methods are safe for concurrent use.
type Version struct {
	Levels [NumLevels][]*FileMeta

	refs atomic.Int32
	vs   *VersionSet // nil for a Version not owned by a VersionSet
	// rangeDels caches HasRangeDels: 0 not yet known, 1 no, 2 yes.
	rangeDels atomic.Int32
}

// Ref adds a reference. The caller must already hold one (from Current or an
// earlier Ref): a Version whose count has dropped to zero is dead.
func (v *Version) Ref() {
	if v.refs.Add(1) <= 1 && v.vs != nil {
		panic("manifest: Ref of a released version")
	}
}

// Unref releases a reference. When the last one goes, the Version's files
// stop counting as live (LiveFiles) unless another Version holds them.
func (v *Version) Unref() {
	n := v.refs.Add(-1)
	if n < 0 {
		panic("manifest: Unref of a version without references")
	}
	if n == 0 && v.vs != nil {
		v.vs.releaseVersion(v)
	}
}

// AppendL0Candidates appends to dst the level-0 files whose user-key range
// contains ukey, newest first, and returns the extended slice.
func (v *Version) AppendL0Candidates(dst []*FileMeta, ukey []byte) []*FileMeta {
	for _, f := range v.Levels[0] {
		if f.containsUserKey(ukey) {
			dst = append(dst, f)
		}
	}
	return dst
}

// FindFile returns the one file of level (1 <= level < NumLevels) that may
// hold the first entry at or after key in internal-key order, or nil if no
// file can. key is an internal key, for a point read the seek key
// ikey.SeekKey(ukey, seq): searching by internal key rather than user key
// is what finds the right file when one user key spans two adjacent files.
// A non-nil result has UserKey(Smallest) <= UserKey(key); the caller still
// checks the user key of the entry it finds. O(log n).
func (v *Version) FindFile(level int, key []byte) *FileMeta {
	if level == 0 {
		panic("manifest: FindFile on level 0, whose files overlap")
	}
	files := v.Levels[level]
	i := sort.Search(len(files), func(i int) bool {
		return ikey.Compare(files[i].Largest, key) >= 0
	})
	if i == len(files) {
		return nil
	}
	f := files[i]
	if bytes.Compare(ikey.UserKey(key), ikey.UserKey(f.Smallest)) < 0 {
		return nil
	}
	return f
}

// Overlaps returns the files of level whose user-key range meets the range
// [start, end) (a nil bound is open), in the level's order. For level >= 1
// the result is a subslice of Levels[level] found by binary search; it must
// not be modified.
//
// For level 0 it returns only the files that meet the range itself; a
// compaction that picks level-0 inputs must widen the range to what it picked
// and ask again until the set stops growing, as LevelDB does.
func (v *Version) Overlaps(level int, start, end []byte) []*FileMeta {
	files := v.Levels[level]
	if level == 0 {
		var out []*FileMeta
		for _, f := range files {
			if f.overlapsRange(start, end) {
				out = append(out, f)
			}
		}
		return out
	}
	i := 0
	if start != nil {
		i = sort.Search(len(files), func(i int) bool {
			return bytes.Compare(ikey.UserKey(files[i].Largest), start) >= 0
		})
	}
	j := i
	for j < len(files) && files[j].overlapsRange(start, end) {
		j++
	}
	if i == j {
		return nil
	}
	return files[i:j:j]
}

// NumFiles returns the number of files in level.
func (v *Version) NumFiles(level int) int { return len(v.Levels[level]) }

// LevelSize returns the total size in bytes of the files in level.
func (v *Version) LevelSize(level int) int64 {
	var n int64
	for _, f := range v.Levels[level] {
		n += f.Size
	}
	return n
}

// HasRangeDels reports whether any table holds range deletions.
func (v *Version) HasRangeDels() bool {
	if c := v.rangeDels.Load(); c != 0 {
		return c == 2
	}
	has := false
	for _, files := range v.Levels {
		for _, f := range files {
			has = has || f.RangeDels
		}
	}
	v.rangeDels.Store(map[bool]int32{false: 1, true: 2}[has])
	return has
}

// Check verifies the Version invariants (see Version) and returns an error
// describing the first violation. The error does not match ErrCorrupt; the
// caller decides whether a violation is damage (a replayed MANIFEST) or a
// bug (an edit made in memory).
func (v *Version) Check() error {
	seen := make(map[uint64]int)
	for level, files := range v.Levels {
		for i, f := range files {
			if err := checkFile(level, f); err != nil {
				return err
			}
			if prev, dup := seen[f.Num]; dup {
				return errors.Newf("manifest: table %06d in level %d and level %d", f.Num, prev, level)
			}
			seen[f.Num] = level
			if i == 0 {
				continue
			}
			p := files[i-1]
			if level == 0 && p.Num <= f.Num {
				return errors.Newf("manifest: level 0: table %06d listed before newer table %06d", p.Num, f.Num)
			}
			if level > 0 && ikey.Compare(p.Largest, f.Smallest) >= 0 {
				return errors.Newf("manifest: level %d: tables %06d and %06d overlap or are out of order", level, p.Num, f.Num)
			}
		}
	}
	return nil
}

func checkFile(level int, f *FileMeta) error {
	if err := checkLevelKeys(level, f.Smallest, f.Largest); err != nil {
		return errors.Wrapf(err, "table %06d", f.Num)
	}
	if f.Size < 0 {
		return errors.Newf("manifest: table %06d has negative size %d", f.Num, f.Size)
	}
	if ikey.Compare(f.Smallest, f.Largest) > 0 {
		return errors.Newf("manifest: table %06d: smallest key %s after largest %s",
			f.Num, keyString(f.Smallest), keyString(f.Largest))
	}
	return nil
}

// String lists the levels that hold files, one file per line, for dumps.
func (v *Version) String() string {
	var sb strings.Builder
	for level, files := range v.Levels {
		if len(files) == 0 {
			continue
		}
		fmt.Fprintf(&sb, "L%d: %d files, %d bytes\n", level, len(files), v.LevelSize(level))
		for _, f := range files {
			fmt.Fprintf(&sb, "  %s\n", f)
		}
	}
	return sb.String()
}
