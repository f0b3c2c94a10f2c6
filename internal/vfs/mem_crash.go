package vfs

import (
	"maps"
	"math/rand/v2"
	"slices"
)

// CrashMode says what a crash does to the bytes appended to a file and never
// synced; see the MemFS doc for the exact model.
type CrashMode uint8

// The crash modes of CrashCloneWith.
const (
	// CrashDropUnsynced loses every unsynced byte, as CrashClone does.
	CrashDropUnsynced CrashMode = iota
	// CrashKeepPrefix keeps a prefix of each file's unsynced appends.
	CrashKeepPrefix
	// CrashZeroTail keeps a prefix of each file's unsynced appends, then
	// zeros where the rest of a longer prefix was.
	CrashZeroTail
	// CrashAny chooses one of the modes above for each file.
	CrashAny
	// NumCrashModes is the number of modes above.
	NumCrashModes
)

var crashModeNames = [NumCrashModes]string{"drop", "prefix", "zeros", "any"}

// String returns a short name for the mode: drop, prefix, zeros or any.
func (c CrashMode) String() string {
	if c < NumCrashModes {
		return crashModeNames[c]
	}
	return "crashmode?"
}

// CrashClone returns a new MemFS holding only what was durable in m; see
// the MemFS doc for the model. It is CrashCloneWith(CrashDropUnsynced, 0).
func (m *MemFS) CrashClone() *MemFS { return m.CrashCloneWith(CrashDropUnsynced, 0) }

// CrashCloneWith returns a new MemFS holding what a crash in the given mode
// leaves of m, with the choices drawn from seed; see the MemFS doc for the
// model.
func (m *MemFS) CrashCloneWith(mode CrashMode, seed uint64) *MemFS {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := NewMem()
	cr := &crasher{
		mode: mode,
		rng:  rand.New(rand.NewPCG(seed, seed^0x6a09e667f3bcc909)),
		seen: map[*memNode]*memNode{},
	}
	c.mu.root = cr.copy(m.mu.root)
	return c
}

// crasher copies what survives a crash.
type crasher struct {
	mode CrashMode
	rng  *rand.Rand
	// seen maps copied nodes to their copies, so that a file durable under
	// two names stays one file in the copy.
	seen map[*memNode]*memNode
}

// copy copies the durable part of n: its durable entries, visited in name
// order so that the draws repeat, or its contents after the crash.
func (cr *crasher) copy(n *memNode) *memNode {
	if c, ok := cr.seen[n]; ok {
		return c
	}
	if !n.dir {
		data := cr.contents(n)
		c := &memNode{data: data, synced: data[:len(data):len(data)]}
		cr.seen[n] = c
		return c
	}
	c := newDir()
	cr.seen[n] = c
	for _, name := range slices.Sorted(maps.Keys(n.durable)) {
		cc := cr.copy(n.durable[name])
		c.children[name] = cc
		c.durable[name] = cc
	}
	return c
}

// contents returns what file n holds after the crash: its durable contents
// and, as the mode draws, part of its unsynced appended bytes.
func (cr *crasher) contents(n *memNode) []byte {
	data := slices.Clone(n.synced)
	if cr.mode == CrashDropUnsynced || n.rewritten || len(n.data) <= len(n.synced) {
		return data
	}
	appended := n.data[len(n.synced):]
	mode := cr.mode
	if mode == CrashAny {
		mode = CrashMode(cr.rng.IntN(3))
	}
	k := cr.rng.IntN(len(appended) + 1)
	switch mode {
	case CrashKeepPrefix:
		data = append(data, appended[:k]...)
	case CrashZeroTail:
		j := cr.sectorCut(len(data), k)
		data = append(data, appended[:j]...)
		data = append(data, make([]byte, k-j)...)
	}
	return data
}

// CrashSectorSize is the unit in which CrashZeroTail keeps data: what a
// disk writes whole.
const CrashSectorSize = 512

// sectorCut returns j drawn uniformly from the values in 0..k at which
// a file of size+j bytes ends on a sector boundary, and 0.
func (cr *crasher) sectorCut(size, k int) int {
	first := CrashSectorSize - size%CrashSectorSize // the first such j above 0
	n := 0
	if first <= k {
		n = 1 + (k-first)/CrashSectorSize
	}
	if i := cr.rng.IntN(n + 1); i > 0 {
		return first + (i-1)*CrashSectorSize
	}
	return 0
}
