package compaction

import (
	"bytes"
	"slices"

	"github.com/shale-db/shale/internal/ikey"
)

// Table is what picking needs to know of one table.
type Table struct {
	Num  uint64
	Size int64
	// Smallest and Largest are the table's first and last internal keys.
	Smallest, Largest []byte
	// Entries and Deletions count the table's entries and, among them,
	// its deletion tombstones; LargestSeq is its newest sequence number.
	// HasStats says they are known (tables from an older process may not
	// have them until they are read).
	Entries, Deletions uint64
	LargestSeq         uint64
	HasStats           bool
	// RangeDels says the table holds range deletions.
	RangeDels bool
}

func (t *Table) smallestUser() []byte { return ikey.UserKey(t.Smallest) }
func (t *Table) largestUser() []byte  { return ikey.UserKey(t.Largest) }

// sharesBoundary reports whether t, in a level, holds entries of the user
// key that next starts with. A table that ends where its range deletions
// end holds none of its largest key (see ikey.IsRangeEnd).
func (t *Table) sharesBoundary(next *Table) bool {
	return !ikey.IsRangeEnd(t.Largest) && bytes.Equal(t.largestUser(), next.smallestUser())
}

// LSM is the shape of the tree that picking reads. The engine implements
// it over one version of its tables.
type LSM interface {
	// NumLevels returns the number of levels, level 0 included.
	NumLevels() int
	// Tables returns the tables of level: level 0 newest first, deeper
	// levels in key order and disjoint. The slice is not modified.
	Tables(level int) []Table
}

// DefaultL0Trigger is Options.L0Trigger's default.
const DefaultL0Trigger = 4

// Options tune picking. Zero fields take the defaults in brackets.
type Options struct {
	// L0Trigger is the number of level-0 tables at which level 0's score
	// reaches 1 [4].
	L0Trigger int
	// BaseLevelMinBytes is the smallest target the base level (the one
	// level 0 compacts into) may have: the engine's write buffer size
	// [4 MiB].
	BaseLevelMinBytes int64
	// Multiplier is the ratio of a level's target to the one above [10].
	Multiplier int64
	// TargetFileSize is the size at which outputs are split [2 MiB].
	TargetFileSize int64
	// MaxGrandparentOverlap bounds the bytes of the level below the
	// output level that one output table, or a trivially moved table, may
	// overlap [10 x TargetFileSize].
	MaxGrandparentOverlap int64
	// TombstoneDensity is the share of deletions at which a table is
	// compacted although its level is within its target [0.5].
	TombstoneDensity float64
}

// WithDefaults returns o with zero fields filled.
func (o Options) WithDefaults() Options {
	def := func(p *int64, v int64) {
		if *p <= 0 {
			*p = v
		}
	}
	if o.L0Trigger <= 0 {
		o.L0Trigger = DefaultL0Trigger
	}
	def(&o.BaseLevelMinBytes, 4<<20)
	def(&o.Multiplier, 10)
	def(&o.TargetFileSize, 2<<20)
	def(&o.MaxGrandparentOverlap, 10*o.TargetFileSize)
	if o.TombstoneDensity <= 0 {
		o.TombstoneDensity = 0.5
	}
	return o
}

// Shape is the tree's levels measured against their targets.
type Shape struct {
	// BaseLevel is the level that level 0 compacts into.
	BaseLevel int
	// Sizes, Targets and Scores are per level. Level 0's score is its
	// table count over L0Trigger and its target is 0; a level above the
	// base level has target 0 and, if it holds anything, an infinite-like
	// score so that its tables move down; the last level has no score.
	Sizes, Targets []int64
	Scores         []float64
}

// scoreAbove is the score of a level above the base level that holds
// tables: higher than any size ratio, so such tables move down first.
const scoreAbove = 1e6

