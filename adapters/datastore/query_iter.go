package datastore

import (
	"bytes"
	"context"
	"sync"

	"github.com/cockroachdb/errors"
	dsq "github.com/ipfs/go-datastore/query"
	"github.com/shale-db/shale"
)

// rangeIter is what a query uses of a *shale.Iterator. Key and Value are
// valid until the next move or Close.
type rangeIter interface {
	First() bool
	Last() bool
	Next() bool
	Prev() bool
	Key() []byte
	Value() []byte
	Err() error
	Close() error
}

// ctxCheckEvery is how many entries a query or a check reads between two
// looks at its context while it reads without returning a result.
const ctxCheckEvery = 1024

// queryIter produces the results of one query from an iterator over the
// query's range. Its next and close are called by one goroutine at a
// time (go-datastore's results call them from the reading goroutine, or
// from the one goroutine that collects them for Next's channel); a
// transaction also ends its open queries from its own goroutine, so mu,
// when set, is the transaction's lock, held around every use of it.
type queryIter struct {
	ctx context.Context
	q   dsq.Query
	p   plan
	mu  sync.Locker

	it    rangeIter // nil once released
	moved bool      // it has been positioned by First or Last
	// done is set when the results are over: next returns false.
	done bool
	// pending, if set, is returned as the next result, which is the last.
	pending error
	// skipped and sent count the entries that passed the filters and
	// were skipped for the offset, or returned.
	skipped, sent int
	// sorted holds the entries still to return, once the sorted path has
	// collected and sorted them (collected is then set).
	sorted    []dsq.Entry
	collected bool
	// onRelease, if set, is called once when it is released.
	onRelease func(*queryIter)
}

// newQueryIter plans q and opens the iterator over its range with open.
// It fails if the iterator cannot be made (the database is closed).
func newQueryIter(ctx context.Context, q dsq.Query, open func(*shale.IterOptions) rangeIter) (*queryIter, error) {
	qi := &queryIter{ctx: ctx, q: q, p: planQuery(q)}
	if qi.p.empty {
		qi.done = true
		return qi, nil
	}
	qi.it = open(qi.p.iterOptions())
	if err := qi.it.Err(); err != nil {
		_ = qi.it.Close()
		return nil, errors.Wrap(err, "datastore: query")
	}
	return qi, nil
}

// results returns the query's results; their Query is q as given.
func (qi *queryIter) results() dsq.Results {
	return dsq.ResultsFromIterator(qi.q, dsq.Iterator{Next: qi.next, Close: qi.close})
}

func (qi *queryIter) next() (dsq.Result, bool) {
	if qi.mu != nil {
		qi.mu.Lock()
		defer qi.mu.Unlock()
	}
	switch {
	case qi.pending != nil:
		err := qi.pending
		qi.pending = nil
		return qi.fail(err)
	case qi.done:
		return dsq.Result{}, false
	case qi.ctx.Err() != nil:
		return qi.fail(qi.ctx.Err())
	case qi.p.orders != nil:
		return qi.nextSorted()
	}
	return qi.nextStreamed()
}

// close ends the results early; it is safe to call more than once.
func (qi *queryIter) close() error {
	if qi.mu != nil {
		qi.mu.Lock()
		defer qi.mu.Unlock()
	}
	qi.done = true
	qi.release()
	return nil
}

// endLocked ends a query that still reads through its iterator: its next
// result is err. Called by a transaction, with its lock held, as it ends.
func (qi *queryIter) endLocked(err error) {
	if qi.it == nil {
		return
	}
	qi.release()
	if !qi.done {
		qi.pending = err
	}
}

// release closes the iterator, once.
func (qi *queryIter) release() {
	if qi.it == nil {
		return
	}
	_ = qi.it.Close() // its error, if any, was returned by Err
	qi.it = nil
	if qi.onRelease != nil {
		qi.onRelease(qi)
	}
}

// fail returns err as the last result.
func (qi *queryIter) fail(err error) (dsq.Result, bool) {
	qi.done = true
	qi.release()
	return dsq.Result{Error: err}, true
}

// finish ends the results after the iterator stopped: with its error, if
// it failed, else with no more results.
func (qi *queryIter) finish() (dsq.Result, bool) {
	if err := qi.it.Err(); err != nil {
		return qi.fail(errors.Wrap(err, "datastore: query"))
	}
	qi.done = true
	qi.release()
	return dsq.Result{}, false
}

