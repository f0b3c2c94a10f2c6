package itertest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/shale-db/shale/internal/iterator"
)

// Config says how Run draws and prints operations.
type Config struct {
	// Cmp orders keys; want is sorted by it.
	Cmp func(a, b []byte) int
	// SeekKey draws a seek target.
	SeekKey func(rng *rand.Rand) []byte
	// FormatKey prints a key in messages (default %q).
	FormatKey func([]byte) string
	// Ops is the number of operations to apply.
	Ops int
}

// model is the reference: a position over want, with the same index rule
// as Iter (-1 before the first entry, len after the last).
type model struct {
	want       []KV
	cmp        func(a, b []byte) int
	i          int
	positioned bool
}

func (m *model) valid() bool { return m.positioned && m.i >= 0 && m.i < len(m.want) }

func (m *model) set(i int) bool {
	m.i, m.positioned = i, true
	return m.valid()
}

func (m *model) search(k []byte) int {
	lo, hi := 0, len(m.want)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if m.cmp(m.want[mid].Key, k) < 0 {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

func (m *model) next() bool {
	if !m.positioned {
		return false
	}
	return m.set(min(m.i+1, len(m.want)))
}

func (m *model) prev() bool {
	if !m.positioned {
		return false
	}
	return m.set(max(m.i-1, -1))
}

// Run applies cfg.Ops random operations (First, Last, SeekGE, SeekLT, Next,
// Prev, weighted toward steps so that direction changes are frequent) to it
// and to a model over want, which is sorted by cfg.Cmp and may hold equal
// keys. After every step it compares the result, Key and Value. Before any
// positioning call, Next and Prev must return false.
//
// It returns nil if everything matched. If the iterator fails (returns
// false with Err non-nil), Run checks that the failure is sticky and
// returns an error wrapping Err. Any difference from the model is an error
// naming the step and the operations that led to it.
func Run(rng *rand.Rand, it iterator.Iterator, want []KV, cfg Config) error {
	fk := cfg.FormatKey
	if fk == nil {
		fk = func(k []byte) string { return fmt.Sprintf("%q", k) }
	}
	m := &model{want: want, cmp: cfg.Cmp}
	var hist []string
	for step := 0; step < cfg.Ops; step++ {
		var got, exp bool
		var op string
		switch r := rng.IntN(20); {
		case r < 7:
			op, got, exp = "Next", it.Next(), m.next()
		case r < 14:
			op, got, exp = "Prev", it.Prev(), m.prev()
		case r < 16:
			k := cfg.SeekKey(rng)
			op, got, exp = "SeekGE("+fk(k)+")", it.SeekGE(k), m.set(m.search(k))
		case r < 18:
			k := cfg.SeekKey(rng)
			op, got, exp = "SeekLT("+fk(k)+")", it.SeekLT(k), m.set(m.search(k)-1)
		case r < 19:
			op, got, exp = "First", it.First(), m.set(0)
		default:
			op, got, exp = "Last", it.Last(), m.set(len(want)-1)
		}
		hist = append(hist, op)
		if err := it.Err(); err != nil {
			if got {
				return fmt.Errorf("step %d: %s returned true with Err %v\n%s", step, op, err, history(hist))
			}
			return checkSticky(it, err, step, hist)
		}
		if msg := compare(it, m, got, exp, fk); msg != "" {
			return fmt.Errorf("step %d: %s: %s\n%s", step, op, msg, history(hist))
		}
	}
	return nil
}

func compare(it iterator.Iterator, m *model, got, exp bool, fk func([]byte) string) string {
	if got != exp {
		if exp {
			return fmt.Sprintf("got false, want %s", fk(m.want[m.i].Key))
		}
		return fmt.Sprintf("got %s, want false (model index %d of %d)", fk(it.Key()), m.i, len(m.want))
	}
	if !got {
		return ""
	}
	w := m.want[m.i]
	if !bytes.Equal(it.Key(), w.Key) || !bytes.Equal(it.Value(), w.Value) {
		return fmt.Sprintf("got %s=%q, want %s=%q", fk(it.Key()), it.Value(), fk(w.Key), w.Value)
	}
	return ""
}

// checkSticky verifies that a failed iterator stays failed.
func checkSticky(it iterator.Iterator, err error, step int, hist []string) error {
	ops := []func() bool{it.Next, it.Prev, it.First, it.Last}
	for i, op := range ops {
		if op() || it.Err() == nil {
			return fmt.Errorf("step %d: iterator failed with %v, but operation %d after it succeeded or cleared Err\n%s",
				step, err, i, history(hist))
		}
	}
	return fmt.Errorf("itertest: iterator failed at step %d: %w", step, err)
}

func history(hist []string) string {
	if len(hist) > 24 {
		hist = hist[len(hist)-24:]
	}
	return "last operations: " + strings.Join(hist, " ")
}