// Measure computes the levels' targets and scores, from the bottom up
// (see the package doc).
func Measure(lsm LSM, o Options) Shape {
	o = o.WithDefaults()
	n := lsm.NumLevels()
	s := Shape{Sizes: make([]int64, n), Targets: make([]int64, n), Scores: make([]float64, n)}
	var largest int64
	for level := range n {
		s.Sizes[level] = totalSize(lsm.Tables(level))
		if level > 0 {
			largest = max(largest, s.Sizes[level])
		}
	}
	bottom := n - 1
	s.BaseLevel = bottom
	target := largest
	for level := bottom; level >= 1; level-- {
		if level < bottom && target/o.Multiplier < o.BaseLevelMinBytes {
			break
		}
		if level < bottom {
			target /= o.Multiplier
		}
		s.Targets[level] = target
		s.BaseLevel = level
	}
	s.Scores[0] = float64(len(lsm.Tables(0))) / float64(o.L0Trigger)
	for level := 1; level < bottom; level++ {
		switch {
		case level < s.BaseLevel && s.Sizes[level] > 0:
			s.Scores[level] = scoreAbove
		case level >= s.BaseLevel && s.Targets[level] > 0:
			s.Scores[level] = float64(s.Sizes[level]) / float64(s.Targets[level])
		}
	}
	return s
}

// Kind says why a compaction was picked.
type Kind int

const (
	// KindDefault merges a level over its target (or level 0 over its
	// table count) into the level below.
	KindDefault Kind = iota
	// KindMove moves one table down a level without rewriting it.
	KindMove
	// KindTombstone rewrites a table dense with deletions although its
	// level is within target, so that they reach the bottom and vanish.
	KindTombstone
	// KindManual is a compaction the user asked for.
	KindManual
	numKinds
)

// NumKinds is the number of Kind values.
const NumKinds = int(numKinds)

// String names the kind as metrics print it.
func (k Kind) String() string {
	switch k {
	case KindDefault:
		return "default"
	case KindMove:
		return "move"
	case KindTombstone:
		return "tombstone"
	case KindManual:
		return "manual"
	}
	return "kind?"
}

// Compaction is one picked compaction: tables of StartLevel (Inputs[0])
// and the tables of OutputLevel they overlap (Inputs[1]) merge into new
// tables of OutputLevel.
type Compaction struct {
	Kind                    Kind
	StartLevel, OutputLevel int
	Score                   float64
	Inputs                  [2][]Table
	// Grandparents are the tables of the level below OutputLevel that the
	// inputs overlap: outputs are split so that none overlaps more than
	// MaxGrandparentOverlap of them.
	Grandparents []Table
	// Smallest and Largest bound the inputs' user keys.
	Smallest, Largest []byte
	// Bottommost says no table below OutputLevel holds any of the
	// inputs' user keys, so deletions that every reader sees hide nothing
	// and can be dropped.
	Bottommost bool
}

// Running describes a compaction under way, which picking must not
// disturb: its tables are busy, and no other compaction may write into
// OutputLevel within [Smallest, Largest] (user keys).
type Running struct {
	Tables            []uint64
	StartLevel        int
	OutputLevel       int
	Smallest, Largest []byte
}

// State is what is under way when picking.
type State struct {
	Running []Running
	// CompactPointer returns the internal key after which level's next
	// compaction starts (round-robin), or nil.
	CompactPointer func(level int) []byte
	// OldestSnapshot is the oldest sequence number a reader may read at.
	OldestSnapshot uint64
}

func (st *State) busy(num uint64) bool {
	for _, r := range st.Running {
		if slices.Contains(r.Tables, num) {
			return true
		}
	}
	return false
}

func (st *State) anyBusy(ts []Table) bool {
	for i := range ts {
		if st.busy(ts[i].Num) {
			return true
		}
	}
	return false
}

// outputClash reports whether a running compaction writes into level
// within [lo, hi], or reads level 0 when start is 0.
func (st *State) outputClash(start, level int, lo, hi []byte) bool {
	for _, r := range st.Running {
		if start == 0 && r.StartLevel == 0 {
			return true // one level-0 compaction at a time
		}
		if r.OutputLevel == level && bytes.Compare(lo, r.Largest) <= 0 && bytes.Compare(r.Smallest, hi) <= 0 {
			return true
		}
	}
	return false
}

