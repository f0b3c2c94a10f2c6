package datastore

import (
	"context"
	"sync"

	"github.com/cockroachdb/errors"
	ds "github.com/ipfs/go-datastore"
	dsq "github.com/ipfs/go-datastore/query"
	"github.com/shale-db/shale"
)

var _ ds.Txn = (*txn)(nil)

// errQueryTxnEnded is the last result of a query whose transaction was
// committed or discarded while the query still read through it.
var errQueryTxnEnded = errors.Wrap(shale.ErrTxnDone, "datastore: the query's transaction ended")

// txn is a ds.Txn over a shale.Transaction: serializable and optimistic.
// Its reads (Get, Has, GetSize, Query) see the database as of
// NewTransaction plus its own writes; Commit applies its writes as one
// batch with shale.Sync, or refuses them with an error matching
// shale.ErrConflict when a write committed since it began touched a key
// it read or a range its queries passed over.
//
// mu serializes every use of the shale transaction, which is for one
// goroutine at a time, so that a txn is safe for concurrent use and its
// queries' results may be read from another goroutine.
type txn struct {
	d        *Datastore
	readOnly bool

	mu      sync.Mutex
	tx      *shale.Transaction
	queries map[*queryIter]struct{} // the queries whose iterators are open
}

// NewTransaction begins a transaction that reads the database as of now.
// A read-only transaction's Put and Delete return an error matching
// shale.ErrTxnReadOnly. Commit and Discard end the transaction's queries
// still reading: each returns an error matching shale.ErrTxnDone as its
// next result.
func (d *Datastore) NewTransaction(ctx context.Context, readOnly bool) (ds.Txn, error) {
	return &txn{
		d:        d,
		readOnly: readOnly,
		tx:       d.db.NewTransaction(),
		queries:  make(map[*queryIter]struct{}),
	}, nil
}

// Get returns a copy of key's value as the transaction sees it, or
// ds.ErrNotFound; key joins what the transaction read.
func (t *txn) Get(ctx context.Context, key ds.Key) ([]byte, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return get(t.tx.Get, key)
}

// Has reports whether key has a value as the transaction sees it.
func (t *txn) Has(ctx context.Context, key ds.Key) (bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return has(t.tx.Has, key)
}

// GetSize returns the length of key's value as the transaction sees it.
func (t *txn) GetSize(ctx context.Context, key ds.Key) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return getSize(t.tx.Get, key)
}

// Put buffers the setting of key to value until Commit.
func (t *txn) Put(ctx context.Context, key ds.Key, value []byte) error {
	return t.write(key, value, false)
}

// Delete buffers the deletion of key until Commit.
func (t *txn) Delete(ctx context.Context, key ds.Key) error {
	return t.write(key, nil, true)
}

func (t *txn) write(key ds.Key, value []byte, del bool) error {
	op, write := "put", t.tx.Put
	if del {
		op, write = "delete", func(k, _ []byte) error { return t.tx.Delete(k) }
	}
	if t.readOnly {
		return errors.Wrapf(shale.ErrTxnReadOnly, "datastore: %s %s", op, key)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := write(key.Bytes(), value); err != nil {
		return errors.Wrapf(err, "datastore: transaction %s %s", op, key)
	}
	return nil
}

// Query runs q over the transaction's view, its own writes (as of the
// call) included; every range it reads joins what the transaction read.
func (t *txn) Query(ctx context.Context, q dsq.Query) (dsq.Results, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	qi, err := newQueryIter(ctx, q, t.d.openIter(t.tx.NewIterator))
	if err != nil {
		return nil, err
	}
	qi.mu = &t.mu
	if qi.it != nil {
		t.queries[qi] = struct{}{}
		qi.onRelease = func(qi *queryIter) { delete(t.queries, qi) }
	}
	return qi.results(), nil
}

// Commit applies the transaction's writes as one batch with shale.Sync,
// or returns an error matching shale.ErrConflict, having written nothing,
// if a write committed since the transaction began touched what it read.
// It ends the transaction either way.
func (t *txn) Commit(ctx context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.endQueriesLocked()
	if err := t.tx.Commit(shale.Sync); err != nil {
		return errors.Wrap(err, "datastore: commit transaction")
	}
	return nil
}

// Discard ends the transaction without writing anything. It is safe after
// Commit and more than once.
func (t *txn) Discard(ctx context.Context) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.endQueriesLocked()
	t.tx.Discard()
}

// endQueriesLocked closes the iterators of the queries still reading: a
// shale transaction commits only with none open.
func (t *txn) endQueriesLocked() {
	for qi := range t.queries {
		qi.endLocked(errQueryTxnEnded)
	}
}
