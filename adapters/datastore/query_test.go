package datastore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	ds "github.com/ipfs/go-datastore"
	dsq "github.com/ipfs/go-datastore/query"
	"github.com/shale-db/shale"
	"github.com/shale-db/shale/adapters/datastore"
)

// queryKeys runs q on r and returns the keys of its results in order.
func queryKeys(t *testing.T, r ds.Read, q dsq.Query) []string {
	t.Helper()
	var keys []string
	for _, e := range queryAll(t, r, q) {
		keys = append(keys, e.Key)
	}
	return keys
}

// queryAll runs q on r and returns its results in order.
func queryAll(t *testing.T, r ds.Read, q dsq.Query) []dsq.Entry {
	t.Helper()
	res, err := r.Query(context.Background(), q)
	if err != nil {
		t.Fatalf("query %s: %v", q, err)
	}
	es, err := res.Rest()
	if err != nil {
		t.Fatalf("query %s: %v", q, err)
	}
	return es
}

func equalStrings(a, b []string) bool { return slices.Equal(a, b) }

// model is a datastore's expected content, in key order.
type model []dsq.Entry

// fill puts keys under many prefixes into d and returns them: prefixes
// that are prefixes of each other as byte strings ("/a", "/ab", "/a/b"),
// deeper ones, and bytes around '/' and 0xff.
func fill(t *testing.T, d ds.Datastore, rng *rand.Rand) model {
	t.Helper()
	var m model
	parents := []string{"/a", "/ab", "/a/b", "/a/b/c", "/a0", "/a.", "/b", "/p\xff", "/p\xff\xff", "/z"}
	for _, p := range parents {
		for i := range 30 {
			k := fmt.Sprintf("%s/%03d", p, i)
			v := make([]byte, 1+rng.IntN(40))
			for j := range v {
				v[j] = byte(rng.UintN(256))
			}
			m = append(m, dsq.Entry{Key: k, Value: v, Size: len(v)})
		}
	}
	for _, p := range parents { // the parents themselves are keys too
		m = append(m, dsq.Entry{Key: p, Value: []byte(p), Size: len(p)})
	}
	for _, e := range m {
		if err := d.Put(context.Background(), ds.RawKey(e.Key), e.Value); err != nil {
			t.Fatal(err)
		}
	}
	dsq.Sort([]dsq.Order{dsq.OrderByKey{}}, m)
	return m
}

// expect is what go-datastore's reference implementation returns for q
// over m (values dropped for KeysOnly, which NaiveQueryApply keeps).
func (m model) expect(t *testing.T, q dsq.Query) []dsq.Entry {
	t.Helper()
	es, err := dsq.NaiveQueryApply(q, dsq.ResultsWithEntries(q, slices.Clone(m))).Rest()
	if err != nil {
		t.Fatal(err)
	}
	if q.KeysOnly {
		for i := range es {
			es[i].Value = nil
		}
	}
	return es
}