// Pick returns the compaction to run next, or nil if none is due or every
// due one would disturb one under way. It tries the levels by score,
// highest first, among those scoring at least 1, then tables dense with
// deletions.
func Pick(lsm LSM, o Options, st State) *Compaction {
	o = o.WithDefaults()
	shape := Measure(lsm, o)
	bottom := lsm.NumLevels() - 1
	levels := make([]int, 0, bottom)
	for level := range bottom {
		if shape.Scores[level] >= 1 {
			levels = append(levels, level)
		}
	}
	slices.SortStableFunc(levels, func(a, b int) int {
		switch sa, sb := shape.Scores[a], shape.Scores[b]; {
		case sa > sb:
			return -1
		case sa < sb:
			return 1
		}
		return 0
	})
	for _, level := range levels {
		var c *Compaction
		if level == 0 {
			c = pickL0(lsm, o, &st, shape.BaseLevel)
		} else {
			c = pickLevel(lsm, o, &st, level)
		}
		if c != nil {
			c.Score = shape.Scores[level]
			return c
		}
	}
	return pickTombstones(lsm, o, &st, shape.BaseLevel)
}

// pickL0 picks every level-0 table that shares keys, directly or through
// others, with the oldest one, so that no older version of an input's key
// stays above the output, and merges them into the base level, or into the
// first level above it that holds some of their keys.
func pickL0(lsm LSM, o Options, st *State, base int) *Compaction {
	return pickL0From(lsm, o, st, base, len(lsm.Tables(0))-1)
}

// pickL0From is pickL0 starting from level-0 table i rather than the
// oldest. Any start is safe: every table that overlaps the picked ones,
// older or newer, joins them.
func pickL0From(lsm LSM, o Options, st *State, base, i int) *Compaction {
	tables := lsm.Tables(0)
	if len(tables) == 0 || st.anyBusy(tables) {
		return nil
	}
	first := tables[i]
	lo, hi := first.smallestUser(), first.largestUser()
	var in []Table
	for {
		in = in[:0]
		nlo, nhi := lo, hi
		for _, t := range tables {
			if overlapsUser(&t, lo, hi) {
				in = append(in, t)
				nlo, nhi = minKey(nlo, t.smallestUser()), maxKey(nhi, t.largestUser())
			}
		}
		if bytes.Equal(nlo, lo) && bytes.Equal(nhi, hi) {
			break
		}
		lo, hi = nlo, nhi
	}
	// A level above the base level may still hold tables (a tree written
	// by LevelDB, or one whose base level moved down): their versions of
	// these keys are older than level 0's, so the outputs go no deeper.
	out := base
	for level := 1; level < base; level++ {
		if len(overlapping(lsm.Tables(level), level, lo, hi)) > 0 {
			out = level
			break
		}
	}
	return finish(lsm, o, st, KindDefault, 0, out, in)
}

// pickLevel picks the first table of level after the level's compact
// pointer (wrapping around) that can be compacted now, with the tables
// around it that share a boundary user key.
func pickLevel(lsm LSM, o Options, st *State, level int) *Compaction {
	tables := lsm.Tables(level)
	if len(tables) == 0 {
		return nil
	}
	start := 0
	if p := st.CompactPointer(level); p != nil {
		for start < len(tables) && ikey.Compare(tables[start].Largest, p) <= 0 {
			start++
		}
	}
	for k := range tables {
		i := (start + k) % len(tables)
		in := withBoundaries(tables, i, i+1)
		if st.anyBusy(in) {
			continue
		}
		if c := finish(lsm, o, st, KindDefault, level, level+1, in); c != nil {
			return c
		}
	}
	return nil
}

// pickTombstones picks a table whose entries are mostly deletions, or that
// holds range deletions: in level 0 (whatever the table count) with the
// level-0 tables it overlaps, or in a deeper level, into the level below
// with what it overlaps there. In the last level only deletions every
// reader sees can be dropped, so a table there is picked only when all of
// its entries are known to be older than the oldest snapshot.
func pickTombstones(lsm LSM, o Options, st *State, base int) *Compaction {
	bottom := lsm.NumLevels() - 1
	for i := range lsm.Tables(0) {
		if t := &lsm.Tables(0)[i]; denseWithDeletions(t, o) {
			c := pickL0From(lsm, o, st, base, i)
			if c != nil && c.Kind == KindDefault {
				c.Kind = KindTombstone
			}
			return c
		}
	}
	for level := max(base, 1); level <= bottom; level++ {
		tables := lsm.Tables(level)
		for i := range tables {
			t := &tables[i]
			if !denseWithDeletions(t, o) {
				continue
			}
			if level == bottom && (!t.HasStats || t.LargestSeq > st.OldestSnapshot) {
				continue
			}
			in := withBoundaries(tables, i, i+1)
			if st.anyBusy(in) {
				continue
			}
			out := min(level+1, bottom)
			if c := finish(lsm, o, st, KindTombstone, level, out, in); c != nil {
				return c
			}
		}
	}
	return nil
}

