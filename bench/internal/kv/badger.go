package kv

import (
	"errors"

	"github.com/dgraph-io/badger/v4"
)

type badgerStore struct{ db *badger.DB }

var _ Store = badgerStore{}

func openBadger(dir string, c Config) (Store, error) {
	o := badger.DefaultOptions(dir).WithLogger(nil).WithSyncWrites(c.Sync)
	if c.CacheBytes > 0 {
		o = o.WithBlockCacheSize(c.CacheBytes)
	}
	db, err := badger.Open(o)
	if err != nil {
		return nil, err
	}
	return badgerStore{db}, nil
}

// Put is a transaction of one key. Update returns after the commit, so the
// slices need not outlive it. With SyncWrites every commit is synced; sync
// alone cannot ask for it.
func (s badgerStore) Put(k, v []byte, _ bool) error {
	return s.db.Update(func(txn *badger.Txn) error { return txn.Set(k, v) })
}

func (s badgerStore) Get(k []byte) (n int, found bool, err error) {
	err = s.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(k)
		if err != nil {
			return err
		}
		return item.Value(func(v []byte) error { n = len(v); return nil })
	})
	if errors.Is(err, badger.ErrKeyNotFound) {
		return 0, false, nil
	}
	return n, err == nil, err
}

func (s badgerStore) NewBatch() Batch { return &badgerBatch{db: s.db} }

func (s badgerStore) NewIter() (Iter, error) {
	txn := s.db.NewTransaction(false)
	return &badgerIter{txn: txn, it: txn.NewIterator(badger.DefaultIteratorOptions)}, nil
}

func (s badgerStore) Close() error { return s.db.Close() }

// badgerBatch is one transaction. A transaction keeps the slices it is
// given until it commits, so keys are copied (values come from a buffer that
// never changes, and are copied too, to keep the contract simple).
type badgerBatch struct {
	db   *badger.DB
	keys [][]byte
	vals [][]byte
}

func (b *badgerBatch) Put(k, v []byte) {
	b.keys = append(b.keys, append([]byte(nil), k...))
	b.vals = append(b.vals, append([]byte(nil), v...))
}

func (b *badgerBatch) Commit() error {
	err := b.db.Update(func(txn *badger.Txn) error {
		for i := range b.keys {
			if err := txn.Set(b.keys[i], b.vals[i]); err != nil {
				return err
			}
		}
		return nil
	})
	b.keys, b.vals = b.keys[:0], b.vals[:0]
	return err
}

type badgerIter struct {
	txn *badger.Txn
	it  *badger.Iterator
	err error // the first error reading a value, returned by Close
}

func (i *badgerIter) First() bool {
	i.it.Rewind()
	return i.it.Valid()
}

func (i *badgerIter) SeekGE(k []byte) bool {
	i.it.Seek(k)
	return i.it.Valid()
}

func (i *badgerIter) Next() bool {
	i.it.Next()
	return i.it.Valid()
}

func (i *badgerIter) Key() []byte { return i.it.Item().Key() }

func (i *badgerIter) Value() []byte {
	var out []byte
	err := i.it.Item().Value(func(v []byte) error { out = v; return nil })
	if err != nil && i.err == nil {
		i.err = err
	}
	return out
}

func (i *badgerIter) Close() error {
	i.it.Close()
	i.txn.Discard()
	return i.err
}