// checkQuery compares d's results for q with the model's, order included
// (the model's order for a query without orders is key order, as ours).
func checkQuery(t *testing.T, d ds.Read, m model, q dsq.Query) {
	t.Helper()
	got, want := queryAll(t, d, q), m.expect(t, q)
	if len(got) != len(want) {
		t.Fatalf("query %s: %d results, want %d", q, len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Key != w.Key || !bytes.Equal(g.Value, w.Value) || g.Size != w.Size {
			t.Fatalf("query %s: result %d is %q=%q (size %d), want %q=%q (size %d)",
				q, i, g.Key, g.Value, g.Size, w.Key, w.Value, w.Size)
		}
	}
}

var prefixes = []string{
	"", "/", "/a", "/a/", "a", "/ab", "/a/b", "/a/b/c", "/a0", "/a.", "/b", "/p\xff", "/p\xff\xff",
	"/z", "/zz", "/a/../b", "/a/b/../b", "/nope",
}

func TestQueryPrefixes(t *testing.T) {
	d := newStore(t, nil)
	m := fill(t, d, rand.New(rand.NewPCG(1, 2)))
	for _, p := range prefixes {
		checkQuery(t, d, m, dsq.Query{Prefix: p})
		checkQuery(t, d, m, dsq.Query{Prefix: p, KeysOnly: true})
	}
	// "/a" selects "/a/000" and not "/ab/000", "/a0/000" or "/a" itself.
	keys := queryKeys(t, d, dsq.Query{Prefix: "/a"})
	for _, k := range keys {
		if !strings.HasPrefix(k, "/a/") {
			t.Fatalf("prefix /a returned %q", k)
		}
	}
	if len(keys) != 30+30+1+30+1 { // /a/NNN, /a/b/NNN and /a/b, /a/b/c/NNN and /a/b/c
		t.Fatalf("prefix /a returned %d keys", len(keys))
	}
}

func TestQueryOrders(t *testing.T) {
	d := newStore(t, nil)
	m := fill(t, d, rand.New(rand.NewPCG(3, 4)))
	orders := [][]dsq.Order{
		nil,
		{dsq.OrderByKey{}},
		{&dsq.OrderByKey{}},
		{dsq.OrderByKeyDescending{}},
		{&dsq.OrderByKeyDescending{}},
		{dsq.OrderByKey{}, dsq.OrderByValue{}},
		{dsq.OrderByValue{}},
		{dsq.OrderByValueDescending{}},
		{dsq.OrderByValue{}, dsq.OrderByKeyDescending{}},
		{dsq.OrderByFunction(func(a, b dsq.Entry) int { return len(a.Value) - len(b.Value) }), dsq.OrderByKey{}},
	}
	for _, o := range orders {
		for _, p := range []string{"", "/a", "/p\xff"} {
			for _, w := range [][2]int{{0, 0}, {0, 7}, {5, 0}, {5, 7}, {29, 5}, {1000, 0}, {-3, -1}} {
				q := dsq.Query{Prefix: p, Orders: o, Offset: w[0], Limit: w[1]}
				checkQuery(t, d, m, q)
				q.KeysOnly = true
				checkQuery(t, d, m, q)
			}
		}
	}
}

func TestQueryFilters(t *testing.T) {
	d := newStore(t, nil)
	m := fill(t, d, rand.New(rand.NewPCG(5, 6)))
	filters := []dsq.Filter{
		dsq.FilterKeyPrefix{Prefix: "/a/b"},
		&dsq.FilterKeyPrefix{Prefix: "/p\xff"},
		dsq.FilterKeyPrefix{Prefix: ""},
		dsq.FilterKeyPrefix{Prefix: "/zz"},
		dsq.FilterValueCompare{Op: dsq.LessThan, Value: []byte{0x80}},
		dsq.FilterValueCompare{Op: dsq.GreaterThanOrEqual, Value: []byte{0x40}},
	}
	for _, op := range []dsq.Op{dsq.Equal, dsq.NotEqual, dsq.LessThan, dsq.LessThanOrEqual, dsq.GreaterThan, dsq.GreaterThanOrEqual} {
		for _, k := range []string{"", "/", "/a/b/010", "/a/b", "/a0", "/p\xff/029", "/zzz"} {
			filters = append(filters, dsq.FilterKeyCompare{Op: op, Key: k})
		}
	}
	for _, f := range filters {
		for _, p := range []string{"", "/a", "/a/b"} {
			checkQuery(t, d, m, dsq.Query{Prefix: p, Filters: []dsq.Filter{f}})
			// With offset and limit (pushed down in key order, after the
			// sort otherwise), and without values: the filter still sees them.
			checkQuery(t, d, m, dsq.Query{Prefix: p, Filters: []dsq.Filter{f}, Offset: 3, Limit: 10, KeysOnly: true})
			checkQuery(t, d, m, dsq.Query{Prefix: p, Filters: []dsq.Filter{f}, Orders: []dsq.Order{dsq.OrderByKeyDescending{}}, Offset: 2, Limit: 4})
			checkQuery(t, d, m, dsq.Query{Prefix: p, Filters: []dsq.Filter{f}, Orders: []dsq.Order{dsq.OrderByValue{}}, Offset: 2, Limit: 4, KeysOnly: true})
		}
	}
	// Filters one after the other, whose ranges do not meet.
	checkQuery(t, d, m, dsq.Query{Filters: []dsq.Filter{
		dsq.FilterKeyCompare{Op: dsq.GreaterThan, Key: "/b"},
		dsq.FilterKeyCompare{Op: dsq.LessThan, Key: "/a"},
	}})
}

// TestQueryRandom compares random queries with go-datastore's reference
// implementation, on a store small enough to flush to tables meanwhile.
func TestQueryRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	d := newStore(t, &shale.Options{WriteBufferSize: 8 << 10})
	m := fill(t, d, rng)
	pick := func(n int) int { return rng.IntN(n) }
	orders := [][]dsq.Order{nil, {dsq.OrderByKey{}}, {dsq.OrderByKeyDescending{}}, {dsq.OrderByValue{}}, {dsq.OrderByValueDescending{}, dsq.OrderByKey{}}}
	for range 500 {
		q := dsq.Query{
			Prefix:   prefixes[pick(len(prefixes))],
			Orders:   orders[pick(len(orders))],
			Offset:   []int{0, 0, 1, 5, 40}[pick(5)],
			Limit:    []int{0, 0, 1, 3, 50}[pick(5)],
			KeysOnly: pick(2) == 0,
		}
		for range pick(3) {
			k := m[pick(len(m))].Key
			switch pick(3) {
			case 0:
				q.Filters = append(q.Filters, dsq.FilterKeyCompare{Op: []dsq.Op{dsq.LessThan, dsq.GreaterThanOrEqual, dsq.NotEqual}[pick(3)], Key: k})
			case 1:
				q.Filters = append(q.Filters, dsq.FilterKeyPrefix{Prefix: k[:1+pick(len(k))]})
			default:
				q.Filters = append(q.Filters, dsq.FilterValueCompare{Op: dsq.GreaterThan, Value: []byte{byte(pick(256))}})
			}
		}
		checkQuery(t, d, m, q)
	}
}

