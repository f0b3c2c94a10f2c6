package compaction_test

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/shale-db/shale/compaction"
	"github.com/shale-db/shale/internal/ikey"
	"github.com/shale-db/shale/internal/itertest"
)

// tree is an LSM written by hand, one level a line:
//
//	L0: 5 4MiB x..z, 4 4MiB a..c
//	L6: 30 1GiB a..m#5, 31 10MiB m#4..z dels=60/100 seq=50
//
// A table is its number, its size (B, KiB, MiB, GiB or bare bytes) and its
// user-key range. An end of the range may carry a sequence number (m#5; 1
// when absent), so that two tables of a level can share a boundary user
// key as LevelDB writes them. After the range, dels=D/E says that D of its
// E entries are deletions and seq=S that its newest sequence number is S.
// Level 0 lists its tables newest first. The tree has 7 levels; levels
// not named are empty.
type tree [][]compaction.Table

var _ compaction.LSM = tree(nil)

func (t tree) NumLevels() int                      { return len(t) }
func (t tree) Tables(level int) []compaction.Table { return t[level] }

func parseTree(t testing.TB, spec string) tree {
	t.Helper()
	lsm := make(tree, 7)
	for _, line := range strings.Split(spec, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		name, tables, ok := strings.Cut(line, ":")
		level, err := strconv.Atoi(strings.TrimPrefix(name, "L"))
		if !ok || err != nil || !strings.HasPrefix(name, "L") || level >= len(lsm) {
			t.Fatalf("bad level line %q", line)
		}
		for _, ts := range strings.Split(tables, ",") {
			lsm[level] = append(lsm[level], parseTable(t, ts))
		}
	}
	return lsm
}

func parseTable(t testing.TB, spec string) compaction.Table {
	t.Helper()
	f := strings.Fields(spec)
	if len(f) < 3 {
		t.Fatalf("table %q: want number, size, range", spec)
	}
	num, err := strconv.ParseUint(f[0], 10, 64)
	if err != nil {
		t.Fatalf("table %q: %v", spec, err)
	}
	tb := compaction.Table{Num: num, Size: parseSize(t, f[1])}
	tb.Smallest, tb.Largest = parseRange(t, f[2])
	for _, extra := range f[3:] {
		var err error
		switch k, v, _ := strings.Cut(extra, "="); k {
		case "dels":
			_, err = fmt.Sscanf(v, "%d/%d", &tb.Deletions, &tb.Entries)
			tb.HasStats = true
		case "seq":
			tb.LargestSeq, err = strconv.ParseUint(v, 10, 64)
		default:
			err = fmt.Errorf("unknown field")
		}
		if err != nil {
			t.Fatalf("table %q, %q: %v", spec, extra, err)
		}
	}
	return tb
}

func parseSize(t testing.TB, s string) int64 {
	t.Helper()
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"B", 1}} {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSuffix(s, u.suffix), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("size %q: %v", s, err)
	}
	return n * mult
}

// parseRange reads "a..m" or "a#9..m#5" as two internal keys.
func parseRange(t testing.TB, s string) (lo, hi []byte) {
	t.Helper()
	a, b, ok := strings.Cut(s, "..")
	if !ok {
		t.Fatalf("range %q: want lo..hi", s)
	}
	return parseKey(t, a), parseKey(t, b)
}

// parseKey reads "m" (sequence number 1) or "m#5" as an internal key of
// kind PUT.
func parseKey(t testing.TB, s string) []byte {
	t.Helper()
	uk, seq := s, uint64(1)
	if i := strings.IndexByte(s, '#'); i >= 0 {
		var err error
		if seq, err = strconv.ParseUint(s[i+1:], 10, 64); err != nil {
			t.Fatalf("key %q: %v", s, err)
		}
		uk = s[:i]
	}
	return ikey.Make([]byte(uk), seq, ikey.KindSet)
}

// parseRunning reads a compaction under way, "L4->L5 10 20 a..m": its
// levels, its tables and the user-key range it writes.
func parseRunning(t testing.TB, spec string) compaction.Running {
	t.Helper()
	f := strings.Fields(spec)
	var r compaction.Running
	if _, err := fmt.Sscanf(f[0], "L%d->L%d", &r.StartLevel, &r.OutputLevel); err != nil || len(f) < 2 {
		t.Fatalf("running %q: want L<start>->L<output> tables... lo..hi", spec)
	}
	for _, n := range f[1 : len(f)-1] {
		num, err := strconv.ParseUint(n, 10, 64)
		if err != nil {
			t.Fatalf("running %q: %v", spec, err)
		}
		r.Tables = append(r.Tables, num)
	}
	lo, hi := parseRange(t, f[len(f)-1])
	r.Smallest, r.Largest = ikey.UserKey(lo), ikey.UserKey(hi)
	return r
}