// move positions the iterator at the next key in the plan's direction.
func (qi *queryIter) move() bool {
	if !qi.moved {
		qi.moved = true
		if qi.p.reverse {
			return qi.it.Last()
		}
		return qi.it.First()
	}
	if qi.p.reverse {
		return qi.it.Prev()
	}
	return qi.it.Next()
}

// nextStreamed returns the next entry in key order that passes the
// filters, past the offset and within the limit.
func (qi *queryIter) nextStreamed() (dsq.Result, bool) {
	if qi.q.Limit > 0 && qi.sent >= qi.q.Limit {
		qi.done = true
		qi.release()
		return dsq.Result{}, false
	}
	for n := 1; ; n++ {
		if n%ctxCheckEvery == 0 && qi.ctx.Err() != nil {
			return qi.fail(qi.ctx.Err())
		}
		if !qi.move() {
			return qi.finish()
		}
		e, ok, err := qi.entry(!qi.q.KeysOnly)
		if err != nil {
			return qi.fail(err)
		}
		if !ok {
			continue
		}
		if qi.skipped < qi.q.Offset {
			qi.skipped++
			continue
		}
		qi.sent++
		return dsq.Result{Entry: e}, true
	}
}

// nextSorted returns the next of the sorted entries, collecting and
// sorting them first.
func (qi *queryIter) nextSorted() (dsq.Result, bool) {
	if !qi.collected {
		qi.collected = true
		entries, err := qi.collect()
		if err != nil {
			return qi.fail(err)
		}
		if err := sortEntries(qi.p.orders, entries); err != nil {
			return qi.fail(err)
		}
		qi.sorted = window(entries, qi.q.Offset, qi.q.Limit)
		if qi.q.KeysOnly {
			for i := range qi.sorted {
				qi.sorted[i].Value = nil
			}
		}
	}
	if len(qi.sorted) == 0 {
		qi.done = true
		return dsq.Result{}, false
	}
	e := qi.sorted[0]
	qi.sorted[0] = dsq.Entry{}
	qi.sorted = qi.sorted[1:]
	return dsq.Result{Entry: e}, true
}

// collect reads every entry of the range that passes the filters, values
// included (orders may compare them), and releases the iterator.
func (qi *queryIter) collect() ([]dsq.Entry, error) {
	var entries []dsq.Entry
	for n := 1; qi.move(); n++ {
		if n%ctxCheckEvery == 0 && qi.ctx.Err() != nil {
			return nil, qi.ctx.Err()
		}
		e, ok, err := qi.entry(true)
		if err != nil {
			return nil, err
		}
		if ok {
			entries = append(entries, e)
		}
	}
	if err := qi.it.Err(); err != nil {
		return nil, errors.Wrap(err, "datastore: query")
	}
	qi.release()
	return entries, nil
}

// entry returns the iterator's entry and whether it passes the filters.
// The filters see the value whatever the query asks; the entry keeps a
// copy of it if keepValue is set. Size is always the value's length.
func (qi *queryIter) entry(keepValue bool) (dsq.Entry, bool, error) {
	v := qi.it.Value()
	e := dsq.Entry{Key: string(qi.it.Key()), Value: v, Size: len(v)}
	ok, err := passes(qi.q.Filters, e)
	if err != nil || !ok {
		return dsq.Entry{}, false, err
	}
	e.Value = nil
	if keepValue {
		e.Value = bytes.Clone(v)
	}
	return e, true, nil
}

// passes reports whether e passes every filter. A filter that panics (a
// FilterValueCompare with an unknown Op does) fails the query with an
// error instead.
func passes(filters []dsq.Filter, e dsq.Entry) (ok bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			ok, err = false, errors.Newf("datastore: query filter panicked: %v", r)
		}
	}()
	for _, f := range filters {
		if !f.Filter(e) {
			return false, nil
		}
	}
	return true, nil
}

// sortEntries sorts entries by orders, turning an order's panic into an
// error.
func sortEntries(orders []dsq.Order, entries []dsq.Entry) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = errors.Newf("datastore: query order panicked: %v", r)
		}
	}()
	dsq.Sort(orders, entries)
	return nil
}

// window returns entries past offset and at most limit of them (limit <= 0:
// no limit).
func window(entries []dsq.Entry, offset, limit int) []dsq.Entry {
	if offset > 0 {
		entries = entries[min(offset, len(entries)):]
	}
	if limit > 0 && limit < len(entries) {
		entries = entries[:limit]
	}
	return entries
}
