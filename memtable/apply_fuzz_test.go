package memtable

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/shale-db/shale/internal/batchrepr"
	"github.com/shale-db/shale/internal/ikey"
)

// FuzzApply applies arbitrary bytes as a batch to a memtable that already
// holds a few entries, with sortApplyMin and inOrderMin lowered so that
// short inputs are sorted and, when they ascend from above what is held,
// appended, or appended as they are decoded when their keys already
// ascend (applyInOrder). Apply must not panic. If it fails, the memtable
// is as it was. If it succeeds,
// its entries are those of a memtable given the same entries one by one
// with Add, forward and backward, and every key's Get agrees.
func FuzzApply(f *testing.F) {
	key := func(i int) []byte { return fmt.Appendf(nil, "k%03d", i) }
	var inOrder, random, mixed []byte
	for i := range 20 {
		inOrder = batchrepr.AppendPut(inOrder, key(200+i), []byte("v"))
		random = batchrepr.AppendPut(random, key((i*37)%50), []byte("w"))
		if i%3 == 0 {
			mixed = batchrepr.AppendDelete(mixed, key(i))
		} else {
			mixed = batchrepr.AppendPut(mixed, key(i), bytes.Repeat([]byte{'x'}, i))
		}
	}
	withRange := batchrepr.AppendRangeDelete(bytes.Clone(mixed), key(3), key(9))
	openEnd := batchrepr.AppendPut(batchrepr.AppendPut(nil, key(1), []byte("a")), key(2), []byte("b"))
	openEnd = batchrepr.AppendRangeDelete(openEnd, key(1), nil) // the engine gives every one an end
	truncated := mixed[:len(mixed)-3]
	for _, seed := range [][]byte{inOrder, random, mixed, withRange, nil, inOrder[:len(inOrder)/2], openEnd, truncated} {
		f.Add(seed, uint8(0))
		f.Add(seed, uint8(5))
	}
	f.Fuzz(func(t *testing.T, repr []byte, held uint8) {
		defer func(old int, oldInOrder uint32) { sortApplyMin, inOrderMin = old, oldInOrder }(sortApplyMin, inOrderMin)
		sortApplyMin, inOrderMin = 4, 4
		m, want := NewSized(nil, 1<<20), New()
		defer m.Unref()
		defer want.Unref()
		for i := range int(held % 16) {
			m.Add(uint64(i+1), ikey.KindSet, key(i*7), []byte("held"))
			want.Add(uint64(i+1), ikey.KindSet, key(i*7), []byte("held"))
		}
		const seq = 100
		if err := m.Apply(repr, seq); err != nil {
			if m.Len() != want.Len() || m.ApproximateSize() != want.ApproximateSize() {
				t.Fatalf("a failed Apply (%v) changed the memtable: %d entries, want %d", err, m.Len(), want.Len())
			}
			// Nor may it leave anything for the next Apply to insert.
			next := batchrepr.AppendPut(nil, key(500), []byte("after"))
			if err := m.Apply(next, seq+1000); err != nil {
				t.Fatal(err)
			}
			want.Add(seq+1000, ikey.KindSet, key(500), []byte("after"))
			sameMemtable(t, m, want, [][]byte{key(500), key(999)}, ikey.MaxSeq)
			return
		}
		r := batchrepr.NewReader(repr)
		var keys [][]byte
		rdels := 0
		for s := uint64(seq); ; s++ {
			kind, k, v, ok := r.Next()
			if !ok {
				break
			}
			if kind == ikey.KindRangeDelete {
				rdels++ // kept apart (RangeDels), by a path the sort does not touch
				continue
			}
			want.Add(s, kind, k, v)
			keys = append(keys, k)
		}
		if m.Len() != want.Len()+rdels || m.Deletions() != want.Deletions()+rdels {
			t.Fatalf("Len %d, Deletions %d; want %d and %d, with %d range deletions",
				m.Len(), m.Deletions(), want.Len()+rdels, want.Deletions()+rdels, rdels)
		}
		keys = append(keys, key(999), []byte("absent")) // Gets through m's filter
		sameMemtable(t, m, want, keys, ikey.MaxSeq)
	})
}
