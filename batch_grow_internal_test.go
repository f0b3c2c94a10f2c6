package shale

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/shale-db/shale/internal/batchrepr"
)

// TestBatchGrowth checks how a batch of 1,000 puts of 16-byte keys and
// 100-byte values (122 KB) gets its memory: by doubling, 9 allocations for
// a new batch when the hint is at its floor (append's own growth took 24
// and 515 KB), and at most 8, the last of about the batch's size, once
// Write has seen batches of that size. The batch's bytes are the same
// either way.
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
	if a := testing.AllocsPerRun(20, fill); a > 8 {
		t.Errorf("a new batch once the hint has learnt its size: %.0f allocations, want at most 8", a)
	}
	if c := cap(last.repr); c < size || c > size*5/4 {
		t.Errorf("capacity %d for %d bytes: the last growth should have been to the hint", c, size)
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

// TestSmallBatchesStaySmall: whatever size the process's batches have had
// (the hint at its 1 MiB cap here), a batch of a few writes, one starting
// with a DeleteRange, and one of a hundred puts take about twice their
// size: the jump to the hint comes only once a batch's capacity is an
// eighth of it. (Before, one learned size of 1 MiB gave a batch of five
// puts 1.15 MB.)
func TestSmallBatchesStaySmall(t *testing.T) {
	defer batchSizeHint.Store(batchSizeHint.Load())
	batchSizeHint.Store(maxBatchHint)
	val := bytes.Repeat([]byte{'v'}, 100)
	check := func(what string, b *Batch) {
		t.Helper()
		if c, l := cap(b.repr), len(b.repr); c > max(2*l, firstBatchCap)+entryRoom+len(val) {
			t.Errorf("%s: capacity %d for %d bytes under a hint of %d", what, c, l, maxBatchHint)
		}
	}
	for _, n := range []int{1, 5, 100} {
		b := new(Batch)
		for i := 0; i < n; i++ {
			b.Put(fmt.Appendf(nil, "%016d", i), val)
		}
		check(fmt.Sprintf("%d puts", n), b)
	}
	b := new(Batch)
	b.DeleteRange([]byte("a"), []byte("b"))
	b.Put([]byte("k"), []byte("v"))
	check("a DeleteRange and a put", b)

	// A batch whose capacity has passed an eighth of the hint jumps to
	// it at its next growth: by half the hint it holds the hint's size
	// (doubling alone would have reached about 0.7 of it).
	b = new(Batch)
	for b.Size() < maxBatchHint/2 {
		b.Put(fmt.Appendf(nil, "%016d", b.Len()), val)
	}
	if c := cap(b.repr); c < maxBatchHint {
		t.Errorf("a batch of %d bytes has capacity %d; the hint is %d", b.Size(), c, maxBatchHint)
	}
}

// TestHugeBatchGrowthTapers: past taperBatchGrowth a batch grows by half,
// not by doubling, nor by so little that it copies itself many times.
func TestHugeBatchGrowthTapers(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates about 60 MB")
	}
	defer batchSizeHint.Store(batchSizeHint.Load())
	batchSizeHint.Store(minBatchHint)
	val := bytes.Repeat([]byte{'v'}, 64<<10)
	b := new(Batch)
	for b.Size() < 2*taperBatchGrowth {
		before := cap(b.repr)
		b.Put([]byte("k"), val)
		c := cap(b.repr)
		if c == before || before < taperBatchGrowth {
			continue
		}
		// The allocator rounds up to whole pages.
		if c < before*3/2 || c > before*3/2+len(val)+64<<10 {
			t.Fatalf("grew from %d to %d past %d, want about half as much again", before, c, taperBatchGrowth)
		}
	}
}

// TestBatchGrow: a batch grown ahead to its size takes its entries without
// growing again, and encodes as one that grew as it went.
func TestBatchGrow(t *testing.T) {
	const n = 5000
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "key%06d", i)
	}
	val := bytes.Repeat([]byte{'v'}, 50)
	var plain Batch
	for _, k := range keys {
		plain.Put(k, val)
	}
	var b Batch
	b.Grow(0)
	b.Grow(-5)
	if cap(b.repr) != 0 {
		t.Fatalf("Grow(0) and Grow(-5) allocated %d bytes", cap(b.repr))
	}
	b.Grow(plain.Size() - batchrepr.HeaderLen) // the entries' bytes
	c := cap(b.repr)
	for _, k := range keys {
		b.Put(k, val)
	}
	if cap(b.repr) != c {
		t.Fatalf("the batch grew from %d to %d after Grow", c, cap(b.repr))
	}
	if !bytes.Equal(b.repr, plain.repr) {
		t.Fatal("a batch grown ahead encodes differently")
	}
}
