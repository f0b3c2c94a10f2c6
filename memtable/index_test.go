package memtable

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/shale-db/shale/internal/ikey"
)

// checkLeaves verifies the index's invariants: leaves in the tree's order
// partition the entries, each sorted, within [lo, hi), each hi the next
// leaf's lo, no leaf empty or over capacity. It returns every entry in
// order. No leaf's array holds more than leafCap entries.
func checkLeaves(t *testing.T, x *index) []entry {
	t.Helper()
	var all []entry
	var prev *leaf
	x.tree.Ascend(func(it leafItem) bool {
		l := it.l
		if !sameKey(&it.lo, &l.lo) {
			t.Fatalf("leaf item's bound %s differs from its leaf's %s", ikey.String(it.lo.key()), ikey.String(l.lo.key()))
		}
		if len(l.ents) == 0 || len(l.ents) > leafCap || cap(l.ents) > leafCap {
			t.Fatalf("leaf of %d entries, capacity %d", len(l.ents), cap(l.ents))
		}
		if less(l.ents[0], l.lo) {
			t.Fatalf("first entry %s below the leaf's bound %s", ikey.String(l.ents[0].key()), ikey.String(l.lo.key()))
		}
		for i := 1; i < len(l.ents); i++ {
			if !less(l.ents[i-1], l.ents[i]) {
				t.Fatalf("leaf out of order at %d", i)
			}
		}
		if prev != nil && (!prev.hasHi || !sameKey(&prev.hi, &l.lo)) {
			t.Fatalf("a leaf's upper bound is not the next leaf's lower bound")
		}
		if l.hasHi && !less(l.ents[len(l.ents)-1], l.hi) {
			t.Fatalf("last entry %s not below the leaf's upper bound", ikey.String(l.ents[len(l.ents)-1].key()))
		}
		all = append(all, l.ents...)
		prev = l
		return true
	})
	if prev != nil && prev.hasHi {
		t.Fatalf("the last leaf has an upper bound")
	}
	return all
}

func collectWith(walk func(func(entry) bool)) []string {
	var out []string
	walk(func(e entry) bool { out = append(out, string(e.key())); return true })
	return out
}

func keysOf(ents []entry) []string {
	out := make([]string, len(ents))
	for i := range ents {
		out[i] = string(ents[i].key())
	}
	return out
}

// TestIndexAgainstModel inserts entries in several orders (ascending,
// descending, random, interleaved ascending streams, and runs that land
// just after a leaf's last entry), and checks the invariants, every walk
// and every bounded walk from pivots on and between the entries.
func TestIndexAgainstModel(t *testing.T) {
	const n = 3000
	orders := map[string]func(i int, rng *rand.Rand) uint64{
		"ascending":  func(i int, _ *rand.Rand) uint64 { return uint64(i) * 2 },
		"descending": func(i int, _ *rand.Rand) uint64 { return uint64(n-i) * 2 },
		"random":     func(_ int, rng *rand.Rand) uint64 { return rng.Uint64N(n) * 2 },
		"streams":    func(i int, _ *rand.Rand) uint64 { return uint64(i%7)*100_000 + uint64(i/7)*2 },
		"fill-gaps":  func(i int, _ *rand.Rand) uint64 { return uint64(i%(n/2))*4 + uint64(i/(n/2))*2 },
	}
	for name, keyAt := range orders {
		t.Run(name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, 7))
			x := newIndex()
			var model []entry
			var kb [8]byte
			for i := 0; i < n; i++ {
				binary.BigEndian.PutUint64(kb[:], keyAt(i, rng))
				// Sequence numbers repeat now and then, so that some
				// inserts replace an equal entry.
				seq := uint64(rng.IntN(n / 2))
				e := testEntry(kb[:], seq, fmt.Sprint(i))
				old, replaced := x.insert(e)
				j, found := slices.BinarySearchFunc(model, e, compareEntries)
				if replaced != found {
					t.Fatalf("insert %d: replaced %v, model had it %v", i, replaced, found)
				}
				if found {
					if string(old.value()) != string(model[j].value()) {
						t.Fatalf("insert %d: replaced value %q, model %q", i, old.value(), model[j].value())
					}
					model[j] = e
				} else {
					model = slices.Insert(model, j, e)
				}
				if i%500 == 0 || i == n-1 {
					checkIndex(t, &x, model, rng)
				}
			}
		})
	}
}

