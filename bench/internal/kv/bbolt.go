package kv

import (
	"path/filepath"
	"sync"

	bolt "go.etcd.io/bbolt"
)

// bboltTxPuts is how many unsynced puts share one bbolt transaction: with its
// defaults bbolt fsyncs every commit.
const bboltTxPuts = 1000

var bboltBucket = []byte("bench")

type bboltStore struct {
	db *bolt.DB
	mu struct {
		sync.Mutex
		tx      *bolt.Tx // the open transaction of unsynced puts, or nil
		pending int      // puts in tx
	}
}

var _ Store = (*bboltStore)(nil)

func openBbolt(dir string, _ Config) (Store, error) {
	db, err := bolt.Open(filepath.Join(dir, "bolt.db"), 0o600, nil)
	if err != nil {
		return nil, err
	}
	// Create the bucket only in a new database: a write transaction commits
	// and fsyncs even when it changes nothing, which would charge every
	// Open (and so the recovery workload's timed span) a sync no other
	// store's Open pays.
	var exists bool
	err = db.View(func(tx *bolt.Tx) error { exists = tx.Bucket(bboltBucket) != nil; return nil })
	if err == nil && !exists {
		err = db.Update(func(tx *bolt.Tx) error {
			_, err := tx.CreateBucketIfNotExists(bboltBucket)
			return err
		})
	}
	if err != nil {
		db.Close()
		return nil, err
	}
	return &bboltStore{db: db}, nil
}

// Put adds an unsynced put to the open transaction, committing it every
// bboltTxPuts puts; a synced put commits what is pending, then is a
// transaction of its own. A transaction keeps the slices it is given until
// it commits, so both are copied.
func (s *bboltStore) Put(k, v []byte, sync bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sync {
		if err := s.commitLocked(); err != nil {
			return err
		}
		return s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bboltBucket).Put(k, v) })
	}
	if s.mu.tx == nil {
		tx, err := s.db.Begin(true)
		if err != nil {
			return err
		}
		s.mu.tx = tx
	}
	k, v = append([]byte(nil), k...), append([]byte(nil), v...)
	if err := s.mu.tx.Bucket(bboltBucket).Put(k, v); err != nil {
		return err
	}
	if s.mu.pending++; s.mu.pending >= bboltTxPuts {
		return s.commitLocked()
	}
	return nil
}

// commitLocked commits the open transaction of unsynced puts, if any.
func (s *bboltStore) commitLocked() error {
	if s.mu.tx == nil {
		return nil
	}
	err := s.mu.tx.Commit()
	s.mu.tx, s.mu.pending = nil, 0
	return err
}

func (s *bboltStore) Get(k []byte) (n int, found bool, err error) {
	err = s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bboltBucket).Get(k)
		n, found = len(v), v != nil
		return nil
	})
	return n, found, err
}

func (s *bboltStore) NewBatch() Batch { return &bboltBatch{s: s} }

func (s *bboltStore) NewIter() (Iter, error) {
	tx, err := s.db.Begin(false)
	if err != nil {
		return nil, err
	}
	return &bboltIter{tx: tx, c: tx.Bucket(bboltBucket).Cursor()}, nil
}

func (s *bboltStore) Close() error {
	s.mu.Lock()
	err := s.commitLocked()
	s.mu.Unlock()
	if cerr := s.db.Close(); err == nil {
		err = cerr
	}
	return err
}

// bboltBatch is one transaction, committed (and so synced: bbolt has no
// other kind of commit) by Commit.
type bboltBatch struct {
	s    *bboltStore
	keys [][]byte
	vals [][]byte
}

func (b *bboltBatch) Put(k, v []byte) {
	b.keys = append(b.keys, append([]byte(nil), k...))
	b.vals = append(b.vals, append([]byte(nil), v...))
}

func (b *bboltBatch) Commit() error {
	b.s.mu.Lock()
	defer b.s.mu.Unlock()
	if err := b.s.commitLocked(); err != nil {
		return err
	}
	err := b.s.db.Update(func(tx *bolt.Tx) error {
		bk := tx.Bucket(bboltBucket)
		for i := range b.keys {
			if err := bk.Put(b.keys[i], b.vals[i]); err != nil {
				return err
			}
		}
		return nil
	})
	b.keys, b.vals = b.keys[:0], b.vals[:0]
	return err
}

type bboltIter struct {
	tx   *bolt.Tx
	c    *bolt.Cursor
	k, v []byte
}

func (i *bboltIter) set(k, v []byte) bool {
	i.k, i.v = k, v
	return k != nil
}

func (i *bboltIter) First() bool          { return i.set(i.c.First()) }
func (i *bboltIter) SeekGE(k []byte) bool { return i.set(i.c.Seek(k)) }
func (i *bboltIter) Next() bool           { return i.set(i.c.Next()) }
func (i *bboltIter) Key() []byte          { return i.k }
func (i *bboltIter) Value() []byte        { return i.v }
func (i *bboltIter) Close() error         { return i.tx.Rollback() }
