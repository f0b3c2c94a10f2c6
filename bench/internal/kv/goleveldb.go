package kv

import (
	"errors"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/iterator"
	"github.com/syndtr/goleveldb/leveldb/opt"
)

type goleveldbStore struct{ db *leveldb.DB }

var _ Store = goleveldbStore{}

var goleveldbSync = &opt.WriteOptions{Sync: true}

func openGoleveldb(dir string, c Config) (Store, error) {
	var o opt.Options
	if c.CacheBytes > 0 {
		o.BlockCacheCapacity = int(c.CacheBytes)
	}
	db, err := leveldb.OpenFile(dir, &o)
	if err != nil {
		return nil, err
	}
	return goleveldbStore{db}, nil
}

func (s goleveldbStore) Put(k, v []byte, sync bool) error {
	if sync {
		return s.db.Put(k, v, goleveldbSync)
	}
	return s.db.Put(k, v, nil)
}

func (s goleveldbStore) Get(k []byte) (int, bool, error) {
	v, err := s.db.Get(k, nil)
	if errors.Is(err, leveldb.ErrNotFound) {
		return 0, false, nil
	}
	return len(v), err == nil, err
}

func (s goleveldbStore) NewBatch() Batch { return &goleveldbBatch{db: s.db} }

func (s goleveldbStore) NewIter() (Iter, error) {
	return goleveldbIter{s.db.NewIterator(nil, nil)}, nil
}

func (s goleveldbStore) Close() error { return s.db.Close() }

type goleveldbBatch struct {
	db *leveldb.DB
	b  leveldb.Batch
}

func (b *goleveldbBatch) Put(k, v []byte) { b.b.Put(k, v) }

func (b *goleveldbBatch) Commit() error {
	err := b.db.Write(&b.b, nil)
	b.b.Reset()
	return err
}

type goleveldbIter struct{ it iterator.Iterator }

func (i goleveldbIter) First() bool          { return i.it.First() }
func (i goleveldbIter) SeekGE(k []byte) bool { return i.it.Seek(k) }
func (i goleveldbIter) Next() bool           { return i.it.Next() }
func (i goleveldbIter) Key() []byte          { return i.it.Key() }
func (i goleveldbIter) Value() []byte        { return i.it.Value() }

func (i goleveldbIter) Close() error {
	i.it.Release()
	return i.it.Error()
}
