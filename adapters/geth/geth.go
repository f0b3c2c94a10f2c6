// Package geth puts shale under go-ethereum: Database implements
// ethdb.KeyValueStore, so that go-ethereum (or any program written against
// its ethdb interfaces) can keep its key-value data in shale.
//
// A directory written by go-ethereum's leveldb backend (goleveldb) is
// LevelDB's, and shale opens it in place: switching is one line, and the
// data stays where it is. It stays LevelDB's, so the leveldb backend can
// open it again, until the first DeleteRange: a range deletion marks the
// directory so that goleveldb refuses it, until compaction has dropped the
// deletion (see shale's README, "Range deletions").
//
// Writes are unsynced, as the leveldb and pebble backends write by
// default: they survive the process being killed, and SyncKeyValue makes
// them survive a power loss.
//
// The adapter's code is Apache-2.0, as shale's; go-ethereum, which it
// imports, is LGPL-3.0.
package geth

import (
	"github.com/cockroachdb/errors"
	"github.com/ethereum/go-ethereum/ethdb"
	"github.com/shale-db/shale"
)

// Database is a shale database behind go-ethereum's ethdb.KeyValueStore.
// It is safe for concurrent use.
type Database struct {
	db *shale.DB
}

var _ ethdb.KeyValueStore = (*Database)(nil)

// New opens (creating if needed) the shale database in dir; opts may be
// nil for shale's defaults.
func New(dir string, opts *shale.Options) (*Database, error) {
	db, err := shale.Open(dir, opts)
	if err != nil {
		return nil, err
	}
	return &Database{db: db}, nil
}

// DB returns the shale database, for what ethdb does not offer
// (snapshots, transactions, metrics).
func (d *Database) DB() *shale.DB { return d.db }

// Has reports whether key has a value.
func (d *Database) Has(key []byte) (bool, error) {
	return d.db.Has(key)
}

// Get returns a copy of key's value; an absent key is an error, as
// go-ethereum's backends return it.
func (d *Database) Get(key []byte) ([]byte, error) {
	return d.db.Get(key)
}

// Put sets key to value.
func (d *Database) Put(key, value []byte) error {
	return d.db.Put(key, value, shale.NoSync)
}

// Delete removes key.
func (d *Database) Delete(key []byte) error {
	return d.db.Delete(key, shale.NoSync)
}

// DeleteRange deletes every key in [start, end) (a nil end: every key from
// start on) as one range deletion: one small write however many keys it
// covers, where the leveldb backend deletes key by key and gives up past
// ethdb's limit (ErrTooManyKeys).
func (d *Database) DeleteRange(start, end []byte) error {
	if start == nil {
		start = []byte{}
	}
	return d.db.DeleteRange(start, end, shale.NoSync)
}

// Stat returns shale's metrics table.
func (d *Database) Stat() (string, error) {
	if err := d.checkOpen(); err != nil {
		return "", err
	}
	return d.db.Metrics().String(), nil
}

// checkOpen returns ErrClosed once the database is closed.
func (d *Database) checkOpen() error {
	_, err := d.db.Get(nil)
	if errors.Is(err, shale.ErrClosed) {
		return err
	}
	return nil
}

// SyncKeyValue makes every write acknowledged so far durable.
func (d *Database) SyncKeyValue() error {
	return d.db.Sync()
}

// Compact merges the tables holding keys in [start, limit) (nil: open),
// dropping overwritten and deleted data.
func (d *Database) Compact(start, limit []byte) error {
	return d.db.Compact(start, limit)
}

// Close closes the database. Later calls return errors.
func (d *Database) Close() error {
	return d.db.Close()
}

// NewIterator returns an iterator over the keys with the given prefix, from
// prefix+start on, in key order. It sees the database as of this call.
func (d *Database) NewIterator(prefix, start []byte) ethdb.Iterator {
	o := shale.PrefixOptions(prefix)
	o.LowerBound = append(append([]byte(nil), prefix...), start...)
	return &iterator{it: d.db.NewIterator(o)}
}

// iterator adapts shale's Iterator to ethdb's, whose first Next moves to
// the first key.
type iterator struct {
	it       *shale.Iterator
	started  bool
	released bool
	err      error // the error Release found, which Error keeps returning
}

func (i *iterator) Next() bool {
	if i.released {
		return false
	}
	if !i.started {
		i.started = true
		return i.it.First()
	}
	return i.it.Next()
}

func (i *iterator) Error() error {
	if i.released {
		return i.err
	}
	return i.it.Err()
}

func (i *iterator) Key() []byte   { return i.it.Key() }
func (i *iterator) Value() []byte { return i.it.Value() }

// Release closes the iterator; Error then returns what stopped it, if
// anything did.
func (i *iterator) Release() {
	if i.released {
		return
	}
	i.released = true
	i.err = i.it.Close()
}

// NewBatch returns a batch that writes atomically, at Write.
func (d *Database) NewBatch() ethdb.Batch {
	return &batch{db: d}
}

// NewBatchWithSize is NewBatch with room for size bytes of keys, values
// and their framing made ahead (shale.Batch.Grow).
func (d *Database) NewBatchWithSize(size int) ethdb.Batch {
	b := &batch{db: d}
	b.b.Grow(size)
	return b
}

// batch is a shale.Batch behind ethdb.Batch.
type batch struct {
	db   *Database
	b    shale.Batch
	size int // ValueSize: keys and values queued, as the other backends count
}

func (b *batch) Put(key, value []byte) error {
	b.b.Put(key, value)
	b.size += len(key) + len(value)
	return nil
}

func (b *batch) Delete(key []byte) error {
	b.b.Delete(key)
	b.size += len(key)
	return nil
}

// DeleteRange adds the deletion of the keys in [start, end) (nil end: no
// end), one entry however many keys it covers.
func (b *batch) DeleteRange(start, end []byte) error {
	b.b.DeleteRange(start, end)
	b.size += len(start) + len(end)
	return nil
}

func (b *batch) ValueSize() int { return b.size }

// Write applies the batch atomically.
func (b *batch) Write() error {
	return b.db.db.Write(&b.b, shale.NoSync)
}

func (b *batch) Reset() {
	b.b.Reset()
	b.size = 0
}

// Replay hands the batch's entries to w in order; a range deletion goes
// to w's DeleteRange, which w must have (ethdb.KeyValueRangeDeleter), as
// go-ethereum's pebble backend requires.
func (b *batch) Replay(w ethdb.KeyValueWriter) error {
	return b.b.Visit(func(op shale.BatchOp, key, value []byte) error {
		switch op {
		case shale.BatchPut:
			return w.Put(key, value)
		case shale.BatchDelete:
			return w.Delete(key)
		}
		rd, ok := w.(ethdb.KeyValueRangeDeleter)
		if !ok {
			return errors.Newf("geth: replay of a range deletion into a %T, which has no DeleteRange", w)
		}
		return rd.DeleteRange(key, value)
	})
}

func (b *batch) Close() {}
