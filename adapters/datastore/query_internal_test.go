package datastore

import (
	"context"
	"fmt"
	"strings"
	"testing"

	ds "github.com/ipfs/go-datastore"
	dsq "github.com/ipfs/go-datastore/query"
)

// countingIter records every key its iterator stands on.
type countingIter struct {
	rangeIter
	visited *[]string
}

func (c countingIter) at(ok bool) bool {
	if ok {
		*c.visited = append(*c.visited, string(c.Key()))
	}
	return ok
}

func (c countingIter) First() bool { return c.at(c.rangeIter.First()) }
func (c countingIter) Last() bool  { return c.at(c.rangeIter.Last()) }
func (c countingIter) Next() bool  { return c.at(c.rangeIter.Next()) }
func (c countingIter) Prev() bool  { return c.at(c.rangeIter.Prev()) }

// countingStore returns a datastore holding 50 keys under each of the
// prefixes /p00 to /p99 (and /p07x, which "/p07" must not select), and the
// list its iterators append the keys they visit to.
func countingStore(t *testing.T) (*Datastore, *[]string) {
	t.Helper()
	d, err := New(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	b, _ := d.Batch(context.Background())
	for p := range 100 {
		for i := range 50 {
			_ = b.Put(context.Background(), ds.NewKey(fmt.Sprintf("/p%02d/%03d", p, i)), []byte("v"))
			_ = b.Put(context.Background(), ds.NewKey(fmt.Sprintf("/p%02dx/%03d", p, i)), []byte("v"))
		}
	}
	if err := b.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := d.DB().Flush(); err != nil { // read from a table, not only the memtable
		t.Fatal(err)
	}
	visited := new([]string)
	d.wrapIter = func(it rangeIter) rangeIter { return countingIter{it, visited} }
	return d, visited
}

// TestQueryBounded: a prefix query's iterator never stands on a key
// outside the prefix, key filters narrow it further, and a limit in key
// order stops it at the last result.
func TestQueryBounded(t *testing.T) {
	d, visited := countingStore(t)
	for _, tc := range []struct {
		q       dsq.Query
		results int
		visits  int
		inside  func(string) bool // every key visited passes
	}{
		{dsq.Query{Prefix: "/p07"}, 50, 50, func(k string) bool { return strings.HasPrefix(k, "/p07/") }},
		{dsq.Query{Prefix: "/p07", KeysOnly: true, Orders: []dsq.Order{dsq.OrderByKeyDescending{}}}, 50, 50,
			func(k string) bool { return strings.HasPrefix(k, "/p07/") }},
		{dsq.Query{Prefix: "/p07", Orders: []dsq.Order{dsq.OrderByValue{}}}, 50, 50,
			func(k string) bool { return strings.HasPrefix(k, "/p07/") }},
		{dsq.Query{Prefix: "/p07", Limit: 5}, 5, 5, func(k string) bool { return k <= "/p07/004" }},
		{dsq.Query{Prefix: "/p07", Offset: 10, Limit: 5}, 5, 15, func(k string) bool { return k <= "/p07/014" }},
		{dsq.Query{Prefix: "/p07", Limit: 3, Orders: []dsq.Order{dsq.OrderByKeyDescending{}}}, 3, 3,
			func(k string) bool { return k >= "/p07/047" }},
		{dsq.Query{Prefix: "/p07", Filters: []dsq.Filter{dsq.FilterKeyCompare{Op: dsq.GreaterThan, Key: "/p07/039"}}}, 10, 10,
			func(k string) bool { return k > "/p07/039" && k < "/p08" }},
		{dsq.Query{Filters: []dsq.Filter{dsq.FilterKeyPrefix{Prefix: "/p4"}, dsq.FilterKeyCompare{Op: dsq.LessThan, Key: "/p41"}}}, 100, 100,
			func(k string) bool { return strings.HasPrefix(k, "/p40") }},
		{dsq.Query{Filters: []dsq.Filter{dsq.FilterKeyCompare{Op: dsq.Equal, Key: "/p55/010"}}}, 1, 1,
			func(k string) bool { return k == "/p55/010" }},
		{dsq.Query{Prefix: "/nothing"}, 0, 0, nil},
		{dsq.Query{Prefix: "/p07", Filters: []dsq.Filter{dsq.FilterKeyPrefix{Prefix: "/p08"}}}, 0, 0, nil},
	} {
		*visited = (*visited)[:0]
		res, err := d.Query(context.Background(), tc.q)
		if err != nil {
			t.Fatal(err)
		}
		es, err := res.Rest()
		if err != nil {
			t.Fatal(err)
		}
		if len(es) != tc.results || len(*visited) != tc.visits {
			t.Errorf("query %s: %d results, %d keys visited; want %d and %d", tc.q, len(es), len(*visited), tc.results, tc.visits)
		}
		for _, k := range *visited {
			if !tc.inside(k) {
				t.Errorf("query %s visited %q", tc.q, k)
				break
			}
		}
	}
}

func TestPlan(t *testing.T) {
	type want struct {
		lo, hi  string // "-" for nil
		empty   bool
		reverse bool
		sorted  bool // offset and limit wait for a sort
	}
	str := func(b []byte) string {
		if b == nil {
			return "-"
		}
		return string(b)
	}
	for _, tc := range []struct {
		q dsq.Query
		w want
	}{
		{dsq.Query{}, want{lo: "-", hi: "-"}},
		{dsq.Query{Prefix: "/"}, want{lo: "-", hi: "-"}},
		{dsq.Query{Prefix: "/a/../"}, want{lo: "-", hi: "-"}},
		{dsq.Query{Prefix: "a"}, want{lo: "/a/", hi: "/a0"}},
		{dsq.Query{Prefix: "/a/"}, want{lo: "/a/", hi: "/a0"}},
		{dsq.Query{Prefix: "/\xff"}, want{lo: "/\xff/", hi: "/\xff0"}},
		{dsq.Query{Filters: []dsq.Filter{dsq.FilterKeyPrefix{Prefix: "\xff\xff"}}}, want{lo: "\xff\xff", hi: "-"}},
		{dsq.Query{Filters: []dsq.Filter{dsq.FilterKeyPrefix{Prefix: "/a\xff"}}}, want{lo: "/a\xff", hi: "/b"}},
		{dsq.Query{Prefix: "/a", Filters: []dsq.Filter{dsq.FilterKeyCompare{Op: dsq.LessThan, Key: "/a/m"}}}, want{lo: "/a/", hi: "/a/m"}},
		{dsq.Query{Prefix: "/a", Filters: []dsq.Filter{&dsq.FilterKeyCompare{Op: dsq.LessThanOrEqual, Key: "/a/m"}}}, want{lo: "/a/", hi: "/a/m\x00"}},
		{dsq.Query{Filters: []dsq.Filter{dsq.FilterKeyCompare{Op: dsq.GreaterThan, Key: "/a"}}}, want{lo: "/a\x00", hi: "-"}},
		{dsq.Query{Filters: []dsq.Filter{dsq.FilterKeyCompare{Op: dsq.GreaterThanOrEqual, Key: "/a"}}}, want{lo: "/a", hi: "-"}},
		{dsq.Query{Filters: []dsq.Filter{dsq.FilterKeyCompare{Op: dsq.NotEqual, Key: "/a"}}}, want{lo: "-", hi: "-"}},
		{dsq.Query{Filters: []dsq.Filter{dsq.FilterKeyCompare{Op: dsq.LessThan, Key: ""}}}, want{lo: "-", hi: "", empty: true}},
		{dsq.Query{Prefix: "/b", Filters: []dsq.Filter{dsq.FilterKeyCompare{Op: dsq.LessThan, Key: "/a"}}}, want{lo: "/b/", hi: "/a", empty: true}},
		{dsq.Query{Filters: []dsq.Filter{(*dsq.FilterKeyPrefix)(nil)}}, want{lo: "-", hi: "-"}},
		{dsq.Query{Orders: []dsq.Order{&dsq.OrderByKeyDescending{}, dsq.OrderByValue{}}}, want{lo: "-", hi: "-", reverse: true}},
		{dsq.Query{Orders: []dsq.Order{dsq.OrderByValue{}, dsq.OrderByKey{}}}, want{lo: "-", hi: "-", sorted: true}},
	} {
		p := planQuery(tc.q)
		got := want{lo: str(p.lo), hi: str(p.hi), empty: p.empty, reverse: p.reverse, sorted: p.orders != nil}
		if got != tc.w {
			t.Errorf("plan of %s = %+v, want %+v", tc.q, got, tc.w)
		}
	}
}