// denseWithDeletions reports whether t is known to be mostly deletions,
// or holds range deletions: one of those may cover any number of keys
// below it, which only a compaction down to them gives back.
func denseWithDeletions(t *Table, o Options) bool {
	return t.RangeDels || t.HasStats && t.Entries > 0 && float64(t.Deletions) >= o.TombstoneDensity*float64(t.Entries)
}

// finish completes a compaction of the tables in of level start into level
// out: the tables of out they overlap, the grandparents, and whether it is
// bottommost or a trivial move. It returns nil if the compaction would
// disturb one under way.
func finish(lsm LSM, o Options, st *State, kind Kind, start, out int, in []Table) *Compaction {
	c := &Compaction{Kind: kind, StartLevel: start, OutputLevel: out}
	c.Inputs[0] = in
	lo, hi := userRange(in)
	if out != start {
		c.Inputs[1] = overlapping(lsm.Tables(out), out, lo, hi)
		if st.anyBusy(c.Inputs[1]) {
			return nil
		}
		if len(c.Inputs[1]) > 0 {
			l1, h1 := userRange(c.Inputs[1])
			lo, hi = minKey(lo, l1), maxKey(hi, h1)
		}
	}
	if st.outputClash(start, out, lo, hi) {
		return nil
	}
	c.Smallest, c.Largest = lo, hi
	n := lsm.NumLevels()
	if out+1 < n {
		c.Grandparents = overlapping(lsm.Tables(out+1), out+1, lo, hi)
	}
	c.Bottommost = true
	for level := out + 1; level < n && c.Bottommost; level++ {
		c.Bottommost = len(overlapping(lsm.Tables(level), level, lo, hi)) == 0
	}
	// A table with range deletions that would land where nothing lies
	// below is rewritten instead: its deletions then go, and what they
	// cover with them.
	if kind == KindDefault && len(in) == 1 && len(c.Inputs[1]) == 0 && start != out &&
		totalSize(c.Grandparents) <= o.MaxGrandparentOverlap && !(c.Bottommost && in[0].RangeDels) {
		c.Kind = KindMove
	}
	return c
}

// overlapping returns the tables of a level that hold user keys in [lo, hi];
// for a level below 0, widened to the neighbours that share a boundary user
// key with them.
func overlapping(tables []Table, level int, lo, hi []byte) []Table {
	i, j := -1, -1
	var out []Table
	for k := range tables {
		if overlapsUser(&tables[k], lo, hi) {
			if level == 0 {
				out = append(out, tables[k])
				continue
			}
			if i < 0 {
				i = k
			}
			j = k + 1
		}
	}
	if level == 0 || i < 0 {
		return out
	}
	return withBoundaries(tables, i, j)
}

// withBoundaries returns tables[i:j] of a level below 0, widened while a
// neighbour shares a user key with the edge table: LevelDB writes one
// user key across two tables, and compacting one without the other would
// leave an older version above a newer one.
func withBoundaries(tables []Table, i, j int) []Table {
	for i > 0 && tables[i-1].sharesBoundary(&tables[i]) {
		i--
	}
	for j < len(tables) && tables[j-1].sharesBoundary(&tables[j]) {
		j++
	}
	return tables[i:j:j]
}

func overlapsUser(t *Table, lo, hi []byte) bool {
	return bytes.Compare(t.largestUser(), lo) >= 0 && bytes.Compare(t.smallestUser(), hi) <= 0
}

// userRange returns the smallest and largest user keys of ts (not empty).
func userRange(ts []Table) (lo, hi []byte) {
	lo, hi = ts[0].smallestUser(), ts[0].largestUser()
	for i := range ts[1:] {
		lo, hi = minKey(lo, ts[i+1].smallestUser()), maxKey(hi, ts[i+1].largestUser())
	}
	return lo, hi
}

func minKey(a, b []byte) []byte {
	if bytes.Compare(a, b) <= 0 {
		return a
	}
	return b
}

func maxKey(a, b []byte) []byte {
	if bytes.Compare(a, b) >= 0 {
		return a
	}
	return b
}

func totalSize(ts []Table) int64 {
	var n int64
	for i := range ts {
		n += ts[i].Size
	}
	return n
}
