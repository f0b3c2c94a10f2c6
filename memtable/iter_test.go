package memtable

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/shale-db/shale/internal/ikey"
)

// scan runs ops on a fresh iterator over m and prints what each returned:
// the key, or "." when the op returned false.
func scan(m *Memtable, ops string) string {
	it := m.NewIter()
	defer it.Close()
	var out []string
	for _, op := range strings.Fields(ops) {
		var ok bool
		switch {
		case op == "first":
			ok = it.First()
		case op == "last":
			ok = it.Last()
		case op == "next":
			ok = it.Next()
		case op == "prev":
			ok = it.Prev()
		case strings.HasPrefix(op, "ge:"):
			ok = it.SeekGE(seekArg(op[3:]))
		case strings.HasPrefix(op, "lt:"):
			ok = it.SeekLT(seekArg(op[3:]))
		}
		if !ok {
			out = append(out, ".")
			if it.Key() != nil || it.Value() != nil {
				return "Key or Value not nil after false"
			}
			continue
		}
		out = append(out, ikey.String(it.Key()))
	}
	return strings.Join(out, " ")
}

// seekArg is an internal key "a#5,PUT" or, without '#', a bare user key.
func seekArg(s string) []byte {
	if strings.Contains(s, "#") {
		return ikey.ParseString(s)
	}
	return []byte(s)
}

func TestIterEdgeCases(t *testing.T) {
	m := build(t, "a#3,PUT", "a#7,DEL", "a#9,PUT", "b#5,PUT", "c#2,DEL")
	tests := []struct{ ops, want string }{
		{"first next next next next next next", "a#9,PUT a#7,DEL a#3,PUT b#5,PUT c#2,DEL . ."},
		{"last prev prev prev prev prev prev", "c#2,DEL b#5,PUT a#3,PUT a#7,DEL a#9,PUT . ."},
		{"first next prev prev next next", "a#9,PUT a#7,DEL a#9,PUT . a#9,PUT a#7,DEL"},
		{"last next prev", "c#2,DEL . c#2,DEL"},  // Prev after the end: last
		{"first prev next", "a#9,PUT . a#9,PUT"}, // Next before the start: first
		{"next prev", ". ."},                     // unpositioned
		{"ge:a#8,PUT ge:a#7,PUT ge:a#7,DEL ge:a#6,PUT", "a#7,DEL a#7,DEL a#7,DEL a#3,PUT"},
		{"ge:a#2,PUT ge:a ge:b ge:bb ge:d ge:", "b#5,PUT a#9,PUT b#5,PUT c#2,DEL . a#9,PUT"},
		{"ge:a#100,PUT prev", "a#9,PUT ."},
		{"lt:a#9,PUT lt:a#8,PUT lt:a#7,DEL lt:a#3,PUT", ". a#9,PUT a#9,PUT a#7,DEL"},
		{"lt:b lt:c#2,DEL lt:c#1,DEL lt:zz lt: lt:a", "a#3,PUT b#5,PUT c#2,DEL c#2,DEL . ."},
		{"lt:b next next", "a#3,PUT b#5,PUT c#2,DEL"},
		{"ge:b prev prev", "b#5,PUT a#3,PUT a#7,DEL"},
	}
	for _, tc := range tests {
		if got := scan(m, tc.ops); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.ops, got, tc.want)
		}
	}
	empty := New()
	if got := scan(empty, "first last ge:a lt:a next prev"); got != ". . . . . ." {
		t.Errorf("empty memtable: %s", got)
	}
}

func TestIterClose(t *testing.T) {
	m := build(t, "a#1,PUT")
	it := m.NewIter()
	if !it.First() {
		t.Fatal("First")
	}
	if it.Close() != nil || it.Close() != nil {
		t.Fatal("Close failed")
	}
	if it.First() || it.Next() || it.Last() || it.Key() != nil || it.Err() != nil {
		t.Fatal("iterator usable after Close")
	}
}

