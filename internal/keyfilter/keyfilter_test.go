package keyfilter

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestKeyFilter checks the filter alone: no false negatives, false
// positives near what its doc claims at the load it was sized for, and
// every key "may be held" once it is full.
func TestKeyFilter(t *testing.T) {
	const buffer = 8 << 20
	f := New(buffer)
	if got, want := len(f.words), buffer/filterBytesPerWord; got != want {
		t.Fatalf("%d words for a %d-byte buffer, want %d", got, buffer, want)
	}
	// Entries of 64 bytes with their overhead fill the buffer with 4 a
	// word, the load the probes were chosen for.
	n := buffer / 64
	rng := rand.New(rand.NewPCG(3, 4))
	key := func() []byte { return fmt.Appendf(nil, "%016x", rng.Uint64()) }
	held := make([][]byte, n)
	for i := range held {
		held[i] = key()
		f.Add(held[i])
	}
	for _, k := range held {
		if !f.MayContain(k) {
			t.Fatalf("%s was added but the filter says it is not held", k)
		}
	}
	const probes = 200_000
	fp := 0
	for range probes {
		if f.MayContain(key()) {
			fp++
		}
	}
	if rate := float64(fp) / probes; rate > 0.02 {
		t.Fatalf("false positives %.2f%% at 4 keys a word, want under 2%%", rate*100)
	}
	t.Logf("false positives at 4 keys a word: %.2f%%", float64(fp)/probes*100)

	small := New(1)
	if len(small.words) != minFilterWords {
		t.Fatalf("%d words for a 1-byte buffer, want the minimum %d", len(small.words), minFilterWords)
	}
	for i := range small.limit {
		small.Add(fmt.Appendf(nil, "k%d", i))
	}
	if small.added != small.limit {
		t.Fatalf("added %d keys, counted %d", small.limit, small.added)
	}
	if small.full.Load() {
		t.Fatalf("full at its limit of %d entries", small.limit)
	}
	small.Add([]byte("one more"))
	if !small.full.Load() || !small.MayContain([]byte("never added")) {
		t.Fatal("past its limit the filter still answers")
	}
	if New(0) != nil || New(1<<40) == nil || len(New(1<<40).words) != maxFilterWords {
		t.Fatal("sizes at the bounds are wrong")
	}
}