func testEntry(ukey []byte, seq uint64, value string) entry {
	kl := len(ukey) + ikey.TrailerLen
	b := make([]byte, kl+len(value))
	ikey.Append(b[:0], ukey, seq, ikey.KindSet)
	copy(b[kl:], value)
	p0, p1 := ikey.Prefixes(ukey)
	return entry{p0: p0, p1: p1, trailer: ikey.MakeTrailer(seq, ikey.KindSet), kv: b[:len(ukey):len(b)]}
}

func checkIndex(t *testing.T, x *index, model []entry, rng *rand.Rand) {
	t.Helper()
	want := keysOf(model)
	if got := keysOf(checkLeaves(t, x)); !slices.Equal(got, want) {
		t.Fatalf("leaves hold %d entries, model %d", len(got), len(want))
	}
	if got := collectWith(x.ascend); !slices.Equal(got, want) {
		t.Fatalf("ascend: %d entries, model %d", len(got), len(want))
	}
	rev := slices.Clone(want)
	slices.Reverse(rev)
	if got := collectWith(x.descend); !slices.Equal(got, rev) {
		t.Fatalf("descend: %d entries, model %d", len(got), len(rev))
	}
	for k := 0; k < 200; k++ {
		// Pivots on entries, and between them (odd key numbers, other
		// sequence numbers), and past both ends.
		var kb [8]byte
		binary.BigEndian.PutUint64(kb[:], rng.Uint64N(2*3000+2)+uint64(rng.IntN(2))*100_000*uint64(rng.IntN(7)))
		p := testEntry(kb[:], uint64(rng.IntN(1600)), "")
		if k%10 == 0 && len(model) > 0 {
			p = model[rng.IntN(len(model))]
		}
		i, found := slices.BinarySearchFunc(model, p, compareEntries)
		if got := collectWith(func(fn func(entry) bool) { x.ascendGE(p, fn) }); !slices.Equal(got, want[i:]) {
			t.Fatalf("ascendGE %s: %d entries, model %d", ikey.String(p.key()), len(got), len(want)-i)
		}
		if found {
			i++
		}
		down := slices.Clone(want[:i])
		slices.Reverse(down)
		if got := collectWith(func(fn func(entry) bool) { x.descendLE(p, fn) }); !slices.Equal(got, down) {
			t.Fatalf("descendLE %s: %d entries, model %d", ikey.String(p.key()), len(got), len(down))
		}
		// Walks stop when the callback says so.
		stop := rng.IntN(300)
		seen := 0
		x.ascendGE(p, func(entry) bool { seen++; return seen < stop })
		if seen > max(stop, 1) {
			t.Fatalf("ascendGE went on after the callback stopped it: %d > %d", seen, stop)
		}
	}
}

// TestIndexFillsLeavesInOrder checks that inserts in key order leave every
// leaf but the last full, and in descending order at least half full, which is what keeps a memtable filled in order
// compact and its inserts from moving entries.
// TestIndexLeavesStayFull: after random inserts, the leaves' arrays are
// mostly in use (arrays of leafCap from the start would be about 30%
// empty); after inserts in order, all but the last are full.
func TestIndexLeavesStayFull(t *testing.T) {
	use := func(x *index) (used, alloc int) {
		x.tree.Ascend(func(it leafItem) bool {
			used += len(it.l.ents)
			alloc += cap(it.l.ents)
			return true
		})
		return used, alloc
	}
	r := rand.New(rand.NewPCG(3, 3))
	x := newIndex()
	var kb [8]byte
	for range 50000 {
		binary.BigEndian.PutUint64(kb[:], r.Uint64())
		x.insert(testEntry(kb[:], 1, ""))
	}
	checkLeaves(t, &x)
	if used, alloc := use(&x); float64(used) < 0.8*float64(alloc) {
		t.Errorf("random inserts: %d entries in arrays of %d (%.0f%%), want at least 80%%", used, alloc, 100*float64(used)/float64(alloc))
	}
	x = newIndex()
	for i := range 50 * leafCap {
		binary.BigEndian.PutUint64(kb[:], uint64(i))
		x.insert(testEntry(kb[:], 1, ""))
	}
	if used, alloc := use(&x); used != alloc {
		t.Errorf("inserts in order: %d entries in arrays of %d, want all full", used, alloc)
	}
}

