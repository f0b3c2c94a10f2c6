package merging

import "github.com/shale-db/shale/internal/ikey"

// less orders the heap: by internal key, then by source index, ascending
// while moving forward and descending while moving backward, so the heap
// top is always the next entry in merged order.
func (m *Iter) less(a, b *source) bool {
	c := ikey.Compare(a.key, b.key)
	if c == 0 {
		c = a.idx - b.idx
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
