package datastore

import (
	"context"

	"github.com/cockroachdb/errors"
	ds "github.com/ipfs/go-datastore"
	"github.com/shale-db/shale"
)

var _ ds.Batch = (*batch)(nil)

// ErrBatchCommitted is matched (errors.Is) by the error of a batch's Put,
// Delete or Commit after its Commit succeeded.
var ErrBatchCommitted = errors.New("datastore: batch already committed")

// batch is a ds.Batch over one shale.Batch: its writes are buffered, in
// order, and applied all together, atomically, by Commit.
type batch struct {
	db   *shale.DB
	b    *shale.Batch
	done bool // Commit succeeded
}

// Batch returns a new batch. Its Put and Delete copy their arguments into
// a shale.Batch; Commit applies it atomically with shale.NoSync (after a
// crash the database holds all of it or none of it). A batch is used by
// one goroutine at a time.
func (d *Datastore) Batch(ctx context.Context) (ds.Batch, error) {
	return &batch{db: d.db, b: new(shale.Batch)}, nil
}

// Put buffers the setting of key to value.
func (b *batch) Put(ctx context.Context, key ds.Key, value []byte) error {
	if b.done {
		return errors.Wrapf(ErrBatchCommitted, "datastore: batch put %s", key)
	}
	b.b.Put(key.Bytes(), value)
	return nil
}

// Delete buffers the deletion of key.
func (b *batch) Delete(ctx context.Context, key ds.Key) error {
	if b.done {
		return errors.Wrapf(ErrBatchCommitted, "datastore: batch delete %s", key)
	}
	b.b.Delete(key.Bytes())
	return nil
}

// Commit applies the buffered writes as one shale batch, in the order they
// were made. After it succeeds the batch refuses further use; after it
// fails nothing was written and it may be committed again.
func (b *batch) Commit(ctx context.Context) error {
	if b.done {
		return ErrBatchCommitted
	}
	if err := b.db.Write(b.b, shale.NoSync); err != nil {
		return errors.Wrapf(err, "datastore: commit a batch of %d writes", b.b.Len())
	}
	b.done = true
	b.b = nil
	return nil
}