func TestIndexFillsLeavesInOrder(t *testing.T) {
	x := newIndex()
	var kb [8]byte
	const n = 10 * leafCap
	for i := 0; i < n; i++ {
		binary.BigEndian.PutUint64(kb[:], uint64(i))
		x.insert(testEntry(kb[:], 1, ""))
	}
	if got := x.tree.Len(); got != n/leafCap {
		t.Fatalf("%d leaves for %d entries in order, want %d", got, n, n/leafCap)
	}
	// In descending order every insert is below every entry: it goes to
	// the first leaf, whose bound (minEntry) never moves, and leaves split
	// in halves.
	x = newIndex()
	for i := n; i > 0; i-- {
		binary.BigEndian.PutUint64(kb[:], uint64(i))
		x.insert(testEntry(kb[:], 1, ""))
	}
	if got := x.tree.Len(); got > 2*n/leafCap+1 {
		t.Fatalf("%d leaves for %d entries in descending order, want at most %d", got, n, 2*n/leafCap+1)
	}
	checkLeaves(t, &x)
}

// TestIndexAppendAbove mixes runs that appendAbove takes (ascending, above
// every entry) of random lengths with random inserts (below the top, so
// that leaves split under the runs' leaves), on the Go heap and with
// arrays of leafCap as a memtable's arena gives, and checks the index
// against a model after each step. above must refuse a run that does not
// ascend, or that starts at or below the index's largest entry.
func TestIndexAppendAbove(t *testing.T) {
	for _, arena := range []bool{false, true} {
		t.Run(fmt.Sprintf("arena=%v", arena), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(11, 11))
			x := newIndex()
			if arena {
				x.spares.alloc = func(c int) []entry { return make([]entry, 0, c) }
			}
			var model []entry
			var kb [8]byte
			entryAt := func(k uint64, seq uint64) entry {
				binary.BigEndian.PutUint64(kb[:], k)
				return testEntry(kb[:], seq, fmt.Sprint(k))
			}
			top := uint64(1000)
			for step := range 60 {
				if step%3 == 2 {
					// Random inserts below the top.
					for range rng.IntN(200) {
						e := entryAt(rng.Uint64N(top), uint64(1+step))
						x.insert(e)
						j, found := slices.BinarySearchFunc(model, e, compareEntries)
						if found {
							model[j] = e
						} else {
							model = slices.Insert(model, j, e)
						}
					}
				} else {
					n := 1 + rng.IntN(3*leafCap)
					run := make([]entry, n)
					for i := range run {
						top += 1 + rng.Uint64N(3)
						run[i] = entryAt(top, uint64(1+step))
					}
					if len(model) > 0 {
						if x.above([]entry{model[len(model)-1]}) {
							t.Fatal("above took a run starting at the largest entry")
						}
					}
					if n > 1 {
						swapped := slices.Clone(run)
						swapped[0], swapped[n-1] = swapped[n-1], swapped[0]
						if x.above(swapped) {
							t.Fatal("above took a run that does not ascend")
						}
					}
					if !x.above(run) {
						t.Fatalf("step %d: above refused an ascending run past the top", step)
					}
					x.appendAbove(run)
					model = append(model, run...)
				}
				if step%20 == 0 || step == 59 {
					checkIndex(t, &x, model, rng)
				}
			}
			// The inserts after a run find their leaf: the hint points at
			// the last leaf, and an insert below it must still land right.
			e := entryAt(0, 9999)
			x.insert(e)
			model = slices.Insert(model, 0, e)
			checkIndex(t, &x, model, rng)
		})
	}
}
