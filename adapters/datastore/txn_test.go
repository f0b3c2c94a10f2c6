package datastore_test

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"

	ds "github.com/ipfs/go-datastore"
	dsq "github.com/ipfs/go-datastore/query"
	"github.com/shale-db/shale"
)

// mustGet returns key's value in r, failing the test on an error.
func mustGet(t *testing.T, r ds.Read, key string) []byte {
	t.Helper()
	v, err := r.Get(context.Background(), ds.NewKey(key))
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	return v
}

// mustBeAbsent fails the test unless key has no value in r.
func mustBeAbsent(t *testing.T, r ds.Read, key string) {
	t.Helper()
	if v, err := r.Get(context.Background(), ds.NewKey(key)); !errors.Is(err, ds.ErrNotFound) {
		t.Fatalf("get %s: %q, %v; want ds.ErrNotFound", key, v, err)
	}
}

func mustPut(t *testing.T, w ds.Write, key, value string) {
	t.Helper()
	if err := w.Put(context.Background(), ds.NewKey(key), []byte(value)); err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
}

func newTxn(t *testing.T, d ds.TxnDatastore, readOnly bool) ds.Txn {
	t.Helper()
	tx, err := d.NewTransaction(context.Background(), readOnly)
	if err != nil {
		t.Fatal(err)
	}
	return tx
}

func TestTxnCommit(t *testing.T) {
	ctx := context.Background()
	d := newStore(t, nil)
	mustPut(t, d, "/old", "0")

	tx := newTxn(t, d, false)
	mustPut(t, tx, "/a", "1")
	mustPut(t, tx, "/b", "2")
	if err := tx.Delete(ctx, ds.NewKey("/old")); err != nil {
		t.Fatal(err)
	}
	// The transaction sees its own writes; the datastore does not yet.
	if got := mustGet(t, tx, "/a"); string(got) != "1" {
		t.Fatalf("txn get /a = %q", got)
	}
	mustBeAbsent(t, tx, "/old")
	mustBeAbsent(t, d, "/a")
	if got := mustGet(t, d, "/old"); string(got) != "0" {
		t.Fatalf("get /old = %q before commit", got)
	}
	if got := queryKeys(t, tx, dsq.Query{}); !equalStrings(got, []string{"/a", "/b"}) {
		t.Fatalf("txn query: %q", got)
	}
	if n, err := tx.GetSize(ctx, ds.NewKey("/b")); err != nil || n != 1 {
		t.Fatalf("txn GetSize /b = %d, %v", n, err)
	}
	if ok, err := tx.Has(ctx, ds.NewKey("/old")); err != nil || ok {
		t.Fatalf("txn Has /old = %v, %v", ok, err)
	}

	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	tx.Discard(ctx) // safe after Commit, and changes nothing
	if got := mustGet(t, d, "/a"); string(got) != "1" {
		t.Fatalf("get /a = %q after commit", got)
	}
	if got := mustGet(t, d, "/b"); string(got) != "2" {
		t.Fatalf("get /b = %q after commit", got)
	}
	mustBeAbsent(t, d, "/old")
	if err := tx.Put(ctx, ds.NewKey("/c"), nil); !errors.Is(err, shale.ErrTxnDone) {
		t.Fatalf("put after commit: %v, want shale.ErrTxnDone", err)
	}
	if err := tx.Commit(ctx); !errors.Is(err, shale.ErrTxnDone) {
		t.Fatalf("second commit: %v, want shale.ErrTxnDone", err)
	}
}

func TestTxnDiscard(t *testing.T) {
	ctx := context.Background()
	d := newStore(t, nil)
	tx := newTxn(t, d, false)
	mustPut(t, tx, "/a", "1")
	tx.Discard(ctx)
	tx.Discard(ctx) // twice is safe
	mustBeAbsent(t, d, "/a")
	if err := tx.Commit(ctx); err == nil {
		t.Fatal("commit after discard succeeded")
	}
	mustBeAbsent(t, d, "/a")
}

// TestTxnSnapshot: a transaction reads the database as of its beginning.
func TestTxnSnapshot(t *testing.T) {
	d := newStore(t, nil)
	mustPut(t, d, "/k", "before")
	tx := newTxn(t, d, true)
	defer tx.Discard(context.Background())
	mustPut(t, d, "/k", "after")
	mustPut(t, d, "/new", "x")
	if got := mustGet(t, tx, "/k"); string(got) != "before" {
		t.Fatalf("txn get /k = %q", got)
	}
	mustBeAbsent(t, tx, "/new")
	if got := queryKeys(t, tx, dsq.Query{}); !equalStrings(got, []string{"/k"}) {
		t.Fatalf("txn query: %q", got)
	}
}

