package manifest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/shale-db/shale/internal/ikey"
)

func nums(files []*FileMeta) string {
	var s []string
	for _, f := range files {
		s = append(s, fmt.Sprint(f.Num))
	}
	return strings.Join(s, ",")
}

func bs(s string) []byte {
	if s == "" {
		return nil
	}
	return []byte(s)
}

func testVersion() *Version {
	v := new(Version)
	v.Levels[0] = []*FileMeta{
		meta(9, 10, "c#20,PUT", "f#21,PUT"),
		meta(8, 10, "a#10,PUT", "d#12,DEL"),
		meta(7, 10, "m#5,PUT", "m#1,PUT"),
	}
	// Level 1: user key "g" spans tables 3 and 4, as LevelDB can write it.
	v.Levels[1] = []*FileMeta{
		meta(2, 100, "a#1,PUT", "c#1,PUT"),
		meta(3, 100, "e#3,PUT", "g#9,PUT"),
		meta(4, 100, "g#5,DEL", "k#2,PUT"),
		meta(5, 100, "p#2,PUT", "t#2,PUT"),
	}
	return v
}

func TestVersionCheckAcceptsTestVersion(t *testing.T) {
	if err := testVersion().Check(); err != nil {
		t.Fatal(err)
	}
}

func TestAppendL0Candidates(t *testing.T) {
	v := testVersion()
	for _, c := range []struct{ key, want string }{
		{"a", "8"}, {"c", "9,8"}, {"d", "9,8"}, {"e", "9"}, {"f", "9"},
		{"g", ""}, {"m", "7"}, {"", ""},
	} {
		if got := nums(v.AppendL0Candidates(nil, []byte(c.key))); got != c.want {
			t.Errorf("L0 candidates for %q = %s, want %s", c.key, got, c.want)
		}
	}
}

func TestFindFile(t *testing.T) {
	v := testVersion()
	for _, c := range []struct {
		key  string
		want uint64 // 0: nil
	}{
		{"a#5,PUT", 2}, {"b#1,PUT", 2}, {"c#0,PUT", 0}, // c#0 sorts after c#1
		{"d#5,PUT", 0}, // between tables
		{"e#100,PUT", 3},
		{"g#100,PUT", 3}, {"g#9,PUT", 3}, // newest "g" entries live in table 3
		{"g#8,PUT", 4}, {"g#5,PUT", 4}, {"g#1,PUT", 4}, // older ones in table 4
		{"k#9,PUT", 4}, {"k#1,PUT", 0}, {"n#1,PUT", 0},
		{"t#2,PUT", 5}, {"u#9,PUT", 0}, {"#9,PUT", 0}, // "" is before table 2
	} {
		f := v.FindFile(1, ikey.ParseString(c.key))
		var got uint64
		if f != nil {
			got = f.Num
		}
		if got != c.want {
			t.Errorf("FindFile(1, %s) = %d, want %d", c.key, got, c.want)
		}
	}
	if f := v.FindFile(2, ikey.SeekKey([]byte("a"), 1)); f != nil {
		t.Errorf("FindFile on an empty level = %v", f)
	}
}

func TestOverlaps(t *testing.T) {
	v := testVersion()
	for _, c := range []struct {
		level      int
		start, end string // "" is open
		want       string
	}{
		{1, "", "", "2,3,4,5"},
		{1, "c", "e", "2"}, // end is exclusive
		{1, "c", "e\x00", "2,3"},
		{1, "d", "e", ""},
		{1, "g", "h", "3,4"}, // "g" spans two tables
		{1, "k\x00", "p", ""},
		{1, "l", "", "5"},
		{1, "", "b", "2"},
		{1, "u", "", ""},
		{0, "b", "c", "8"},
		{0, "b", "c\x00", "9,8"},
		{0, "m", "", "7"},
		{0, "", "", "9,8,7"},
		{2, "", "", ""},
	} {
		got := nums(v.Overlaps(c.level, bs(c.start), bs(c.end)))
		if got != c.want {
			t.Errorf("Overlaps(%d, %q, %q) = %s, want %s", c.level, c.start, c.end, got, c.want)
		}
	}
}