// model is a sorted list of internal keys, with the iterator's position.
type model struct {
	keys [][]byte
	pos  int // index of the current key; -1 before start, len after end
	// unpositioned: no op has positioned the iterator yet
	unpositioned bool
}

func (md *model) at() bool { return !md.unpositioned && md.pos >= 0 && md.pos < len(md.keys) }

func (md *model) seekGE(k []byte) {
	md.pos, _ = slices.BinarySearchFunc(md.keys, k, ikey.Compare)
}

func (md *model) seekLT(k []byte) {
	i, _ := slices.BinarySearchFunc(md.keys, k, ikey.Compare)
	md.pos = i - 1
}

func randomKey(rng *rand.Rand) []byte {
	return []byte(fmt.Sprintf("k%03d", rng.IntN(150)))
}

// TestIterAgainstModel runs random op sequences, both directions, against
// a sorted model. Runs are long enough to cross chunk boundaries both ways.
func TestIterAgainstModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	m := New()
	md := &model{unpositioned: true}
	for seq := uint64(1); seq <= 2000; seq++ {
		k, kind := randomKey(rng), ikey.Kind(rng.IntN(2))
		m.Add(seq, kind, k, []byte(fmt.Sprint(seq)))
		md.keys = append(md.keys, ikey.Make(k, seq, kind))
	}
	slices.SortFunc(md.keys, ikey.Compare)

	it := m.NewIter()
	defer it.Close()
	check := func(step int, what string, ok bool) {
		t.Helper()
		if ok != md.at() {
			t.Fatalf("step %d (%s): ok = %v, model %v (pos %d)", step, what, ok, md.at(), md.pos)
		}
		if ok && ikey.Compare(it.Key(), md.keys[md.pos]) != 0 {
			t.Fatalf("step %d (%s): at %s, model at %s", step, what, ikey.String(it.Key()), ikey.String(md.keys[md.pos]))
		}
		if ok && string(it.Value()) != fmt.Sprint(ikey.Seq(it.Key())) {
			t.Fatalf("step %d (%s): value %q for %s", step, what, it.Value(), ikey.String(it.Key()))
		}
	}
	for step := 0; step < 2000; step++ {
		switch op := rng.IntN(10); op {
		case 0:
			md.pos, md.unpositioned = 0, false
			check(step, "first", it.First())
		case 1:
			md.pos, md.unpositioned = len(md.keys)-1, false
			check(step, "last", it.Last())
		case 2, 3:
			k := ikey.Make(randomKey(rng), rng.Uint64N(2100), ikey.Kind(rng.IntN(2)))
			md.seekGE(k)
			md.unpositioned = false
			check(step, "seekge "+ikey.String(k), it.SeekGE(k))
		case 4, 5:
			k := ikey.Make(randomKey(rng), rng.Uint64N(2100), ikey.Kind(rng.IntN(2)))
			md.seekLT(k)
			md.unpositioned = false
			check(step, "seeklt "+ikey.String(k), it.SeekLT(k))
		default:
			// A run of moves in one direction: short runs flip direction
			// inside a chunk, long ones cross many chunks of growing size.
			n := 1 + rng.IntN(1+rng.IntN(500))
			for i := 0; i < n; i++ {
				if op < 8 {
					md.next()
					check(step, "next", it.Next())
				} else {
					md.prev()
					check(step, "prev", it.Prev())
				}
			}
		}
	}
}

// next and prev follow the Iterator's documented moves off either end.
func (md *model) next() {
	switch {
	case md.unpositioned:
	case md.pos < 0:
		md.pos = 0
	case md.pos < len(md.keys):
		md.pos++
	}
}

func (md *model) prev() {
	switch {
	case md.unpositioned:
	case md.pos >= len(md.keys):
		md.pos = len(md.keys) - 1
	case md.pos >= 0:
		md.pos--
	}
}