// describe prints a picked compaction as the tests spell it:
// "default L4->L5 in=[1 2] out=[10] gp=[20] a..q score=1.17", followed by
// " bottommost" when it is; a level above the base level scores "high".
func describe(c *compaction.Compaction) string {
	if c == nil {
		return "nil"
	}
	nums := func(ts []compaction.Table) []uint64 {
		out := []uint64{}
		for _, t := range ts {
			out = append(out, t.Num)
		}
		return out
	}
	score := fmt.Sprintf("%.2f", c.Score)
	if c.Score >= 1000 {
		score = "high" // a level above the base level
	}
	s := fmt.Sprintf("%s L%d->L%d in=%v out=%v gp=%v %s..%s score=%s", c.Kind,
		c.StartLevel, c.OutputLevel, nums(c.Inputs[0]), nums(c.Inputs[1]), nums(c.Grandparents),
		c.Smallest, c.Largest, score)
	if c.Bottommost {
		s += " bottommost"
	}
	return s
}

// Targets with the default options: a 4 MiB write buffer (the base
// level's smallest target) and a multiplier of 10.
func TestMeasure(t *testing.T) {
	const high = math.MaxFloat64 // stands for "above any ratio of bytes to target"
	for _, tc := range []struct {
		name        string
		tree        string
		wantBase    int
		wantTargets [7]int64
		wantScores  map[int]float64 // levels not named score 0
	}{{
		// The package doc's diagram: 1 GiB in L6; L5 targets a tenth of
		// it, L4 a hundredth (10.24 MiB, still at least 4 MiB); L3 would
		// get 1.024 MiB, under the write buffer, so L4 is the base level.
		name: "1 GiB",
		tree: `L0: 2 4MiB a..z, 1 4MiB a..z
		       L6: 10 1GiB a..z`,
		wantBase:    4,
		wantTargets: [7]int64{4: 10737418, 5: 107374182, 6: 1 << 30},
		wantScores:  map[int]float64{0: 2.0 / 4},
	}, {
		name: "scores are bytes over target",
		tree: `L0: 6 1MiB a..b, 5 1MiB a..b, 4 1MiB a..b, 3 1MiB a..b, 2 1MiB a..b, 1 1MiB a..b
		       L4: 10 20MiB a..z
		       L5: 20 50MiB a..z
		       L6: 30 1GiB a..z`,
		wantBase:    4,
		wantTargets: [7]int64{4: 10737418, 5: 107374182, 6: 1 << 30},
		wantScores:  map[int]float64{0: 6.0 / 4, 4: float64(20<<20) / 10737418, 5: float64(50<<20) / 107374182},
	}, {
		// 40 MiB / 10 is exactly 4 MiB: "at least" the write buffer.
		name:        "base level target equal to the write buffer",
		tree:        `L6: 10 40MiB a..z`,
		wantBase:    5,
		wantTargets: [7]int64{5: 4 << 20, 6: 40 << 20},
	}, {
		name:        "one byte less: level 0 compacts into the last level",
		tree:        `L6: 10 41943039 a..z`,
		wantBase:    6,
		wantTargets: [7]int64{6: 41943039},
	}, {
		name:     "empty tree",
		tree:     ``,
		wantBase: 6,
	}, {
		name: "tiny tree",
		tree: `L0: 4 100KiB a..b, 3 100KiB a..b, 2 100KiB a..b, 1 100KiB a..b
		       L6: 10 1MiB a..z`,
		wantBase:    6,
		wantTargets: [7]int64{6: 1 << 20},
		wantScores:  map[int]float64{0: 1},
	}, {
		// goleveldb's layout: the data is in L1 and L2. The largest
		// level (50 MiB) sizes the targets from L6 up, so L5 (5 MiB) is
		// the base level, and L1 and L2, above it, must drain first.
		name: "data in L1 and L2",
		tree: `L1: 1 5MiB a..m
		       L2: 2 50MiB a..z`,
		wantBase:    5,
		wantTargets: [7]int64{5: 5 << 20, 6: 50 << 20},
		wantScores:  map[int]float64{1: high, 2: high},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			lsm := parseTree(t, tc.tree)
			s := compaction.Measure(lsm, compaction.Options{})
			if s.BaseLevel != tc.wantBase {
				t.Errorf("base level %d, want %d", s.BaseLevel, tc.wantBase)
			}
			for level := range 7 {
				var size int64
				for _, tb := range lsm[level] {
					size += tb.Size
				}
				if s.Sizes[level] != size {
					t.Errorf("L%d size %d, want %d", level, s.Sizes[level], size)
				}
				if s.Targets[level] != tc.wantTargets[level] {
					t.Errorf("L%d target %d, want %d", level, s.Targets[level], tc.wantTargets[level])
				}
				got, want := s.Scores[level], tc.wantScores[level]
				if want == high && got < 1000 || want != high && math.Abs(got-want) > 1e-9 {
					t.Errorf("L%d score %g, want %g", level, got, want)
				}
			}
		})
	}
}