func TestVersionCheckRejects(t *testing.T) {
	cases := map[string]func(v *Version){
		"L1 overlap": func(v *Version) {
			v.Levels[1][1] = meta(3, 1, "b#3,PUT", "g#9,PUT")
		},
		"L1 shared boundary entry": func(v *Version) {
			v.Levels[1][2] = meta(4, 1, "g#9,PUT", "k#2,PUT")
		},
		"L1 out of order": func(v *Version) {
			v.Levels[1][0], v.Levels[1][3] = v.Levels[1][3], v.Levels[1][0]
		},
		"L0 oldest first": func(v *Version) {
			v.Levels[0][0], v.Levels[0][1] = v.Levels[0][1], v.Levels[0][0]
		},
		"duplicate number": func(v *Version) {
			v.Levels[3] = []*FileMeta{meta(8, 1, "a#1,PUT", "b#1,PUT")}
		},
		"smallest after largest": func(v *Version) {
			v.Levels[2] = []*FileMeta{meta(20, 1, "b#1,PUT", "a#1,PUT")}
		},
		"short key": func(v *Version) {
			v.Levels[2] = []*FileMeta{{Num: 20, Smallest: []byte("a"), Largest: ikey.ParseString("b#1,PUT")}}
		},
		"negative size": func(v *Version) {
			v.Levels[2] = []*FileMeta{meta(20, -5, "a#1,PUT", "b#1,PUT")}
		},
	}
	for name, spoil := range cases {
		v := testVersion()
		spoil(v)
		if err := v.Check(); err == nil {
			t.Errorf("%s: Check accepted the version", name)
		}
	}
}

func TestLevelSizeAndString(t *testing.T) {
	v := testVersion()
	if v.LevelSize(1) != 400 || v.NumFiles(0) != 3 || v.LevelSize(6) != 0 {
		t.Fatalf("LevelSize(1)=%d NumFiles(0)=%d", v.LevelSize(1), v.NumFiles(0))
	}
	s := v.String()
	if !strings.HasPrefix(s, "L0: 3 files, 30 bytes\n  000009 10B [c#20,PUT .. f#21,PUT]\n") ||
		!strings.Contains(s, "L1: 4 files, 400 bytes\n") {
		t.Fatalf("String:\n%s", s)
	}
}

func TestBuilder(t *testing.T) {
	base := testVersion()
	e := new(VersionEdit)
	e.DeleteFile(0, 8)
	e.DeleteFile(1, 3)                                // moved down below
	e.AddFile(2, base.Levels[1][1])                   // the trivial move of table 3
	e.AddFile(0, meta(10, 1, "a#30,PUT", "z#31,PUT")) // a flush
	e.DeleteFile(4, 77)                               // not there: ignored, as in LevelDB
	b := newBuilder(base)
	b.apply(e)
	v, err := b.finish()
	if err != nil {
		t.Fatal(err)
	}
	if got := nums(v.Levels[0]); got != "10,9,7" {
		t.Errorf("L0 = %s", got)
	}
	if got := nums(v.Levels[1]); got != "2,4,5" {
		t.Errorf("L1 = %s", got)
	}
	if got := nums(v.Levels[2]); got != "3" {
		t.Errorf("L2 = %s", got)
	}
	if nums(base.Levels[1]) != "2,3,4,5" {
		t.Error("builder modified its base")
	}
	// Untouched levels are shared, not copied.
	v2, _ := newBuilder(v).finish()
	if &v2.Levels[1][0] != &v.Levels[1][0] {
		t.Error("unchanged level was copied")
	}
}

func TestBuilderAcrossEdits(t *testing.T) {
	b := newBuilder(new(Version))
	add := func(level int, m *FileMeta) { e := new(VersionEdit); e.AddFile(level, m); b.apply(e) }
	del := func(level int, n uint64) { e := new(VersionEdit); e.DeleteFile(level, n); b.apply(e) }
	add(0, meta(5, 1, "a#1,PUT", "b#1,PUT"))
	add(0, meta(6, 1, "a#2,PUT", "b#2,PUT"))
	del(0, 5)
	add(1, meta(5, 1, "a#1,PUT", "b#1,PUT")) // the same number, now at level 1
	del(1, 5)
	add(1, meta(5, 1, "a#1,PUT", "b#1,PUT")) // and back again
	v, err := b.finish()
	if err != nil {
		t.Fatal(err)
	}
	if nums(v.Levels[0]) != "6" || nums(v.Levels[1]) != "5" {
		t.Fatalf("got L0 %s L1 %s", nums(v.Levels[0]), nums(v.Levels[1]))
	}
}

func TestBuilderRefusesOverlap(t *testing.T) {
	e := new(VersionEdit)
	e.AddFile(1, meta(30, 1, "b#1,PUT", "d#1,PUT")) // overlaps table 2 [a, c]
	b := newBuilder(testVersion())
	b.apply(e)
	if _, err := b.finish(); err == nil {
		t.Fatal("overlapping level-1 table accepted")
	}
}
