package rangedel

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
)

func key(i int) []byte { return fmt.Appendf(nil, "k%02d", i) }

// naiveDeletedAt is the definition: the newest deletion visible at seq
// that covers k.
func naiveDeletedAt(ts []Tombstone, k []byte, seq uint64) uint64 {
	best := uint64(0)
	for _, t := range ts {
		if bytes.Compare(t.Start, k) <= 0 && bytes.Compare(k, t.End) < 0 && t.Seq <= seq && t.Seq > best {
			best = t.Seq
		}
	}
	return best
}

func randomTombstones(r *rand.Rand, n int) []Tombstone {
	var ts []Tombstone
	for range n {
		a, b := r.IntN(30), r.IntN(30)
		ts = append(ts, Tombstone{Start: key(a), End: key(b), Seq: uint64(1 + r.IntN(20))})
	}
	return ts
}

// probes are keys on and between the boundaries.
func probes() [][]byte {
	var ks [][]byte
	for i := range 31 {
		ks = append(ks, key(i), append(key(i), 0))
	}
	return append(ks, []byte(""))
}

func checkInvariants(t *testing.T, s Spans) {
	t.Helper()
	for i, sp := range s {
		if bytes.Compare(sp.Start, sp.End) >= 0 || len(sp.Seqs) == 0 {
			t.Fatalf("span %d empty: %+v", i, sp)
		}
		for j := 1; j < len(sp.Seqs); j++ {
			if sp.Seqs[j-1] <= sp.Seqs[j] {
				t.Fatalf("span %d seqs not strictly descending: %v", i, sp.Seqs)
			}
		}
		if i > 0 && bytes.Compare(s[i-1].End, sp.Start) > 0 {
			t.Fatalf("spans %d and %d overlap", i-1, i)
		}
	}
}

// TestFragmentMatchesNaive: for every probe key and reader sequence
// number, the fragments give the newest visible covering deletion the
// definition gives; so do Merge of two halves, and Tombstones fragmented
// again.
func TestFragmentMatchesNaive(t *testing.T) {
	for trial := range 500 {
		r := rand.New(rand.NewPCG(uint64(trial), 1))
		ts := randomTombstones(r, r.IntN(12))
		s := Fragment(ts)
		checkInvariants(t, s)
		half := len(ts) / 2
		merged := Merge(Fragment(ts[:half]), Fragment(ts[half:]))
		checkInvariants(t, merged)
		again := Fragment(s.Tombstones())
		for _, k := range probes() {
			for seq := uint64(0); seq <= 21; seq++ {
				want := naiveDeletedAt(ts, k, seq)
				for name, got := range map[string]uint64{"fragments": s.DeletedAt(k, seq),
					"merged": merged.DeletedAt(k, seq), "refragmented": again.DeletedAt(k, seq)} {
					if got != want {
						t.Fatalf("trial %d: %s: key %q at seq %d: %d, want %d (tombstones %v)", trial, name, k, seq, got, want, ts)
					}
				}
			}
		}
	}
}

// TestTruncateAndFilter: Truncate keeps exactly what lies in [lo, hi);
// Filter keeps exactly the accepted sequence numbers.
func TestTruncateAndFilter(t *testing.T) {
	for trial := range 300 {
		r := rand.New(rand.NewPCG(uint64(trial), 2))
		ts := randomTombstones(r, r.IntN(10))
		s := Fragment(ts)
		var lo, hi []byte
		if r.IntN(3) > 0 {
			lo = key(r.IntN(30))
		}
		if r.IntN(3) > 0 {
			hi = key(r.IntN(30))
		}
		tr := s.Truncate(lo, hi)
		checkInvariants(t, tr)
		cut := uint64(r.IntN(20))
		f := s.Filter(func(q uint64) bool { return q > cut })
		checkInvariants(t, f)
		for _, k := range probes() {
			in := (lo == nil || bytes.Compare(k, lo) >= 0) && (hi == nil || bytes.Compare(k, hi) < 0)
			for seq := uint64(0); seq <= 21; seq++ {
				want := uint64(0)
				if in {
					want = s.DeletedAt(k, seq)
				}
				if got := tr.DeletedAt(k, seq); got != want {
					t.Fatalf("trial %d: truncated to [%q, %q): key %q seq %d: %d, want %d", trial, lo, hi, k, seq, got, want)
				}
				var kept []Tombstone
				for _, x := range ts {
					if x.Seq > cut {
						kept = append(kept, x)
					}
				}
				if got, want := f.DeletedAt(k, seq), naiveDeletedAt(kept, k, seq); got != want {
					t.Fatalf("trial %d: filtered > %d: key %q seq %d: %d, want %d", trial, cut, k, seq, got, want)
				}
			}
		}
	}
}

// TestAddNewest: adding deletions one at a time, each newer than the
// last, gives what fragmenting them all at once gives.
func TestAddNewest(t *testing.T) {
	for trial := range 500 {
		r := rand.New(rand.NewPCG(uint64(trial), 3))
		ts := randomTombstones(r, r.IntN(15))
		var s Spans
		for i := range ts {
			ts[i].Seq = uint64(i + 1)
			s = s.AddNewest(ts[i])
			checkInvariants(t, s)
		}
		for _, k := range probes() {
			for seq := uint64(0); seq <= 16; seq++ {
				if got, want := s.DeletedAt(k, seq), naiveDeletedAt(ts, k, seq); got != want {
					t.Fatalf("trial %d: key %q seq %d: %d, want %d (tombstones %v, spans %v)", trial, k, seq, got, want, ts, s)
				}
			}
		}
	}
}
