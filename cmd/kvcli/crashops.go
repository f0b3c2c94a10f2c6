package main

import (
	"fmt"
	"math/rand/v2"
)

// The crash test's workload. Writer goroutine g of cycle c performs the
// operations of its opStream, in order, one at a time, and acknowledges
// each after the write returned. The stream is a pure function of (seed,
// c, g), so the verifier regenerates exactly what the writer did.

// opKind is what a crash test operation does.
type opKind uint8

const (
	opPut    opKind = iota // one Put of a fresh key
	opBatch                // a Batch: puts of fresh keys, maybe a delete
	opDelete               // one Delete of a key an earlier opPut wrote
)

// crashOp is one write of the crash test's workload.
type crashOp struct {
	kind   opKind
	keys   [][]byte // keys put, each written exactly once in the whole test
	values [][]byte
	del    []byte // key deleted, or nil; every key is deleted at most once
	sync   bool   // Sync rather than NoSync
}

// opStream generates the operations of one writer in one cycle.
type opStream struct {
	rng   *rand.Rand
	cycle int
	g     int
	i     int      // index of the next operation
	live  [][]byte // keys of earlier opPut operations not yet deleted
}

func newOpStream(seed uint64, cycle, g int) *opStream {
	return &opStream{rng: rand.New(rand.NewPCG(seed, uint64(cycle)<<32|uint64(g))), cycle: cycle, g: g}
}

// next returns operation number s.i and advances.
func (s *opStream) next() crashOp {
	op := crashOp{sync: s.rng.IntN(4) == 0}
	base := fmt.Sprintf("c%03d/g%02d/%07d", s.cycle, s.g, s.i)
	s.i++
	switch r := s.rng.IntN(10); {
	case r < 1 && len(s.live) > 0:
		op.kind = opDelete
		op.del = s.takeLive()
	case r < 3:
		op.kind = opBatch
		n := 2 + s.rng.IntN(9)
		for j := range n {
			k := []byte(fmt.Sprintf("%s/%02d", base, j))
			op.keys = append(op.keys, k)
			op.values = append(op.values, s.value(k))
		}
		if len(s.live) > 0 && s.rng.IntN(2) == 0 {
			op.del = s.takeLive()
		}
	default:
		op.kind = opPut
		k := []byte(base)
		op.keys = [][]byte{k}
		op.values = [][]byte{s.value(k)}
		s.live = append(s.live, k)
	}
	return op
}

// takeLive removes and returns a random live key.
func (s *opStream) takeLive() []byte {
	j := s.rng.IntN(len(s.live))
	k := s.live[j]
	s.live[j] = s.live[len(s.live)-1]
	s.live = s.live[:len(s.live)-1]
	return k
}

// value returns a value for key: the key, then bytes of every kind (binary
// included). Most are short; one in fifty is long enough to span log
// blocks.
func (s *opStream) value(key []byte) []byte {
	n := 8 + s.rng.IntN(200)
	if s.rng.IntN(50) == 0 {
		n = 2000 + s.rng.IntN(40000)
	}
	v := make([]byte, 0, len(key)+1+n)
	v = append(v, key...)
	v = append(v, '=')
	x := s.rng.Uint64()
	for range n {
		x = x*6364136223846793005 + 1442695040888963407
		v = append(v, byte(x>>56))
	}
	return v
}
