package shale_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/shale-db/shale"
)

// TestTxnIteratorProperty: a transaction's iterator (its writes merged over
// its snapshot) moves exactly as a DB iterator over a database holding the
// merged state, through random seeks, steps both ways, turns and runs off
// either end, within random bounds. And what it passed over is read: after
// the moves, a write by another to any key it returned, or to a key
// between two it returned one after the other, fails the transaction's
// commit with ErrConflict.
func TestTxnIteratorProperty(t *testing.T) {
	const keys = 40
	key := func(i int) []byte { return fmt.Appendf(nil, "k%02d", i) }
	for trial := range 150 {
		rng := rand.New(rand.NewPCG(uint64(trial), 7))
		base, _ := openDB(t, &shale.Options{WriteBufferSize: 1 << 10})
		merged, _ := openDB(t, nil)
		for i := range keys {
			if rng.IntN(2) == 0 {
				v := fmt.Appendf(nil, "base%d", i)
				base.Put(key(i), v, shale.NoSync)
				merged.Put(key(i), v, shale.NoSync)
			}
		}
		if trial%3 == 0 {
			base.Flush()
		}
		tx := base.NewTransaction()
		for range rng.IntN(20) {
			k := key(rng.IntN(keys))
			if rng.IntN(3) == 0 {
				tx.Delete(k)
				merged.Delete(k, shale.NoSync)
			} else {
				v := fmt.Appendf(nil, "tx%d", rng.IntN(1000))
				tx.Put(k, v)
				merged.Put(k, v, shale.NoSync)
			}
		}
		var o *shale.IterOptions
		if rng.IntN(3) > 0 {
			o = &shale.IterOptions{}
			if rng.IntN(2) == 0 {
				o.LowerBound = key(rng.IntN(keys))
			}
			if rng.IntN(2) == 0 {
				o.UpperBound = key(rng.IntN(keys + 1))
			}
		}
		got, want := tx.NewIterator(o), merged.NewIterator(o)
		// returned holds each key the iterator returned; between, pairs
		// of keys it returned one after the other.
		var returned [][]byte
		var between [][2][]byte
		var last []byte
		for op := range 60 {
			var g, w bool
			var what string
			contiguous := true
			switch r := rng.IntN(10); {
			case r == 0:
				g, w, what, contiguous = got.First(), want.First(), "First", false
			case r == 1:
				g, w, what, contiguous = got.Last(), want.Last(), "Last", false
			case r == 2:
				k := key(rng.IntN(keys + 1))
				g, w, what, contiguous = got.SeekGE(k), want.SeekGE(k), fmt.Sprintf("SeekGE(%s)", k), false
			case r == 3:
				k := key(rng.IntN(keys + 1))
				g, w, what, contiguous = got.SeekLT(k), want.SeekLT(k), fmt.Sprintf("SeekLT(%s)", k), false
			case r < 7:
				g, w, what = got.Next(), want.Next(), "Next"
			default:
				g, w, what = got.Prev(), want.Prev(), "Prev"
			}
			if g != w || string(got.Key()) != string(want.Key()) || string(got.Value()) != string(want.Value()) {
				t.Fatalf("trial %d op %d %s: tx iterator %v %q=%q, DB iterator %v %q=%q", trial, op, what,
					g, got.Key(), got.Value(), w, want.Key(), want.Value())
			}
			if !g {
				last = nil
				continue
			}
			k := append([]byte(nil), got.Key()...)
			returned = append(returned, k)
			if contiguous && last != nil {
				between = append(between, [2][]byte{last, k})
			}
			last = k
		}
		if err := got.Err(); err != nil {
			t.Fatal(err)
		}
		got.Close()
		want.Close()
		// One write by another into what was passed over must conflict.
		var target []byte
		switch {
		case len(between) > 0 && rng.IntN(2) == 0:
			p := between[rng.IntN(len(between))]
			lo := min(string(p[0]), string(p[1]))
			target = []byte(lo + "\x00") // strictly between the two when they differ by more
		case len(returned) > 0:
			target = returned[rng.IntN(len(returned))]
		default:
			tx.Discard()
			continue
		}
		tx.Put([]byte("zz-out"), []byte("1"))
		base.Put(target, []byte("other"), shale.NoSync)
		if err := tx.Commit(shale.NoSync); !errors.Is(err, shale.ErrConflict) {
			t.Fatalf("trial %d: a write to %q, inside what the iterator passed over, did not conflict: %v", trial, target, err)
		}
	}
}
