package merging

import (
	"cmp"

	"github.com/shale-db/shale/internal/ikey"
)

// less orders the heap: by internal key, then by source index, ascending
// while moving forward and descending while moving backward, so the heap
// top is always the next entry in merged order.
func (m *Iter) less(a, b *source) bool {
	var c int
	switch {
	case a.p0 != b.p0:
		c = cmp.Compare(a.p0, b.p0)
	case a.p1 != b.p1:
		c = cmp.Compare(a.p1, b.p1)
	default:
		// The first 16 bytes of the user keys are equal: the keys
		// decide, then the sources.
		if c = ikey.Compare(a.key, b.key); c == 0 {
			c = a.idx - b.idx
		}
	}
	if m.state == reverse {
		return c > 0
	}
	return c < 0
}

// down restores the heap property below i after heap[i] changed.
func (m *Iter) down(i int) {
	h := m.heap
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		j := l
		if r := l + 1; r < n && m.less(h[r], h[l]) {
			j = r
		}
		if !m.less(h[j], h[i]) {
			return
		}
		h[i], h[j] = h[j], h[i]
		i = j
	}
}
