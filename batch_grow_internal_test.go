package shale

import (
	"bytes"
	"fmt"
	"testing"
)

// TestBatchGrowth checks how a batch of 1,000 puts of 16-byte keys and
// 100-byte values (122 KB) gets its memory: by doubling, 9 allocations for
// a new batch when the hint is at its floor (append's own growth took 24
// and 515 KB), and two, the first small and the second of about the
// batch's size, once Write has seen batches of that size; a batch of one
// put stays small whatever the hint. The batch's bytes are the same either
// way.
func TestBatchGrowth(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts do not hold under the race detector")
	}
	defer batchSizeHint.Store(batchSizeHint.Load())
	keys := make([][]byte, 1000)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "%016d", i)
	}
	val := bytes.Repeat([]byte{'v'}, 100)
	var last *Batch
	fill := func() {
		b := new(Batch)
		for _, k := range keys {
			b.Put(k, val)
		}
		last = b
	}
	batchSizeHint.Store(minBatchHint)
	if a := testing.AllocsPerRun(20, fill); a > 10 {
		t.Errorf("a new batch from the smallest hint: %.0f allocations, want at most 10", a)
	}
	want := bytes.Clone(last.repr)
	size := len(want)

	db, err := Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i := 0; i < 40; i++ {
		if err := db.Write(last, NoSync); err != nil {
			t.Fatal(err)
		}
	}
	if h := batchSizeHint.Load(); h < int64(size)*9/10 || h > int64(size) {
		t.Fatalf("hint %d after 40 batches of %d bytes", h, size)
	}
	if a := testing.AllocsPerRun(20, fill); a > 3 {
		t.Errorf("a new batch once the hint has learnt its size: %.0f allocations, want at most 3 (the Batch, its first buffer and the one of the hint's size)", a)
	}
	small := new(Batch)
	small.Put(keys[0], val)
	if c := cap(small.repr); c > firstBatchCap {
		t.Errorf("a batch of one put has capacity %d with a hint of %d", c, batchSizeHint.Load())
	}
	if c := cap(last.repr); c > 2*size {
		t.Errorf("capacity %d for %d bytes", c, size)
	}
	if !bytes.Equal(last.repr, want) {
		t.Error("a batch grown from the hint encodes differently")
	}

	// Single puts do not teach it: their batches are Put's own.
	before := batchSizeHint.Load()
	for i := 0; i < 100; i++ {
		if err := db.Put(keys[i], val, NoSync); err != nil {
			t.Fatal(err)
		}
	}
	if h := batchSizeHint.Load(); h != before {
		t.Errorf("hint moved from %d to %d by single Puts", before, h)
	}
	// A huge batch moves it an eighth of the way, never past the cap.
	for i := 0; i < 100; i++ {
		noteBatchSize(64 << 20)
	}
	if h := batchSizeHint.Load(); h > maxBatchHint || h < maxBatchHint-8 {
		t.Errorf("hint %d after huge batches, want the cap %d (less the eighth of under 8 that rounds away)", h, maxBatchHint)
	}
}
