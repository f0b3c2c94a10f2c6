package kv

import (
	"errors"

	"github.com/cockroachdb/pebble/v2"
)

type pebbleStore struct{ db *pebble.DB }

var _ Store = pebbleStore{}

func openPebble(dir string, c Config) (Store, error) {
	var o pebble.Options
	if c.CacheBytes > 0 {
		o.CacheSize = c.CacheBytes
	}
	db, err := pebble.Open(dir, &o)
	if err != nil {
		return nil, err
	}
	return pebbleStore{db}, nil
}

func (s pebbleStore) Put(k, v []byte, sync bool) error {
	if sync {
		return s.db.Set(k, v, pebble.Sync)
	}
	return s.db.Set(k, v, pebble.NoSync)
}

func (s pebbleStore) Get(k []byte) (int, bool, error) {
	v, closer, err := s.db.Get(k)
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	n := len(v)
	return n, true, closer.Close()
}

func (s pebbleStore) NewBatch() Batch { return &pebbleBatch{db: s.db, b: s.db.NewBatch()} }

func (s pebbleStore) NewIter() (Iter, error) {
	it, err := s.db.NewIter(nil)
	if err != nil {
		return nil, err
	}
	return &pebbleIter{it: it}, nil
}

func (s pebbleStore) Close() error { return s.db.Close() }

type pebbleBatch struct {
	db *pebble.DB
	b  *pebble.Batch
}

func (b *pebbleBatch) Put(k, v []byte) { _ = b.b.Set(k, v, nil) }

func (b *pebbleBatch) Commit() error {
	err := b.b.Commit(pebble.NoSync)
	// A committed batch may not be reused while the commit pipeline could
	// still hold it; Close returns it to Pebble's pool.
	if cerr := b.b.Close(); err == nil {
		err = cerr
	}
	b.b = b.db.NewBatch()
	return err
}

type pebbleIter struct {
	it  *pebble.Iterator
	err error // the first error of ValueAndErr, returned by Close
}

func (i *pebbleIter) First() bool          { return i.it.First() }
func (i *pebbleIter) SeekGE(k []byte) bool { return i.it.SeekGE(k) }
func (i *pebbleIter) Next() bool           { return i.it.Next() }
func (i *pebbleIter) Key() []byte          { return i.it.Key() }

func (i *pebbleIter) Value() []byte {
	v, err := i.it.ValueAndErr()
	if err != nil && i.err == nil {
		i.err = err
	}
	return v
}

func (i *pebbleIter) Close() error {
	err := i.it.Close()
	if i.err != nil {
		return i.err
	}
	return err
}
