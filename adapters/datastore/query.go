package datastore

import (
	"bytes"

	ds "github.com/ipfs/go-datastore"
	dsq "github.com/ipfs/go-datastore/query"
	"github.com/shale-db/shale"
)

// plan is how a query reads the database.
type plan struct {
	// lo and hi bound the keys read: lo <= key < hi. A nil lo is the
	// smallest key, a nil hi means no end.
	lo, hi []byte
	// empty is set when no key can pass the query's prefix and filters.
	empty bool
	// reverse reads in descending key order.
	reverse bool
	// orders, if not nil, are the orders to sort the filtered entries by:
	// the query's order is not key order, so offset and limit wait for the
	// sort. When nil, entries come from the iterator in the order asked.
	orders []dsq.Order
}

// planQuery returns the plan of q. The prefix and the key filters only
// narrow the range read; every filter is still applied to every entry.
func planQuery(q dsq.Query) plan {
	var p plan
	if prefix := queryPrefix(q.Prefix); prefix != "" {
		p.narrowToPrefix(prefix)
	}
	for _, f := range q.Filters {
		p.narrowToFilter(f)
	}
	p.empty = p.hi != nil && bytes.Compare(p.lo, p.hi) >= 0
	if len(q.Orders) > 0 {
		switch q.Orders[0].(type) {
		case dsq.OrderByKey, *dsq.OrderByKey:
			// Keys are unique: the first order decides every comparison.
		case dsq.OrderByKeyDescending, *dsq.OrderByKeyDescending:
			p.reverse = true
		default:
			p.orders = q.Orders
		}
	}
	return p
}

// queryPrefix returns the keys a query's prefix selects as a byte prefix:
// "" for every key, else the cleaned prefix and a slash, so that "/a"
// selects "/a/b" and not "/ab" or "/a" (go-datastore's rule, as
// query.NaiveQueryApply applies it).
func queryPrefix(prefix string) string {
	p := ds.NewKey(prefix).String()
	if p == "/" {
		return ""
	}
	return p + "/"
}

// narrowToPrefix narrows the range to the keys that start with prefix.
func (p *plan) narrowToPrefix(prefix string) {
	o := shale.PrefixOptions([]byte(prefix))
	p.narrow(o.LowerBound, o.UpperBound)
}

// narrowToFilter narrows the range to the keys f can pass, when f is a
// filter on keys whose range is known.
func (p *plan) narrowToFilter(f dsq.Filter) {
	switch f := f.(type) {
	case dsq.FilterKeyPrefix:
		p.narrowToPrefix(f.Prefix)
	case *dsq.FilterKeyPrefix:
		if f != nil {
			p.narrowToPrefix(f.Prefix)
		}
	case dsq.FilterKeyCompare:
		p.narrowToCompare(f)
	case *dsq.FilterKeyCompare:
		if f != nil {
			p.narrowToCompare(*f)
		}
	}
}

// narrowToCompare narrows the range to the keys that satisfy f. The
// smallest key greater than k is k followed by a zero byte.
func (p *plan) narrowToCompare(f dsq.FilterKeyCompare) {
	k := []byte(f.Key)
	after := append(bytes.Clone(k), 0)
	switch f.Op {
	case dsq.Equal:
		p.narrow(k, after)
	case dsq.GreaterThan:
		p.narrow(after, nil)
	case dsq.GreaterThanOrEqual:
		p.narrow(k, nil)
	case dsq.LessThan:
		p.narrow(nil, nonNil(k))
	case dsq.LessThanOrEqual:
		p.narrow(nil, after)
	}
}

// nonNil returns b, or an empty slice if b is nil: an empty upper bound
// admits no key, where a nil one admits all.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// narrow intersects the range with [lo, hi) (nil: unbounded).
func (p *plan) narrow(lo, hi []byte) {
	if lo != nil && bytes.Compare(lo, p.lo) > 0 {
		p.lo = lo
	}
	if hi != nil && (p.hi == nil || bytes.Compare(hi, p.hi) < 0) {
		p.hi = hi
	}
}

// iterOptions returns the plan's bounds as shale's.
func (p *plan) iterOptions() *shale.IterOptions {
	if p.lo == nil && p.hi == nil {
		return nil
	}
	return &shale.IterOptions{LowerBound: p.lo, UpperBound: p.hi}
}
