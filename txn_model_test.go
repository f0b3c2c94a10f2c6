package shale_test

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/shale-db/shale"
)

// The transaction model test: random interleavings of several open
// transactions (gets, partial and whole scans in both directions, puts,
// deletes, commits, discards) with plain writes, flushes and compactions.
// It checks three things:
//
//   - every read a transaction makes returns what the model says it
//     should: the committed state as of its beginning, with its own
//     writes over it;
//   - every commit's outcome is the one predicted exactly from what the
//     transaction read (keys, and the spans its iterators passed over) and
//     what was written since it began: ErrConflict if and only if a write
//     since touched a key read or a key inside a span read;
//   - serializability: when a transaction commits, replaying the committed
//     transactions in commit order (the model's state at that moment) gives
//     every read it saw.
//
// SHALE_TXN_MODEL_STEPS sets the steps per seed (default 3000).

const txnModelKeys = 24

func txnModelKey(i int) string { return fmt.Sprintf("k%02d", i) }

type txnModelRead struct {
	get     string // a Get of this key, or
	lo, hi  string // a scan over [lo, hi); hi "" with hiInf: to the end
	hiInf   bool
	reverse bool
	seen    string // what it returned, as text
}

type txnModelTx struct {
	tx      *shale.Transaction
	start   map[string]string // committed state at its beginning
	own     map[string]*string
	reads   []txnModelRead
	touched map[string]bool // keys written by others since it began
}

// view is what the transaction should see.
func (m *txnModelTx) view() map[string]string {
	v := maps.Clone(m.start)
	for k, w := range m.own {
		if w == nil {
			delete(v, k)
		} else {
			v[k] = *w
		}
	}
	return v
}

func TestTxnModel(t *testing.T) {
	steps := 3000
	if s := os.Getenv("SHALE_TXN_MODEL_STEPS"); s != "" {
		steps, _ = strconv.Atoi(s)
	}
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { runTxnModel(t, seed, steps) })
	}
}

func runTxnModel(t *testing.T, seed uint64, steps int) {
	rng := rand.New(rand.NewPCG(seed, seed))
	db, _ := openDB(t, &shale.Options{WriteBufferSize: 2 << 10})
	committed := map[string]string{}
	var open []*txnModelTx
	var commits, conflicts, readOnly int

	// wrote records a committed write of key by someone other than open
	// transaction except.
	wrote := func(keys []string, except *txnModelTx) {
		for _, o := range open {
			if o != except {
				for _, k := range keys {
					o.touched[k] = true
				}
			}
		}
	}
	key := func() string { return txnModelKey(rng.IntN(txnModelKeys)) }
	for step := range steps {
		switch r := rng.IntN(100); {
		case r < 10 && len(open) < 4:
			open = append(open, &txnModelTx{tx: db.NewTransaction(), start: maps.Clone(committed),
				own: map[string]*string{}, touched: map[string]bool{}})
		case r < 18: // a plain write
			k := key()
			if rng.IntN(3) == 0 {
				if err := db.Delete([]byte(k), shale.NoSync); err != nil {
					t.Fatal(err)
				}
				delete(committed, k)
			} else {
				v := fmt.Sprint("p", step)
				if err := db.Put([]byte(k), []byte(v), shale.NoSync); err != nil {
					t.Fatal(err)
				}
				committed[k] = v
			}
			wrote([]string{k}, nil)
		case r < 20:
			if rng.IntN(4) == 0 {
				if err := db.Compact(nil, nil); err != nil {
					t.Fatal(err)
				}
			} else if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
		case len(open) == 0:
		default:
			m := open[rng.IntN(len(open))]
			switch r := rng.IntN(100); {
			case r < 30: // Get
				k := key()
				v, err := m.tx.Get([]byte(k))
				got := string(v)
				if errors.Is(err, shale.ErrNotFound) {
					got = "<none>"
				} else if err != nil {
					t.Fatal(err)
				}
				want, ok := m.view()[k]
				if !ok {
					want = "<none>"
				}
				if got != want {
					t.Fatalf("step %d: tx Get(%s) = %s, want %s", step, k, got, want)
				}
				if _, mine := m.own[k]; !mine {
					m.reads = append(m.reads, txnModelRead{get: k, seen: got})
				}
			case r < 50: // a scan, partial or whole, either way
				m.reads = append(m.reads, txnModelScan(t, rng, m, step))
			case r < 75: // Put or Delete
				k := key()
				if rng.IntN(3) == 0 {
					if err := m.tx.Delete([]byte(k)); err != nil {
						t.Fatal(err)
					}
					m.own[k] = nil
				} else {
					v := fmt.Sprint("t", step)
					if err := m.tx.Put([]byte(k), []byte(v)); err != nil {
						t.Fatal(err)
					}
					m.own[k] = &v
				}
			case r < 95: // Commit
				err := m.tx.Commit(shale.NoSync)
				wantConflict := len(m.own) > 0 && txnModelConflicts(m)
				if wantConflict != errors.Is(err, shale.ErrConflict) || !wantConflict && err != nil {
					t.Fatalf("step %d: Commit: %v; predicted conflict: %v (reads %v, written since: %v)",
						step, err, wantConflict, m.reads, slices.Sorted(maps.Keys(m.touched)))
				}
				switch {
				case wantConflict:
					conflicts++
				case len(m.own) == 0:
					readOnly++
				default:
					// Serializability: replayed in commit order, the
					// committed state now gives every read it saw.
					txnModelReplay(t, step, committed, m)
					var keys []string
					for k, w := range m.own {
						if w == nil {
							delete(committed, k)
						} else {
							committed[k] = *w
						}
						keys = append(keys, k)
					}
					wrote(keys, m)
					commits++
				}
				open = slices.DeleteFunc(open, func(o *txnModelTx) bool { return o == m })
			default:
				m.tx.Discard()
				open = slices.DeleteFunc(open, func(o *txnModelTx) bool { return o == m })
			}
		}
	}
	for _, m := range open {
		m.tx.Discard()
	}
	// The DB ends as the model.
	got := scanPrefix(t, db, "")
	if !mapsEqual(got, committed) {
		t.Fatalf("final state differs:\n got %v\nwant %v", got, committed)
	}
	if commits == 0 || conflicts == 0 {
		t.Fatalf("%d commits, %d conflicts: the mix tests nothing", commits, conflicts)
	}
	t.Logf("%d commits, %d conflicts, %d read-only", commits, conflicts, readOnly)
}

