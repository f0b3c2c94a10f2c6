package kv

import (
	"errors"

	"github.com/cockroachdb/pebble/v2"
	"github.com/dgraph-io/badger/v4"
	"github.com/shale-db/shale"
	bolt "go.etcd.io/bbolt"
)

var (
	_ RangeDeleter = shaleStore{}
	_ RangeDeleter = pebbleStore{}
	_ Txner        = shaleStore{}
	_ Txner        = badgerStore{}
	_ Txner        = (*bboltStore)(nil)
)

func (s shaleStore) DeleteRange(start, end []byte) error {
	return s.db.DeleteRange(start, end, shale.NoSync)
}

func (s pebbleStore) DeleteRange(start, end []byte) error {
	return s.db.DeleteRange(start, end, pebble.NoSync)
}

func (s shaleStore) ReadModifyWrite(a, b, va, vb []byte, sync bool) (bool, error) {
	tx := s.db.NewTransaction()
	defer tx.Discard()
	bp := valueBufs.Get().(*[]byte)
	defer valueBufs.Put(bp)
	for _, k := range [][]byte{a, b} {
		v, err := tx.GetAppend((*bp)[:0], k) // as Badger's Item.Value, no copy kept
		*bp = v[:0]
		if err != nil && !errors.Is(err, shale.ErrNotFound) {
			return false, err
		}
	}
	if err := tx.Put(a, va); err != nil {
		return false, err
	}
	if err := tx.Put(b, vb); err != nil {
		return false, err
	}
	d := shale.NoSync
	if sync {
		d = shale.Sync
	}
	err := tx.Commit(d)
	if errors.Is(err, shale.ErrConflict) {
		return true, nil
	}
	return false, err
}

func (s shaleStore) View(a, b []byte) (found int, err error) {
	bp := valueBufs.Get().(*[]byte)
	defer valueBufs.Put(bp)
	err = s.db.View(func(tx *shale.Transaction) error {
		for _, k := range [][]byte{a, b} {
			v, err := tx.GetAppend((*bp)[:0], k)
			*bp = v[:0]
			if err == nil {
				found++
			} else if !errors.Is(err, shale.ErrNotFound) {
				return err
			}
		}
		return nil
	})
	return found, err
}

// ReadModifyWrite reads each value (a Get that does not read the value
// would let Badger skip its value log), then sets both. Badger's
// transaction keeps the slices until it commits, which is within the call.
func (s badgerStore) ReadModifyWrite(a, b, va, vb []byte, _ bool) (bool, error) {
	txn := s.db.NewTransaction(true)
	defer txn.Discard()
	for _, k := range [][]byte{a, b} {
		item, err := txn.Get(k)
		if errors.Is(err, badger.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			return false, err
		}
		if err := item.Value(func([]byte) error { return nil }); err != nil {
			return false, err
		}
	}
	if err := txn.Set(a, va); err != nil {
		return false, err
	}
	if err := txn.Set(b, vb); err != nil {
		return false, err
	}
	err := txn.Commit()
	if errors.Is(err, badger.ErrConflict) {
		return true, nil
	}
	return false, err
}

func (s badgerStore) View(a, b []byte) (found int, err error) {
	err = s.db.View(func(txn *badger.Txn) error {
		for _, k := range [][]byte{a, b} {
			item, err := txn.Get(k)
			if errors.Is(err, badger.ErrKeyNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			if err := item.Value(func([]byte) error { return nil }); err != nil {
				return err
			}
			found++
		}
		return nil
	})
	return found, err
}

// ReadModifyWrite is one Update: bbolt runs one writer at a time and
// fsyncs every commit, so sync is what it does anyway. The puts of
// unsynced Puts still pending are committed first.
func (s *bboltStore) ReadModifyWrite(a, b, va, vb []byte, _ bool) (bool, error) {
	s.mu.Lock()
	err := s.commitLocked()
	s.mu.Unlock()
	if err != nil {
		return false, err
	}
	return false, s.db.Update(func(tx *bolt.Tx) error {
		bk := tx.Bucket(bboltBucket)
		_, _ = bk.Get(a), bk.Get(b)
		if err := bk.Put(a, va); err != nil {
			return err
		}
		return bk.Put(b, vb)
	})
}

func (s *bboltStore) View(a, b []byte) (found int, err error) {
	err = s.db.View(func(tx *bolt.Tx) error {
		bk := tx.Bucket(bboltBucket)
		for _, k := range [][]byte{a, b} {
			if bk.Get(k) != nil {
				found++
			}
		}
		return nil
	})
	return found, err
}
