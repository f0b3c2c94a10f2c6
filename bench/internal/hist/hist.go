// Package hist records durations in a compact log-linear histogram and reads
// percentiles from it.
//
// Values below 256 ns are kept exactly; above that, each power of two is cut
// into 128 buckets, so a percentile is read with a relative error below 1/128
// (it reports its bucket's upper bound, never more than the exact maximum,
// which is kept aside). The histogram is a fixed 58 KiB whatever it counts,
// so recording a million Puts does not swell the heap being measured.
//
// A Histogram is not safe for concurrent use.
package hist

import (
	"math"
	"math/bits"
	"time"
)

// subBits is the number of mantissa bits kept above the leading one.
const (
	subBits    = 7
	subBuckets = 1 << subBits
	numBuckets = (64-subBits-1)*subBuckets + 2*subBuckets
)

// Histogram counts durations.
type Histogram struct {
	counts [numBuckets]uint64
	total  uint64
	max    int64
}

// bucketOf returns the bucket holding v (v >= 0).
func bucketOf(v uint64) int {
	if v < 2*subBuckets {
		return int(v)
	}
	exp := bits.Len64(v) - subBits - 1
	return exp*subBuckets + int(v>>exp)
}

// upperBound returns the largest value bucket b holds.
func upperBound(b int) uint64 {
	if b < 2*subBuckets {
		return uint64(b)
	}
	exp := b/subBuckets - 1
	mant := uint64(b - exp*subBuckets)
	return (mant+1)<<exp - 1
}

// Record counts one duration; negative ones count as zero.
func (h *Histogram) Record(d time.Duration) {
	v := max(int64(d), 0)
	h.counts[bucketOf(uint64(v))]++
	h.total++
	h.max = max(h.max, v)
}

// Count returns how many durations were recorded.
func (h *Histogram) Count() uint64 { return h.total }

// Max returns the longest duration recorded, exactly.
func (h *Histogram) Max() time.Duration { return time.Duration(h.max) }

// Percentile returns the nearest-rank p-th percentile (0 < p <= 100): the
// smallest recorded duration that at least p percent of them do not exceed,
// rounded up to its bucket's bound. It is 0 for an empty histogram.
func (h *Histogram) Percentile(p float64) time.Duration {
	if h.total == 0 {
		return 0
	}
	rank := uint64(math.Ceil(p / 100 * float64(h.total)))
	rank = min(max(rank, 1), h.total)
	var seen uint64
	for b, c := range h.counts {
		seen += c
		if seen >= rank {
			return time.Duration(min(upperBound(b), uint64(h.max)))
		}
	}
	return time.Duration(h.max)
}

// Summary is the latency digest the benchmark reports.
type Summary struct {
	Count uint64        `json:"count"`
	P50   time.Duration `json:"p50"`
	P99   time.Duration `json:"p99"`
	P999  time.Duration `json:"p99_9"`
	P9999 time.Duration `json:"p99_99"`
	Max   time.Duration `json:"max"`
}

// Summary returns p50, p99, p99.9, p99.99 and the maximum.
func (h *Histogram) Summary() Summary {
	return Summary{
		Count: h.total,
		P50:   h.Percentile(50),
		P99:   h.Percentile(99),
		P999:  h.Percentile(99.9),
		P9999: h.Percentile(99.99),
		Max:   h.Max(),
	}
}