// txnModelScan makes a random scan in m's transaction, checks what it
// returns, and returns the span it read.
func txnModelScan(t *testing.T, rng *rand.Rand, m *txnModelTx, step int) txnModelRead {
	t.Helper()
	o := &shale.IterOptions{}
	var lower, upper string
	hasUpper := false
	if rng.IntN(2) == 0 {
		lower = txnModelKey(rng.IntN(txnModelKeys))
		o.LowerBound = []byte(lower)
	}
	if rng.IntN(2) == 0 {
		upper = txnModelKey(rng.IntN(txnModelKeys + 1))
		o.UpperBound, hasUpper = []byte(upper), true
	}
	view := m.view()
	var keys []string
	for k := range view {
		if k >= lower && (!hasUpper || k < upper) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	reverse := rng.IntN(2) == 0
	limit := 1 + rng.IntN(6) // entries to read before stopping; past the end, the whole range
	it := m.tx.NewIterator(o)
	defer func() {
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
	}()
	var got []string
	rd := txnModelRead{reverse: reverse}
	if !reverse {
		seek := lower
		if rng.IntN(2) == 0 {
			seek = txnModelKey(rng.IntN(txnModelKeys))
		}
		ok := it.SeekGE([]byte(seek))
		for ; ok && len(got) < limit; ok = it.Next() {
			got = append(got, string(it.Key())+"="+string(it.Value()))
		}
		rd.lo = max(seek, lower)
		var want []string
		for _, k := range keys {
			if k >= seek && len(want) < limit {
				want = append(want, k+"="+view[k])
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("step %d: forward scan from %q in [%q, %q): %v, want %v", step, seek, lower, upper, got, want)
		}
		// The loop stops standing at the entry after the last it read,
		// which the iterator passed over too, or past the end.
		if ok {
			rd.hi = string(it.Key()) + "\x00"
		} else {
			rd.hi, rd.hiInf = upper, !hasUpper
		}
	} else {
		seek, seekSet := upper, hasUpper
		if rng.IntN(2) == 0 {
			seek, seekSet = txnModelKey(rng.IntN(txnModelKeys+1)), true
		}
		var ok bool
		if seekSet {
			ok = it.SeekLT([]byte(seek))
		} else {
			ok = it.Last()
		}
		for ; ok && len(got) < limit; ok = it.Prev() {
			got = append(got, string(it.Key())+"="+string(it.Value()))
		}
		rd.hi, rd.hiInf = seek, !seekSet
		if seekSet && hasUpper && upper < seek {
			rd.hi = upper
		}
		var want []string
		for _, k := range slices.Backward(keys) {
			if (!seekSet || k < seek) && len(want) < limit {
				want = append(want, k+"="+view[k])
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("step %d: backward scan from %q in [%q, %q): %v, want %v", step, seek, lower, upper, got, want)
		}
		if ok {
			rd.lo = string(it.Key())
		} else {
			rd.lo = lower
		}
	}
	rd.seen = fmt.Sprint(got)
	return rd
}

func keyOf(kv string) string { return kv[:bytes.IndexByte([]byte(kv), '=')] }

func (r txnModelRead) covers(k string) bool {
	if r.get != "" {
		return k == r.get
	}
	return k >= r.lo && (r.hiInf || k < r.hi)
}

func txnModelConflicts(m *txnModelTx) bool {
	for k := range m.touched {
		for _, r := range m.reads {
			if r.covers(k) {
				return true
			}
		}
	}
	return false
}

// txnModelReplay checks that each read of m, made against the state it
// began with, reads the same against committed (the state m commits over).
func txnModelReplay(t *testing.T, step int, committed map[string]string, m *txnModelTx) {
	t.Helper()
	for _, r := range m.reads {
		for k := range m.start {
			if r.covers(k) && m.start[k] != committed[k] {
				t.Fatalf("step %d: committed a transaction whose read %+v saw %s=%s, now %s", step, r, k, m.start[k], committed[k])
			}
		}
		for k := range committed {
			if _, was := m.start[k]; !was && r.covers(k) {
				t.Fatalf("step %d: committed a transaction whose read %+v did not see %s, now present", step, r, k)
			}
		}
	}
}