type pickCase struct {
	name     string
	tree     string
	running  []string       // parseRunning specs
	pointers map[int]string // level: compact pointer (parseKey)
	snapshot uint64         // State.OldestSnapshot
	want     string         // describe(Pick(...))
}

func testPick(t *testing.T, cases []pickCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := compaction.State{OldestSnapshot: tc.snapshot}
			st.CompactPointer = func(level int) []byte {
				if p, ok := tc.pointers[level]; ok {
					return parseKey(t, p)
				}
				return nil
			}
			for _, r := range tc.running {
				st.Running = append(st.Running, parseRunning(t, r))
			}
			got := describe(compaction.Pick(parseTree(t, tc.tree), compaction.Options{}, st))
			if got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

// The trees below put 1 GiB in L6, so (see TestMeasure) L4 is the base
// level with a target of 10.24 MiB, L5's is 102.4 MiB, and a 12 MiB L4
// scores 1.17.

func TestPickLevel0(t *testing.T) {
	testPick(t, []pickCase{{
		name: "nothing due",
		tree: `L0: 3 4MiB a..b, 2 4MiB a..b, 1 4MiB a..b
		       L4: 10 10MiB a..z
		       L6: 30 1GiB a..z`,
		want: "nil",
	}, {
		// The oldest table (1, a..e) overlaps 3 (d..g), which overlaps
		// 4 (f..h): all three go, with the L4 tables under a..h. 2 and 5
		// share no key with them and stay.
		name: "oldest table and its overlaps, transitively",
		tree: `L0: 5 4MiB x..z, 4 4MiB f..h, 3 4MiB d..g, 2 4MiB m..p, 1 4MiB a..e
		       L4: 20 1MiB a..b, 21 1MiB c..c, 22 1MiB q..r
		       L6: 30 1GiB a..z`,
		want: "default L0->L4 in=[4 3 1] out=[20 21] gp=[] a..h score=1.25",
	}, {
		name: "one table overlapping nothing below moves to the base level",
		tree: `L0: 4 4MiB a..c, 3 4MiB d..f, 2 4MiB g..i, 1 4MiB j..l
		       L5: 20 50MiB a..i
		       L6: 30 1GiB a..z`,
		want: "move L0->L4 in=[1] out=[] gp=[] j..l score=1.00",
	}, {
		name: "tiny tree: level 0 compacts into the last level",
		tree: `L0: 4 1MiB a..b, 3 1MiB a..b, 2 1MiB c..d, 1 1MiB a..c
		       L6: 30 1MiB c..z`,
		want: "default L0->L6 in=[4 3 2 1] out=[30] gp=[] a..z score=1.00 bottommost",
	}, {
		name: "only one level-0 compaction at a time",
		tree: `L0: 5 4MiB x..z, 4 4MiB x..z, 3 4MiB x..z, 2 4MiB a..b, 1 4MiB a..b
		          L6: 30 1GiB a..z`,
		running: []string{"L0->L4 2 1 a..b"},
		want:    "nil",
	}, {
		// Table 10's keys in L1 are older than level 0's: the outputs
		// may not go below them into the base level (L5), so level 0
		// waits for the compaction that holds table 10.
		name: "never below a level that holds the same keys",
		tree: `L0: 4 4MiB a..z, 3 4MiB a..z, 2 4MiB a..z, 1 4MiB a..z
		       L1: 10 5MiB a..m
		       L2: 20 50MiB a..z`,
		running: []string{"L1->L2 10 20 a..z"},
		want:    "nil",
	}, {
		name: "into the level above the base that holds the same keys",
		tree: `L0: 4 4MiB a..z, 3 4MiB a..z, 2 4MiB a..z, 1 4MiB a..z
		       L1: 10 5MiB a..m
		       L2: 20 50MiB a..z`,
		running: []string{"L2->L3 20 a..z"},
		want:    "default L0->L1 in=[4 3 2 1] out=[10] gp=[20] a..z score=1.00",
	}, {
		name: "past levels above the base that hold none of its keys",
		tree: `L0: 4 4MiB n..z, 3 4MiB n..z, 2 4MiB n..z, 1 4MiB n..z
		       L1: 10 5MiB a..c
		       L2: 20 50MiB a..m`,
		running: []string{"L1->L2 10 20 a..m"},
		want:    "default L0->L5 in=[4 3 2 1] out=[] gp=[] n..z score=1.00 bottommost",
	}})
}

func TestPickLevels(t *testing.T) {
	roundRobin := `L4: 1 5MiB a..c, 2 5MiB d..f, 3 5MiB g..i
	               L5: 10 5MiB a..b, 11 5MiB e..e, 12 5MiB h..z
	               L6: 30 1GiB a..z`
	boundary := `L4: 1 6MiB a..m#5, 2 6MiB m#4..q, 3 6MiB r..z
	             L6: 30 1GiB a..z`
	testPick(t, []pickCase{{
		// goleveldb's layout (see TestMeasure): L1 and L2 lie above the
		// base level (L5) and drain first, one level at a time.
		name: "above the base level, before level 0",
		tree: `L0: 4 4MiB a..z, 3 4MiB a..z, 2 4MiB a..z, 1 4MiB a..z
		       L1: 10 5MiB a..m
		       L2: 20 50MiB a..z`,
		want: "default L1->L2 in=[10] out=[20] gp=[] a..z score=high bottommost",
	}, {
		name: "above the base level, nothing under it: a move",
		tree: `L1: 10 5MiB a..c
		       L2: 20 50MiB d..z`,
		want: "move L1->L2 in=[10] out=[] gp=[] a..c score=high bottommost",
	}, {
		name: "no compact pointer: the first table",
		tree: roundRobin,
		want: "default L4->L5 in=[1] out=[10] gp=[30] a..c score=1.46",
	}, {
		name:     "the first table after the compact pointer",
		tree:     roundRobin,
		pointers: map[int]string{4: "c"},
		want:     "default L4->L5 in=[2] out=[11] gp=[30] d..f score=1.46",
	}, {
		name:     "a pointer just past a table's largest key",
		tree:     roundRobin,
		pointers: map[int]string{4: "f#0"}, // after f#1, 2's largest key
		want:     "default L4->L5 in=[3] out=[12] gp=[30] g..z score=1.46",
	}, {
		name:     "wrap-around after the last table",
		tree:     roundRobin,
		pointers: map[int]string{4: "i"},
		want:     "default L4->L5 in=[1] out=[10] gp=[30] a..c score=1.46",
	}, {
		name: "a boundary user key shared with the next table",
		tree: boundary,
		want: "default L4->L5 in=[1 2] out=[] gp=[30] a..q score=1.76",
	}, {
		name:     "a boundary user key shared with the previous table",
		tree:     boundary,
		pointers: map[int]string{4: "m#5"},
		want:     "default L4->L5 in=[1 2] out=[] gp=[30] a..q score=1.76",
	}, {
		name: "a boundary user key shared in the output level",
		tree: `L4: 1 12MiB c..f
		       L5: 10 5MiB a..b, 11 5MiB c..g#9, 12 5MiB g#8..k, 13 5MiB l..z
		       L6: 30 1GiB a..z`,
		want: "default L4->L5 in=[1] out=[11 12] gp=[30] c..k score=1.17",
	}, {
		name: "trivial move: grandparents at the limit (20 MiB)",
		tree: `L4: 1 12MiB c..d
		       L6: 20 10MiB a..c, 21 10MiB d..e, 22 1004MiB f..z`,
		want: "move L4->L5 in=[1] out=[] gp=[20 21] c..d score=1.17",
	}, {
		name: "no move: grandparents over the limit",
		tree: `L4: 1 12MiB c..d
		       L6: 20 10MiB a..c, 21 11MiB d..e, 22 1003MiB f..z`,
		want: "default L4->L5 in=[1] out=[] gp=[20 21] c..d score=1.17",
	}, {
		name: "move with nothing below: bottommost",
		tree: `L4: 1 12MiB a..c
		       L6: 30 1GiB m..z`,
		want: "move L4->L5 in=[1] out=[] gp=[] a..c score=1.17 bottommost",
	}})
}

// L5 (200 MiB over 102.4) scores 1.95, L0 (5 tables) 1.25, L4 1.17.
const threeDue = `
	L0: 5 4MiB a..b, 4 4MiB a..b, 3 4MiB a..b, 2 4MiB a..b, 1 4MiB a..b
	L4: 10 12MiB c..d
	L5: 20 100MiB a..b, 21 100MiB n..z
	L6: 30 512MiB a..m, 31 512MiB n..z`

func TestPickConcurrent(t *testing.T) {
	testPick(t, []pickCase{{
		name: "highest score first",
		tree: threeDue,
		want: "default L5->L6 in=[20] out=[30] gp=[] a..m score=1.95 bottommost",
	}, {
		name:    "a busy table is skipped for the next",
		tree:    threeDue,
		running: []string{"L5->L6 20 30 a..m"},
		want:    "default L5->L6 in=[21] out=[31] gp=[] n..z score=1.95 bottommost",
	}, {
		name:    "a busy output-level table is skipped too",
		tree:    threeDue,
		running: []string{"L6->L6 30 a..m"},
		want:    "default L5->L6 in=[21] out=[31] gp=[] n..z score=1.95 bottommost",
	}, {
		name:    "level by level while tables are busy",
		tree:    threeDue,
		running: []string{"L5->L6 20 30 a..m", "L5->L6 21 31 n..z"},
		want:    "default L0->L4 in=[5 4 3 2 1] out=[] gp=[20] a..b score=1.25",
	}, {
		name:    "then the next level",
		tree:    threeDue,
		running: []string{"L5->L6 20 30 a..m", "L5->L6 21 31 n..z", "L0->L4 5 4 3 2 1 a..b"},
		want:    "default L4->L5 in=[10] out=[] gp=[30] c..d score=1.17",
	}, {
		// A compaction under way (a manual one, say) writes L6 over
		// a..z: table 21 would write there too.
		name:    "an output range under way",
		tree:    threeDue,
		running: []string{"L5->L6 20 a..z"},
		want:    "default L0->L4 in=[5 4 3 2 1] out=[] gp=[20] a..b score=1.25",
	}, {
		name:    "an output range under way in every due level",
		tree:    threeDue,
		running: []string{"L5->L6 20 a..z", "L0->L4 1 a..b", "L4->L5 a..z"},
		want:    "nil",
	}})
}

func TestPickTombstones(t *testing.T) {
	testPick(t, []pickCase{{
		name: "a table mostly deletions, no level due",
		tree: `L4: 10 1MiB a..c, 11 1MiB d..f dels=60/100
		       L6: 30 1GiB a..z`,
		want: "tombstone L4->L5 in=[11] out=[] gp=[30] d..f score=0.00",
	}, {
		name: "under half deletions",
		tree: `L4: 10 1MiB a..c, 11 1MiB d..f dels=49/100
		       L6: 30 1GiB a..z`,
		want: "nil",
	}, {
		name: "a level due comes first",
		tree: `L4: 10 11MiB a..c, 11 1MiB d..f dels=60/100
		       L6: 30 1GiB a..z`,
		want: "default L4->L5 in=[10] out=[] gp=[30] a..c score=1.17",
	}, {
		// In the last level a deletion goes only once every reader sees
		// it: not while a snapshot at 40 may read entries up to seq 50.
		name:     "last level, entries newer than the oldest snapshot",
		tree:     `L6: 30 1000MiB a..m, 31 24MiB n..z dels=90/100 seq=50`,
		snapshot: 40,
		want:     "nil",
	}, {
		name:     "last level, every entry visible to every reader",
		tree:     `L6: 30 1000MiB a..m, 31 24MiB n..z dels=90/100 seq=50`,
		snapshot: 50,
		want:     "tombstone L6->L6 in=[31] out=[] gp=[] n..z score=0.00 bottommost",
	}, {
		// Level 0 below its trigger: a table of deletions (a truncated
		// log, flushed when writes went idle) goes down with the level-0
		// tables it overlaps, to meet what it deletes; here it overlaps
		// nothing in the base level, so it moves.
		name: "level 0 below its trigger, a table mostly deletions",
		tree: `L0: 3 1MiB a..c dels=80/100, 2 1MiB x..z
		       L6: 30 1GiB a..z`,
		want: "move L0->L4 in=[3] out=[] gp=[] a..c score=0.00",
	}, {
		name: "level 0 below its trigger, deletions over the base level",
		tree: `L0: 3 1MiB a..c dels=80/100, 2 1MiB b..d, 1 1MiB x..z
		       L4: 20 5MiB a..m
		       L6: 30 1GiB a..z`,
		want: "tombstone L0->L4 in=[3 2] out=[20] gp=[] a..m score=0.00",
	}})
}

// runTables runs specs through Run with o and prints the output tables,
// "|" between them.
func runTables(t *testing.T, o compaction.RunOptions, specs ...string) string {
	t.Helper()
	out := new(memOutputs)
	if err := compaction.Run(itertest.FromStrings(specs...), &compaction.Filter{}, o, out); err != nil {
		t.Fatal(err)
	}
	var s []string
	for _, tb := range out.tables {
		s = append(s, itertest.Format(tb))
	}
	return strings.Join(s, " | ")
}

// At a target of 1 byte every user key starts a table, and no user key's
// versions are split.
func TestRunTablePerUserKey(t *testing.T) {
	got := runTables(t, compaction.RunOptions{TargetSize: 1},
		"a#3,PUT:x", "a#2,DEL", "b#5,PUT:y", "c#4,PUT:z", "c#1,PUT:w")
	want := "a#3,PUT:x a#2,DEL: | b#5,PUT:y | c#4,PUT:z c#1,PUT:w"
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

// Grandparents of 10 bytes each at b..c, e..f, h..i and k..l, limit 15.
// An output counts a grandparent once one of its keys passes it: after a
// and d it spans b..c (10); g would add e..f (20 > 15), so a new table
// starts at g and counts afresh; j adds h..i (10); m would add k..l (20),
// so m starts a third. A user key's versions stay together, and the
// target size (1 MiB) never splits.
func TestRunSplitsBeforeGrandparentOverlap(t *testing.T) {
	gp := parseTree(t, "L6: 1 10B b..c, 2 10B e..f, 3 10B h..i, 4 10B k..l")[6]
	o := compaction.RunOptions{TargetSize: 1 << 20, Grandparents: gp, MaxGrandparentOverlap: 15}
	got := runTables(t, o, "a#1,PUT:", "d#1,PUT:", "g#9,PUT:", "g#8,PUT:", "j#1,PUT:", "m#1,PUT:", "m#0,DEL")
	want := "a#1,PUT: d#1,PUT: | g#9,PUT: g#8,PUT: j#1,PUT: | m#1,PUT: m#0,DEL:"
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	// At a limit of 20 the first split comes before j, which would make
	// the output span b..c, e..f and h..i: 30 > 20.
	o.MaxGrandparentOverlap = 20
	got = runTables(t, o, "a#1,PUT:", "d#1,PUT:", "g#1,PUT:", "j#1,PUT:", "m#1,PUT:")
	want = "a#1,PUT: d#1,PUT: g#1,PUT: | j#1,PUT: m#1,PUT:"
	if got != want {
		t.Fatalf("limit 20: got  %s\nwant %s", got, want)
	}
}

// Stop is polled every 4096 entries: twice in 9000, and the run ends with
// the error it returns, closing its input and finishing no table.
func TestRunStop(t *testing.T) {
	var specs []string
	for i := range 9000 {
		specs = append(specs, fmt.Sprintf("k%05d#1,PUT:v", i))
	}
	errClosing := errors.New("closing")
	for _, failAt := range []int{0, 1, 2} { // 0: never
		t.Run(fmt.Sprint(failAt), func(t *testing.T) {
			calls := 0
			o := compaction.RunOptions{TargetSize: 1 << 30, Stop: func() error {
				if calls++; calls == failAt {
					return errClosing
				}
				return nil
			}}
			in, out := itertest.FromStrings(specs...), new(memOutputs)
			err := compaction.Run(in, &compaction.Filter{}, o, out)
			wantCalls, wantTables := 2, 1
			if failAt > 0 {
				wantCalls, wantTables = failAt, 0
				if !errors.Is(err, errClosing) {
					t.Fatalf("Run = %v, want %v", err, errClosing)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if calls != wantCalls || len(out.tables) != wantTables || in.Closes() != 1 {
				t.Fatalf("Stop called %d times (want %d), %d tables finished (want %d), input closed %d times",
					calls, wantCalls, len(out.tables), wantTables, in.Closes())
			}
			if failAt == 0 && len(out.tables[0]) != len(specs) {
				t.Fatalf("%d entries out of %d", len(out.tables[0]), len(specs))
			}
		})
	}
}
