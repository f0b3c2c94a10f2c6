package shale_test

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/shale-db/shale"
)

// The model test: random puts, deletes, batches, flushes, compactions,
// reopens and snapshots against a map; after every step, random iterator walks (seeks,
// steps both ways, direction changes, bounds) over the DB and over old
// snapshots are compared with the sorted model.
//
// The write buffer and table size are tiny, so that automatic compactions,
// trivial moves and flushes run beside the steps all the time.
//
// SHALE_MODEL_STEPS sets the number of steps (default 400). CI runs three
// fixed seeds; SHALE_MODEL_SEED=random runs a random one (logged), and
// SHALE_MODEL_SEED=N replays seed N.

type modelView interface {
	Get([]byte) ([]byte, error)
	NewIterator(*shale.IterOptions) *shale.Iterator
}

type modelSnap struct {
	snap  *shale.Snapshot
	state map[string]string
}

// modelKeys is the size of the model test's key space.
const modelKeys = 400

// modelKey returns the model's ith key. The first ones are edges: the
// empty key, keys that are prefixes of one another, 0x00 and 0xff bytes,
// and keys around 16 bytes, the prefix the memtable and the index blocks
// compare first; the rest are "k%03d".
func modelKey(i int) string {
	if i < len(modelEdgeKeys) {
		return modelEdgeKeys[i]
	}
	return fmt.Sprintf("k%03d", i)
}

var modelEdgeKeys = []string{"", "\x00", "\x00\x00", "a", "a\x00", "ab", "abc", "\xff", "\xff\xff", "\xfe\xff",
	"ppppppppppppppp", "ppppppppppppppp\x00", "ppppppppppppppq",
	"pppppppppppppppp", "pppppppppppppppp\x00", "pppppppppppppppp\xff", "ppppppppppppppppq"}

func TestModel(t *testing.T) {
	steps := 400
	if s := os.Getenv("SHALE_MODEL_STEPS"); s != "" {
		steps, _ = strconv.Atoi(s)
	}
	seeds := []uint64{1, 2, 3}
	switch s := os.Getenv("SHALE_MODEL_SEED"); s {
	case "":
	case "random":
		seeds = []uint64{uint64(time.Now().UnixNano())}
	default:
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("SHALE_MODEL_SEED=%q: %v", s, err)
		}
		seeds = []uint64{seed}
	}
	var total modelCounts
	for _, seed := range seeds {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			t.Logf("seed %d (SHALE_MODEL_SEED=%d replays it)", seed, seed)
			c := runModel(t, seed, steps)
			total.compactions += c.compactions
			total.moves += c.moves
			total.flushes += c.flushes
		})
	}
	t.Logf("%d flushes, %d compactions, %d trivial moves", total.flushes, total.compactions, total.moves)
	if !t.Failed() && steps >= 400 && (total.compactions == 0 || total.moves == 0 || total.flushes == 0) {
		t.Errorf("the model ran %d flushes, %d automatic compactions and %d trivial moves; want some of each",
			total.flushes, total.compactions, total.moves)
	}
}

// modelCounts adds up the background work of a model run.
type modelCounts struct{ flushes, compactions, moves int64 }

func (c *modelCounts) add(m shale.Metrics) {
	c.flushes += m.Flushes
	c.compactions += m.Compactions.Default + m.Compactions.Tombstone
	c.moves += m.Compactions.Move
}

func runModel(t *testing.T, seed uint64, steps int) (counts modelCounts) {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	opts := &shale.Options{WriteBufferSize: 2 << 10, TargetFileSize: 2 << 10, BlockSize: 256}
	db, dir := openDB(t, opts)
	defer func() { counts.add(db.Metrics()) }()
	state := map[string]string{}
	var snaps []modelSnap
	key := func() string { return modelKey(r.IntN(modelKeys)) }
	appended := 0 // keys "z%06d" written so far, in order: disjoint tables, trivial moves
	for step := range steps {
		switch p := r.IntN(100); {
		case p < 3:
			for range 100 {
				k, v := fmt.Sprintf("z%06d", appended), fmt.Sprintf("a%d-%s", step, bytes.Repeat([]byte("y"), 40))
				mustPut(t, db, k, v)
				state[k] = v
				appended++
			}
		case p < 55:
			k, v := key(), fmt.Sprintf("v%d-%s", step, bytes.Repeat([]byte("x"), r.IntN(200)))
			mustPut(t, db, k, v)
			state[k] = v
		case p < 67:
			k := key()
			if err := db.Delete([]byte(k), shale.NoSync); err != nil {
				t.Fatal(err)
			}
			delete(state, k)
		case p < 70:
			lo, hi := modelRange(r)
			if err := db.DeleteRange(lo, hi, shale.NoSync); err != nil {
				t.Fatal(err)
			}
			modelDeleteRange(state, lo, hi)
		case p < 82:
			var b shale.Batch
			for j := range 1 + r.IntN(20) {
				k := key()
				if r.IntN(30) == 0 {
					lo, hi := modelRange(r)
					b.DeleteRange(lo, hi)
					modelDeleteRange(state, lo, hi)
				} else if r.IntN(4) == 0 {
					b.Delete([]byte(k))
					delete(state, k)
				} else {
					v := fmt.Sprintf("b%d.%d", step, j)
					b.Put([]byte(k), []byte(v))
					state[k] = v
				}
			}
			if err := db.Write(&b, shale.NoSync); err != nil {
				t.Fatal(err)
			}
		case p < 86:
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
		case p < 88:
			var lo, hi []byte
			if r.IntN(2) == 0 {
				lo = []byte(key())
			}
			if r.IntN(2) == 0 {
				hi = []byte(key())
			}
			if lo != nil && hi != nil && string(lo) > string(hi) {
				lo, hi = hi, lo // a reversed range is an error
			}
			if err := db.Compact(lo, hi); err != nil {
				t.Fatal(err)
			}
		case p < 91:
			counts.add(db.Metrics())
			db.Close() // closes the snapshots with it
			snaps = nil
			db = reopen(t, dir, opts)
		case p < 96:
			snaps = append(snaps, modelSnap{db.NewSnapshot(), maps.Clone(state)})
		default:
			if len(snaps) > 0 {
				i := r.IntN(len(snaps))
				if err := snaps[i].snap.Close(); err != nil {
					t.Fatal(err)
				}
				snaps = slices.Delete(snaps, i, i+1)
			}
		}
		checkView(t, r, db, state, fmt.Sprintf("step %d db", step))
		if len(snaps) > 0 {
			s := snaps[r.IntN(len(snaps))]
			checkView(t, r, s.snap, s.state, fmt.Sprintf("step %d snapshot", step))
		}
	}
	return counts // the deferred add counts the last run
}