// TestQueryEmptyValue: an empty value is returned as such, Size 0.
func TestQueryEmptyValue(t *testing.T) {
	d := newStore(t, nil)
	mustPut(t, d, "/e", "")
	es := queryAll(t, d, dsq.Query{})
	if len(es) != 1 || es[0].Key != "/e" || len(es[0].Value) != 0 || es[0].Size != 0 {
		t.Fatalf("results: %+v", es)
	}
}

// TestQueryBadFilter: a filter that panics (an unknown Op) fails the query
// with an error, not the process.
func TestQueryBadFilter(t *testing.T) {
	d := newStore(t, nil)
	mustPut(t, d, "/a", "1")
	for _, q := range []dsq.Query{
		{Filters: []dsq.Filter{dsq.FilterValueCompare{Op: "~", Value: []byte("1")}}},
		{Orders: []dsq.Order{dsq.OrderByValue{}}, Filters: []dsq.Filter{dsq.FilterValueCompare{Op: "~"}}},
	} {
		res, err := d.Query(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := res.Rest(); err == nil || !strings.Contains(err.Error(), "panicked") {
			t.Fatalf("query with a bad filter: %v", err)
		}
	}
}

// TestQueryCanceled: a query whose context is done ends with its error.
func TestQueryCanceled(t *testing.T) {
	d := newStore(t, nil)
	mustPut(t, d, "/a", "1")
	ctx, cancel := context.WithCancel(context.Background())
	res, err := d.Query(ctx, dsq.Query{})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := res.Rest(); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled query: %v", err)
	}
}

// TestQueryEarlyClose: closing results before the end, by either of
// go-datastore's ways to read them, releases the iterator (Close then
// has nothing left open).
func TestQueryEarlyClose(t *testing.T) {
	ctx := context.Background()
	d := newStore(t, nil)
	for i := range 50 {
		mustPut(t, d, fmt.Sprintf("/k/%02d", i), "v")
	}
	res, err := d.Query(ctx, dsq.Query{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := res.NextSync(); !ok {
		t.Fatal("no result")
	}
	if err := res.Close(); err != nil {
		t.Fatal(err)
	}
	res, err = d.Query(ctx, dsq.Query{})
	if err != nil {
		t.Fatal(err)
	}
	<-res.Next()
	if err := res.Close(); err != nil {
		t.Fatal(err)
	}
	<-res.Done()
}

func TestQueryClosed(t *testing.T) {
	d, err := datastore.New(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Query(context.Background(), dsq.Query{}); !errors.Is(err, shale.ErrClosed) {
		t.Fatalf("query after close: %v", err)
	}
}
