package memtable

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/shale-db/shale/internal/ikey"
)

// TestLessIsIkeyCompare: the comparison on entries, which reads the cached
// 16-byte prefixes first and the key bytes only past them, orders entries
// exactly as ikey.Compare orders their internal keys. Keys are drawn from
// few byte values, zero among them, and lengths around 8 and 16, where
// zero padding could make a short key look equal to a longer one.
func TestLessIsIkeyCompare(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 8))
	m := New()
	randKey := func() []byte {
		k := make([]byte, rng.IntN(25))
		for i := range k {
			k[i] = []byte{0, 0, 1, 255}[rng.IntN(4)]
		}
		return k
	}
	for range 200_000 {
		a, b := randKey(), randKey()
		if rng.IntN(4) == 0 {
			b = bytes.Clone(a)
		}
		ea := m.makeEntry(uint64(rng.IntN(4)), ikey.KindSet, a, []byte("v"))
		eb := m.makeEntry(uint64(rng.IntN(4)), ikey.KindSet, b, nil)
		want := ikey.Compare(ea.key(), eb.key()) < 0
		if got := less(ea, eb); got != want {
			t.Fatalf("less(%x#%d, %x#%d) = %v, ikey.Compare says %v", a, ea.trailer>>8, b, eb.trailer>>8, got, want)
		}
		if !bytes.Equal(ea.ukey(), a) || !bytes.Equal(ea.value(), []byte("v")) || len(eb.value()) != 0 {
			t.Fatalf("entry of %x: ukey %x value %q", a, ea.ukey(), ea.value())
		}
		// A pivot compares as the entry it stands for.
		if p := makePivot(a, ea.trailer); less(p, ea) || less(ea, p) {
			t.Fatalf("pivot of %x is not equal to its entry", a)
		}
	}
}
