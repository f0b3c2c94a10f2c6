package main

import (
	"bytes"
	"fmt"

	"github.com/shale-db/shale"
)

// crashModel knows what the writers of every cycle so far did: for writer
// g of cycle c, acked[c][g] is the index of its last acknowledged
// operation (-1: none). Operations up to it must be in the database; the
// one after it was under way when the writer was killed and may or may not
// be (but a batch wholly or not at all); later ones never began.
type crashModel struct {
	seed    uint64
	writers int
	acked   [][]int
}

// keyWant is what the verifier knows about one key: the value its put
// wrote and the state of the operations that put and deleted it.
type keyWant struct {
	value []byte
	put   opState
	del   opState // opNever if no operation deletes it
	op    opRef   // the operation that put it
}

// opRef names one operation.
type opRef struct{ cycle, g, i int }

func (r opRef) String() string {
	return fmt.Sprintf("cycle %d writer %d operation %d", r.cycle, r.g, r.i)
}

// opState is how far an operation got before the kill.
type opState uint8

const (
	opNever opState = iota // never began (or does not exist)
	opMaybe                // under way at the kill: either outcome is right
	opDone                 // acknowledged: it must have happened
)

// verifyResult is what a verification found.
type verifyResult struct {
	acked    int      // operations acknowledged, all cycles
	lost     int      // acknowledged operations whose effect is missing
	bad      int      // other violations: phantom keys, wrong values, torn batches
	problems []string // the first few, for the report
}

func (r *verifyResult) problem(lost bool, format string, args ...any) {
	if lost {
		r.lost++
	} else {
		r.bad++
	}
	if len(r.problems) < 10 {
		r.problems = append(r.problems, fmt.Sprintf(format, args...))
	}
}

// expectations regenerates every cycle's operations up to the one under
// way at the kill. It returns what each key should be, and the batches
// that were under way.
func (m *crashModel) expectations() (map[string]*keyWant, []crashOp, int) {
	want := map[string]*keyWant{}
	var pending []crashOp
	acked := 0
	for c, last := range m.acked {
		for g := range m.writers {
			s := newOpStream(m.seed, c, g)
			acked += last[g] + 1
			for i := 0; i <= last[g]+1; i++ {
				st := opDone
				if i == last[g]+1 {
					st = opMaybe
				}
				op := s.next()
				for j, k := range op.keys {
					want[string(k)] = &keyWant{value: op.values[j], put: st, op: opRef{c, g, i}}
				}
				if op.del != nil {
					want[string(op.del)].del = st
				}
				if st == opMaybe && op.kind == opBatch {
					pending = append(pending, op)
				}
			}
		}
	}
	return want, pending, acked
}

// verify compares the database with the model.
func (m *crashModel) verify(db *shale.DB) (*verifyResult, error) {
	want, pending, acked := m.expectations()
	r := &verifyResult{acked: acked}
	present := map[string]bool{}
	for e, err := range db.All(nil) {
		if err != nil {
			return nil, err
		}
		k := string(e.Key)
		w := want[k]
		switch {
		case w == nil:
			r.problem(false, "key %s is in the database, but no write that began wrote it", escape(e.Key))
		case !bytes.Equal(e.Value, w.value):
			r.problem(w.put == opDone, "key %s has a wrong value (%d bytes, want %d)", escape(e.Key), len(e.Value), len(w.value))
		}
		present[k] = true
	}
	for k, w := range want {
		checkKey(r, k, w, present[k])
	}
	for _, op := range pending {
		checkBatch(r, op, present)
	}
	return r, nil
}

// checkKey checks one key's presence against what its put and delete did.
func checkKey(r *verifyResult, k string, w *keyWant, present bool) {
	switch {
	case present && w.del == opDone:
		r.problem(true, "key %s was deleted by an acknowledged write, but is present", escape([]byte(k)))
	case !present && w.put == opDone && w.del == opNever:
		r.problem(true, "key %s, written by acknowledged %s, is missing", escape([]byte(k)), w.op)
	}
}

// checkBatch checks that a batch under way at the kill left all of its
// effects or none.
func checkBatch(r *verifyResult, op crashOp, present map[string]bool) {
	applied := present[string(op.keys[0])]
	for _, k := range op.keys[1:] {
		if present[string(k)] != applied {
			r.problem(false, "batch with key %s was applied in part: key %s is %s", escape(op.keys[0]), escape(k), presence(!applied))
			return
		}
	}
	if op.del != nil && present[string(op.del)] == applied {
		r.problem(false, "batch with key %s was applied in part: its delete of %s is %s", escape(op.keys[0]), escape(op.del),
			map[bool]string{true: "missing", false: "applied"}[applied])
	}
}

func presence(p bool) string {
	if p {
		return "present"
	}
	return "missing"
}
