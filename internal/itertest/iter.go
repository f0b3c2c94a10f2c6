// Package itertest holds test helpers shared by the iterator packages: a
// slice-backed iterator built from readable strings such as "a#5,PUT:value",
// with fault injection and a strict mode that catches callers relying on
// undefined behaviour, and a driver (Run) that applies random operations to
// any iterator and to a sorted model and reports the first difference.
//
// Only tests import this package. Nothing in it is safe for concurrent use.
package itertest

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/shale-db/shale/internal/ikey"
	"github.com/shale-db/shale/internal/iterator"
)

// KV is one entry: a key and its value.
type KV struct {
	Key, Value []byte
}

// specRE matches "ukey#seq,KIND" with an optional ":value"; the user key
// is the shortest prefix that leaves a well-formed rest.
var specRE = regexp.MustCompile(`^(?s)(.*?)#([0-9]+),(PUT|DEL)(?::(.*))?$`)

// Parse turns specs such as "a#5,PUT:v1" or "b#3,DEL" into entries, in the
// order given. The text after the ':' that follows the kind is the value
// (empty if absent). It panics on a malformed spec, a bug in the test.
func Parse(specs ...string) []KV {
	kvs := make([]KV, 0, len(specs))
	for _, s := range specs {
		m := specRE.FindStringSubmatch(s)
		if m == nil {
			panic("itertest: malformed spec " + strconv.Quote(s))
		}
		seq, err := strconv.ParseUint(m[2], 10, 64)
		if err != nil || seq > ikey.MaxSeq {
			panic("itertest: bad sequence number in " + strconv.Quote(s))
		}
		kind := ikey.KindSet
		if m[3] == "DEL" {
			kind = ikey.KindDelete
		}
		kvs = append(kvs, KV{ikey.Make([]byte(m[1]), seq, kind), []byte(m[4])})
	}
	return kvs
}

// Format prints internal-key entries as Parse reads them, for messages.
func Format(kvs []KV) string {
	var b strings.Builder
	for i, kv := range kvs {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s:%s", ikey.String(kv.Key), kv.Value)
	}
	return b.String()
}

// Iter is a slice-backed internal iterator over entries sorted by
// ikey.Compare (it does not sort them). Its position is an index i from -1
// (before the first entry) to len (after the last): Next from -1 goes to the
// first entry and Prev from len to the last one, as dbiter, merging and
// leveliter also do.
type Iter struct {
	kvs        []KV
	i          int
	positioned bool
	err        error

	budget  int // positioning calls left before failing with failErr; < 0: never
	failErr error

	strict    bool
	violation error
	closes    int
}

var _ iterator.Iterator = (*Iter)(nil)

// New returns an iterator over kvs, which must be sorted by ikey.Compare.
// The iterator keeps kvs.
func New(kvs []KV) *Iter { return &Iter{kvs: kvs, i: -1, budget: -1} }

// FromStrings is New(Parse(specs...)).
func FromStrings(specs ...string) *Iter { return New(Parse(specs...)) }

// FailAfter makes the iterator fail with err at the (n+1)th positioning
// call from now: that call and every later one return false, and Err and
// Close return err.
func (it *Iter) FailAfter(n int, err error) *Iter {
	it.budget, it.failErr = n, err
	return it
}

// Strict makes the iterator record a violation (see Violation) when it is
// used beyond what the iterator contract defines: Next or Prev while not
// at an entry, Key or Value while not at an entry, any use after Close.
func (it *Iter) Strict() *Iter {
	it.strict = true
	return it
}

// Violation returns the first contract violation seen in strict mode.
func (it *Iter) Violation() error { return it.violation }

// Closes returns how many times Close was called.
func (it *Iter) Closes() int { return it.closes }

func (it *Iter) violate(format string, args ...any) {
	if it.strict && it.violation == nil {
		it.violation = fmt.Errorf("itertest: "+format, args...)
	}
}

func (it *Iter) valid() bool { return it.positioned && it.i >= 0 && it.i < len(it.kvs) }

// step does the bookkeeping shared by positioning calls; false means the
// call must fail.
func (it *Iter) step(op string) bool {
	if it.closes > 0 {
		it.violate("%s after Close", op)
	}
	if it.err != nil {
		return false
	}
	if it.budget == 0 {
		it.err = it.failErr
		return false
	}
	if it.budget > 0 {
		it.budget--
	}
	return true
}

func (it *Iter) seek(i int) bool {
	it.i, it.positioned = i, true
	return it.valid()
}

// search returns the index of the first entry >= key.
func (it *Iter) search(key []byte) int {
	lo, hi := 0, len(it.kvs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if ikey.Compare(it.kvs[m].Key, key) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// First implements iterator.Iterator.
func (it *Iter) First() bool { return it.step("First") && it.seek(0) }

// Last implements iterator.Iterator.
func (it *Iter) Last() bool { return it.step("Last") && it.seek(len(it.kvs)-1) }

// SeekGE implements iterator.Iterator.
func (it *Iter) SeekGE(key []byte) bool { return it.step("SeekGE") && it.seek(it.search(key)) }

// SeekLT implements iterator.Iterator.
func (it *Iter) SeekLT(key []byte) bool { return it.step("SeekLT") && it.seek(it.search(key)-1) }

// Next implements iterator.Iterator.
func (it *Iter) Next() bool {
	if !it.valid() {
		it.violate("Next while not at an entry (i=%d)", it.i)
	}
	if !it.step("Next") || !it.positioned {
		return false
	}
	return it.seek(min(it.i+1, len(it.kvs)))
}

// Prev implements iterator.Iterator.
func (it *Iter) Prev() bool {
	if !it.valid() {
		it.violate("Prev while not at an entry (i=%d)", it.i)
	}
	if !it.step("Prev") || !it.positioned {
		return false
	}
	return it.seek(max(it.i-1, -1))
}

// Key implements iterator.Iterator.
func (it *Iter) Key() []byte {
	if !it.valid() || it.err != nil {
		it.violate("Key while not at an entry")
		return nil
	}
	return it.kvs[it.i].Key
}

// Value implements iterator.Iterator.
func (it *Iter) Value() []byte {
	if !it.valid() || it.err != nil {
		it.violate("Value while not at an entry")
		return nil
	}
	return it.kvs[it.i].Value
}

// Err implements iterator.Iterator.
func (it *Iter) Err() error { return it.err }

// Close implements iterator.Iterator; it counts calls.
func (it *Iter) Close() error {
	it.closes++
	return it.err
}
