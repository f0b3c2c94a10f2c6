package shale

import (
	"fmt"
	"math"
	"testing"

	"github.com/shale-db/shale/internal/batchrepr"
)

// TestTxnFingerprintCollisions measures the one way conflict tracking is
// conservative: a transaction that read key a fails when b, written since,
// shares a's fingerprint. With the fingerprint cut to 16 bits, the rate of
// such false conflicts per pair is measured and must match 2^-16; the full
// 64-bit fingerprint's rate is then 2^-64 per pair (under the issue's
// 2^-32), the hash being the same.
func TestTxnFingerprintCollisions(t *testing.T) {
	c := newConflictLog(1 << 40)
	c.fpMask = 1<<16 - 1
	const writes, reads = 4096, 4096
	c.starts[0] = 1
	c.open.Store(1)
	var repr []byte
	for i := range writes {
		repr = batchrepr.AppendPut(repr[:0], fmt.Appendf(nil, "w%06d", i), nil)
		c.recordLocked(repr, uint64(i+1))
	}
	falses := 0
	for i := range reads {
		tx := &Transaction{start: 0, reads: map[string]struct{}{fmt.Sprintf("r%06d", i): {}}}
		if c.checkLocked(tx) != nil {
			falses++
		}
	}
	// Each read is checked against every write: writes*reads pairs.
	pairs := float64(writes) * float64(reads)
	rate := float64(falses) / pairs
	want := math.Pow(2, -16)
	t.Logf("%d false conflicts in %.0f pairs: %.3g per pair (2^-16 = %.3g)", falses, pairs, rate, want)
	if rate < want/2 || rate > want*2 {
		t.Fatalf("collision rate %.3g per pair with 16-bit fingerprints, want about %.3g", rate, want)
	}
}