// TestTxnConflict: two transactions read and write the same key; the
// second to commit fails with shale.ErrConflict and writes nothing.
func TestTxnConflict(t *testing.T) {
	ctx := context.Background()
	d := newStore(t, nil)
	mustPut(t, d, "/counter", "0")
	t1, t2 := newTxn(t, d, false), newTxn(t, d, false)
	for _, tx := range []ds.Txn{t1, t2} {
		if got := mustGet(t, tx, "/counter"); string(got) != "0" {
			t.Fatalf("txn get /counter = %q", got)
		}
	}
	mustPut(t, t1, "/counter", "1")
	mustPut(t, t2, "/counter", "2")
	mustPut(t, t2, "/other", "2")
	if err := t1.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	err := t2.Commit(ctx)
	if !errors.Is(err, shale.ErrConflict) {
		t.Fatalf("second commit: %v, want shale.ErrConflict", err)
	}
	if got := mustGet(t, d, "/counter"); string(got) != "1" {
		t.Fatalf("/counter = %q, want the first commit's 1", got)
	}
	mustBeAbsent(t, d, "/other")
}

// TestTxnPhantom: a query's range joins what a transaction read, so a key
// inserted there by another commit conflicts.
func TestTxnPhantom(t *testing.T) {
	ctx := context.Background()
	d := newStore(t, nil)
	mustPut(t, d, "/jobs/1", "a")
	tx := newTxn(t, d, false)
	if got := queryKeys(t, tx, dsq.Query{Prefix: "/jobs"}); len(got) != 1 {
		t.Fatalf("txn query: %q", got)
	}
	mustPut(t, tx, "/jobcount", "1")
	mustPut(t, d, "/jobs/2", "b") // a phantom in the range tx read
	if err := tx.Commit(ctx); !errors.Is(err, shale.ErrConflict) {
		t.Fatalf("commit: %v, want shale.ErrConflict", err)
	}

	// A write outside the range read does not conflict.
	tx = newTxn(t, d, false)
	queryKeys(t, tx, dsq.Query{Prefix: "/jobs"})
	mustPut(t, tx, "/jobcount", "2")
	mustPut(t, d, "/jobsx", "c") // not under the prefix "/jobs/"
	if err := tx.Commit(ctx); err != nil {
		t.Fatalf("commit: %v", err)
	}
}

func TestTxnReadOnly(t *testing.T) {
	ctx := context.Background()
	d := newStore(t, nil)
	mustPut(t, d, "/a", "1")
	tx := newTxn(t, d, true)
	if err := tx.Put(ctx, ds.NewKey("/b"), []byte("2")); !errors.Is(err, shale.ErrTxnReadOnly) {
		t.Fatalf("put in a read-only transaction: %v", err)
	}
	if err := tx.Delete(ctx, ds.NewKey("/a")); !errors.Is(err, shale.ErrTxnReadOnly) {
		t.Fatalf("delete in a read-only transaction: %v", err)
	}
	if got := mustGet(t, tx, "/a"); string(got) != "1" {
		t.Fatalf("get /a = %q", got)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	mustBeAbsent(t, d, "/b")
	if got := mustGet(t, d, "/a"); string(got) != "1" {
		t.Fatalf("get /a = %q", got)
	}
}

// TestTxnCommitEndsQueries: a shale transaction commits only with its
// iterators closed; Commit ends the queries still reading, whose next
// result is then an error.
func TestTxnCommitEndsQueries(t *testing.T) {
	ctx := context.Background()
	d := newStore(t, nil)
	for _, k := range []string{"/q/1", "/q/2", "/q/3"} {
		mustPut(t, d, k, "v")
	}
	tx := newTxn(t, d, false)
	res, err := tx.Query(ctx, dsq.Query{Prefix: "/q"})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	if r, ok := res.NextSync(); !ok || r.Error != nil || r.Key != "/q/1" {
		t.Fatalf("first result: %+v, %v", r, ok)
	}
	mustPut(t, tx, "/q/4", "v")
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	r, ok := res.NextSync()
	if !ok || !errors.Is(r.Error, shale.ErrTxnDone) {
		t.Fatalf("result after commit: %+v, %v; want an error matching shale.ErrTxnDone", r, ok)
	}
	if r, ok := res.NextSync(); ok {
		t.Fatalf("a result after the error: %+v", r)
	}
	if got := mustGet(t, d, "/q/4"); !bytes.Equal(got, []byte("v")) {
		t.Fatalf("/q/4 = %q", got)
	}
}

// TestTxnConcurrent uses one transaction from several goroutines, reading
// a query's results through its channel meanwhile; run with -race.
func TestTxnConcurrent(t *testing.T) {
	ctx := context.Background()
	d := newStore(t, nil)
	for i := range 100 {
		mustPut(t, d, "/r/"+string(rune('a'+i%26))+string(rune('a'+i/26)), "v")
	}
	tx := newTxn(t, d, false)
	res, err := tx.Query(ctx, dsq.Query{Prefix: "/r"})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				k := ds.NewKey("/w").ChildString(string(rune('a'+g)) + string(rune('a'+i%26)))
				if err := tx.Put(ctx, k, []byte("x")); err != nil {
					t.Error(err)
					return
				}
				if _, err := tx.Get(ctx, k); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	n := 0
	for r := range res.Next() {
		if r.Error != nil {
			t.Fatal(r.Error)
		}
		n++
	}
	wg.Wait()
	if n != 100 {
		t.Fatalf("query returned %d entries, want 100", n)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got := queryKeys(t, d, dsq.Query{Prefix: "/w"}); len(got) != 4*26 {
		t.Fatalf("%d keys under /w, want %d", len(got), 4*26)
	}
}