// modelRange returns a random range for DeleteRange: mostly narrow (a
// few keys of the key space), sometimes wide, sometimes open at one end
// or both (the "z" keys lie past the key space).
func modelRange(r *rand.Rand) (lo, hi []byte) {
	a := r.IntN(modelKeys)
	b := a + 1 + r.IntN(8)
	if r.IntN(4) == 0 {
		b = a + r.IntN(modelKeys)
	}
	lo, hi = []byte(modelKey(a)), []byte(modelKey(min(b, modelKeys-1)))
	switch r.IntN(12) {
	case 0:
		lo = nil
	case 1:
		hi = nil
	case 2:
		lo, hi = fmt.Appendf(nil, "z%06d", a*5), nil // the appended keys' tail
	}
	return lo, hi
}

// modelDeleteRange deletes the model's keys in [lo, hi) (nil: open).
func modelDeleteRange(state map[string]string, lo, hi []byte) {
	for k := range state {
		if (lo == nil || k >= string(lo)) && (hi == nil || k < string(hi)) {
			delete(state, k)
		}
	}
}

// checkView compares a few Gets and one random iterator walk with state.
func checkView(t *testing.T, r *rand.Rand, v modelView, state map[string]string, where string) {
	t.Helper()
	for range 3 {
		k := modelKey(r.IntN(modelKeys))
		got, err := v.Get([]byte(k))
		if want, ok := state[k]; ok != (err == nil) || (ok && string(got) != want) {
			t.Fatalf("%s: Get(%s) = %q, %v; model has %q, %v", where, k, got, err, want, ok)
		}
	}
	var lo, hi []byte
	if r.IntN(2) == 0 {
		lo = []byte(modelKey(r.IntN(modelKeys)))
	}
	if r.IntN(2) == 0 {
		hi = []byte(modelKey(r.IntN(modelKeys)))
	}
	var keys []string // the model's keys within [lo, hi)
	for k := range state {
		if (lo == nil || k >= string(lo)) && (hi == nil || k < string(hi)) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	it := v.NewIterator(&shale.IterOptions{LowerBound: lo, UpperBound: hi})
	defer it.Close()
	pos := -1 // index in keys, or -1 when the iterator is not positioned
	for op := range 25 {
		var ok bool
		var name string
		seek := modelKey(r.IntN(modelKeys + 5))
		switch c := r.IntN(6); {
		case c == 0 || pos < 0 && c >= 4:
			name, ok = "First", it.First()
			pos = slices.IndexFunc(keys, func(string) bool { return true })
		case c == 1:
			name, ok = "Last", it.Last()
			pos = len(keys) - 1
		case c == 2:
			name, ok = "SeekGE("+seek+")", it.SeekGE([]byte(seek))
			pos, _ = slices.BinarySearch(keys, seek)
			if pos == len(keys) {
				pos = -1
			}
		case c == 3:
			name, ok = "SeekLT("+seek+")", it.SeekLT([]byte(seek))
			i, _ := slices.BinarySearch(keys, seek)
			pos = i - 1
		case c == 4:
			name, ok = "Next", it.Next()
			if pos++; pos >= len(keys) {
				pos = -1
			}
		default:
			name, ok = "Prev", it.Prev()
			pos--
		}
		if err := it.Err(); err != nil {
			t.Fatalf("%s: op %d %s: %v", where, op, name, err)
		}
		if ok != (pos >= 0) {
			t.Fatalf("%s [%q,%q): op %d %s = %v; model says %v (pos %d of %d)", where, lo, hi, op, name, ok, pos >= 0, pos, len(keys))
		}
		if ok && (string(it.Key()) != keys[pos] || string(it.Value()) != state[keys[pos]]) {
			t.Fatalf("%s [%q,%q): op %d %s at %q=%q; model %q=%q", where, lo, hi, op, name, it.Key(), it.Value(), keys[pos], state[keys[pos]])
		}
	}
}
