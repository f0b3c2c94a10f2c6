package memtable

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/shale-db/shale/internal/ikey"
)

// TestSizedMemtableAgainstPlain runs the same adds through a memtable
// with a filter (whose filter fills up midway) and one without, and
// compares every Get, of held keys, deleted ones and keys never written.
func TestSizedMemtableAgainstPlain(t *testing.T) {
	m, want := NewSized(nil, 1), New()
	limit := int(m.filter.Limit())
	rng := rand.New(rand.NewPCG(5, 6))
	var keys [][]byte
	for i := range 2 * limit {
		k := fmt.Appendf(nil, "key%07d", rng.IntN(4*limit))
		kind := ikey.KindSet
		if i%7 == 0 {
			kind = ikey.KindDelete
		}
		m.Add(uint64(i+1), kind, k, k)
		want.Add(uint64(i+1), kind, k, k)
		keys = append(keys, k, fmt.Appendf(nil, "absent%d", i))
		if i == limit/2 || i == 2*limit-1 {
			if full := m.filter.Full(); full != (i > limit) {
				t.Fatalf("after %d adds the filter's full is %v", i+1, full)
			}
			sameMemtable(t, m, want, keys, ikey.MaxSeq)
			sameMemtable(t, m, want, keys, uint64(i/2))
		}
	}
}

// BenchmarkGetAbsent looks up keys a memtable of 60,000 entries does not
// hold (16-byte keys, as db_bench's), with and without the filter.
func BenchmarkGetAbsent(b *testing.B) {
	for _, sized := range []bool{false, true} {
		b.Run(fmt.Sprintf("filter=%v", sized), func(b *testing.B) {
			m := New()
			if sized {
				m = NewSized(nil, 8<<20)
			}
			rng := rand.New(rand.NewPCG(1, 2))
			for i := range 60_000 {
				m.Add(uint64(i+1), ikey.KindSet, fmt.Appendf(nil, "%016d", 2*rng.IntN(1_000_000)), benchValue)
			}
			keys := make([][]byte, 4096)
			for i := range keys {
				keys[i] = fmt.Appendf(nil, "%016d", 2*rng.IntN(1_000_000)+1)
			}
			cpu := startCPU(b)
			for i := 0; i < b.N; i++ {
				if _, found, _ := m.Get(keys[i&4095], ikey.MaxSeq); found {
					b.Fatal("found a key never added")
				}
			}
			cpu.stop(0)
		})
	}
}

// TestReadOften checks the count behind ReadOften: Gets, whether or not
// the memtable holds their key or keeps a filter, up to readOftenGets.
func TestReadOften(t *testing.T) {
	for _, m := range []*Memtable{New(), NewSized(nil, 1<<20)} {
		m.Add(1, ikey.KindSet, []byte("held"), nil)
		for i := range readOftenGets - 1 {
			k := []byte("held")
			if i%2 == 1 {
				k = []byte("absent")
			}
			m.Get(k, ikey.MaxSeq)
		}
		if m.ReadOften() {
			t.Fatalf("read often after %d Gets", readOftenGets-1)
		}
		m.Get([]byte("absent"), ikey.MaxSeq)
		m.Get([]byte("absent"), ikey.MaxSeq)
		if !m.ReadOften() || m.gets.Load() != readOftenGets {
			t.Fatalf("after %d Gets: ReadOften %v, count %d", readOftenGets+1, m.ReadOften(), m.gets.Load())
		}
		if m.Filtered() != (m.filter != nil) {
			t.Fatal("Filtered disagrees with the filter")
		}
	}
}
