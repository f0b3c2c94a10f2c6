package hist

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestBucketsContiguous(t *testing.T) {
	prev := -1
	for _, v := range []uint64{0, 1, 255, 256, 257, 258, 511, 512, 1000, 1 << 20, 1<<40 + 12345, math.MaxInt64, math.MaxUint64} {
		b := bucketOf(v)
		if b < prev || b >= numBuckets {
			t.Fatalf("bucketOf(%d) = %d after %d (of %d)", v, b, prev, numBuckets)
		}
		prev = b
		if ub := upperBound(b); ub < v || (b > 0 && upperBound(b-1) >= v) {
			t.Fatalf("value %d in bucket %d whose range ends at %d (previous ends at %d)", v, b, ub, upperBound(b-1))
		}
	}
	// Every bucket starts right after the one before.
	for b := 1; b < numBuckets; b++ {
		if got := bucketOf(upperBound(b-1) + 1); got != b {
			t.Fatalf("value after bucket %d lands in %d, want %d", b-1, got, b)
		}
	}
}

func TestSmallValuesExact(t *testing.T) {
	var h Histogram
	for v := 1; v <= 200; v++ {
		h.Record(time.Duration(v))
	}
	// Nearest rank over 1..200: p50 is the 100th value, p99 the 198th.
	for p, want := range map[float64]time.Duration{50: 100, 99: 198, 99.9: 200, 100: 200, 0.1: 1} {
		if got := h.Percentile(p); got != want {
			t.Errorf("p%v = %d, want %d", p, got, want)
		}
	}
	if h.Count() != 200 || h.Max() != 200 {
		t.Errorf("count %d max %d", h.Count(), h.Max())
	}
}

func TestEmpty(t *testing.T) {
	var h Histogram
	if s := h.Summary(); s != (Summary{}) {
		t.Errorf("empty summary %+v", s)
	}
}

// Against the exact nearest-rank percentile of a sorted sample: never below
// it, and above by less than 1/128.
func TestPercentilesWithinBucketError(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	var h Histogram
	var all []int64
	for range 200_000 {
		// A long tail: mostly microseconds, some milliseconds, a few seconds.
		v := int64(math.Exp(r.Float64()*15) * 300)
		h.Record(time.Duration(v))
		all = append(all, v)
	}
	h.Record(-5) // counts as zero
	all = append(all, 0)
	slices.Sort(all)
	for _, p := range []float64{1, 50, 90, 99, 99.9, 99.99, 100} {
		rank := int(math.Ceil(p / 100 * float64(len(all))))
		exact := all[rank-1]
		got := int64(h.Percentile(p))
		if got < exact || float64(got-exact) > float64(exact)/128 {
			t.Errorf("p%v = %d, exact %d", p, got, exact)
		}
	}
	if int64(h.Max()) != all[len(all)-1] {
		t.Errorf("max %d, want %d", h.Max(), all[len(all)-1])
	}
	s := h.Summary()
	if !(s.P50 <= s.P99 && s.P99 <= s.P999 && s.P999 <= s.P9999 && s.P9999 <= s.Max) {
		t.Errorf("summary out of order: %+v", s)
	}
}
