// Package datastore makes a shale database a github.com/ipfs/go-datastore
// datastore: the storage that IPFS (kubo, boxo, libp2p's peerstore) reads
// and writes through.
//
// A *Datastore is a ds.Datastore, ds.Batching, ds.TxnDatastore,
// ds.PersistentDatastore, ds.CheckedDatastore and ds.ScrubbedDatastore:
//
//	d, err := datastore.New("/var/lib/ipfs/datastore", nil) // nil: shale's default Options
//	if err != nil { ... }
//	defer d.Close()
//
// New("", nil) is a database in memory, as go-ds-leveldb's
// NewDatastore("", nil) is; shale.Options.FS puts the database in any
// file system (see shale's package vfs).
//
// # Keys
//
// A key is stored as its bytes (ds.Key.Bytes, "/a/b"), as go-ds-leveldb
// stores it, so a directory written by go-ds-leveldb opens here in place,
// every key where it was, and stays readable by goleveldb until a shale
// range deletion marks it (this package writes none; see shale's package
// doc).
//
// # Durability
//
// Put, Delete and Batch.Commit write with shale.NoSync: when they return the
// write has reached the operating system and survives the process being
// killed, not a power loss. Sync(ctx, prefix) makes every write that
// returned before it durable against a power loss, whatever its key (one
// synced write-ahead-log record: see Sync). A transaction's Commit writes
// with shale.Sync. go-ds-leveldb syncs every write instead, and
// go-ds-pebble, like this package, syncs none until Sync.
//
// # Queries
//
// A query with a prefix reads only the keys under it: the prefix becomes the
// bounds of a shale iterator, narrowed further by key filters
// (query.FilterKeyPrefix, query.FilterKeyCompare). Results in key order
// (no order, or query.OrderByKey first) stream from the iterator, which runs
// backwards for query.OrderByKeyDescending, with filters, offset and limit
// applied as it goes; any other order collects the filtered entries, sorts
// them and then applies offset and limit.
//
// # Concurrency
//
// A *Datastore is safe for concurrent use by many goroutines, and so is a
// transaction. A batch is used by one goroutine at a time.
package datastore

import (
	"context"
	"io/fs"
	"path/filepath"

	"github.com/cockroachdb/errors"
	ds "github.com/ipfs/go-datastore"
	dsq "github.com/ipfs/go-datastore/query"
	"github.com/shale-db/shale"
	"github.com/shale-db/shale/vfs"
)

var (
	_ ds.Datastore           = (*Datastore)(nil)
	_ ds.Batching            = (*Datastore)(nil)
	_ ds.TxnDatastore        = (*Datastore)(nil)
	_ ds.PersistentDatastore = (*Datastore)(nil)
	_ ds.CheckedDatastore    = (*Datastore)(nil)
	_ ds.ScrubbedDatastore   = (*Datastore)(nil)
)

// Datastore is a go-datastore datastore over one shale database. New
// returns one; Close releases it.
type Datastore struct {
	db       *shale.DB
	fs       vfs.FS // the database's file system
	dir      string
	readOnly bool

	// wrapIter, if set, wraps every iterator a query or a check opens;
	// tests use it to count the keys an iterator visits.
	wrapIter func(rangeIter) rangeIter
}

// memDir is the directory, in a file system of its own in memory, of the
// database New("") opens.
const memDir = "/datastore"

// New opens (creating it if need be) the shale database in dir, with opts
// (nil for shale's defaults), as a datastore. dir may hold a database
// written by go-ds-leveldb, goleveldb or LevelDB: it is opened in place.
//
// As in go-ds-leveldb, an empty dir (with no opts.FS) is a new database in
// memory (vfs.NewMem), gone when it is closed.
func New(dir string, opts *shale.Options) (*Datastore, error) {
	var o shale.Options
	if opts != nil {
		o = *opts
	}
	if dir == "" && o.FS == nil {
		dir, o.FS = memDir, vfs.NewMem()
	}
	db, err := shale.Open(dir, &o)
	if err != nil {
		return nil, errors.Wrapf(err, "datastore: open %q", dir)
	}
	fsys := o.FS
	if fsys == nil {
		fsys = vfs.Default
	}
	return &Datastore{db: db, fs: fsys, dir: dir, readOnly: o.ReadOnly}, nil
}

// DB returns the shale database under the datastore, for what go-datastore
// has no word for (Metrics, Compact, Checkpoint). Closing it closes the
// datastore.
func (d *Datastore) DB() *shale.DB { return d.db }

// Get returns a copy of the value of key, or ds.ErrNotFound itself if key
// has none.
func (d *Datastore) Get(ctx context.Context, key ds.Key) ([]byte, error) {
	return get(d.db.Get, key)
}

// Has reports whether key has a value.
func (d *Datastore) Has(ctx context.Context, key ds.Key) (bool, error) {
	return has(d.db.Has, key)
}

// GetSize returns the length of key's value, or -1 and ds.ErrNotFound if
// it has none.
func (d *Datastore) GetSize(ctx context.Context, key ds.Key) (int, error) {
	return getSize(d.db.Get, key)
}

// Put sets key to value (both are copied), with shale.NoSync: see the
// package doc's Durability.
func (d *Datastore) Put(ctx context.Context, key ds.Key, value []byte) error {
	if err := d.db.Put(key.Bytes(), value, shale.NoSync); err != nil {
		return errors.Wrapf(err, "datastore: put %s", key)
	}
	return nil
}

// Delete removes key's value; deleting a key that has none is not an
// error. It writes with shale.NoSync, as Put does.
func (d *Datastore) Delete(ctx context.Context, key ds.Key) error {
	if err := d.db.Delete(key.Bytes(), shale.NoSync); err != nil {
		return errors.Wrapf(err, "datastore: delete %s", key)
	}
	return nil
}

// Sync makes every Put, Delete and batch that returned before it durable
// against a power loss, under prefix and everywhere else (shale's
// DB.Sync: the write-ahead log is synced, nothing is written). On a
// read-only datastore it does nothing.
func (d *Datastore) Sync(ctx context.Context, prefix ds.Key) error {
	if d.readOnly {
		return nil
	}
	if err := d.db.Sync(); err != nil {
		return errors.Wrapf(err, "datastore: sync %s", prefix)
	}
	return nil
}

// Query runs q over the database as of the call; see the package doc. The
// results hold an iterator, and the files it reads, until they are
// exhausted or closed.
func (d *Datastore) Query(ctx context.Context, q dsq.Query) (dsq.Results, error) {
	qi, err := newQueryIter(ctx, q, d.openIter(d.db.NewIterator))
	if err != nil {
		return nil, err
	}
	return qi.results(), nil
}

// openIter returns a function that opens an iterator with newIter,
// wrapped by d.wrapIter if it is set.
func (d *Datastore) openIter(newIter func(*shale.IterOptions) *shale.Iterator) func(*shale.IterOptions) rangeIter {
	return func(o *shale.IterOptions) rangeIter {
		var it rangeIter = newIter(o)
		if d.wrapIter != nil {
			it = d.wrapIter(it)
		}
		return it
	}
}

// DiskUsage returns the bytes of the files in the database's directory
// and below it (lost/ included), as they are while it looks, in the file
// system the database is in (Options.FS).
func (d *Datastore) DiskUsage(ctx context.Context) (uint64, error) {
	n, err := dirUsage(d.fs, d.dir)
	if err != nil {
		return 0, errors.Wrapf(err, "datastore: disk usage of %s", d.dir)
	}
	return n, nil
}

// dirUsage adds up the sizes of the files in dir and below it. A file or
// directory removed after its directory was listed (an obsolete table, a
// finished log) counts for nothing.
func dirUsage(fsys vfs.FS, dir string) (uint64, error) {
	names, err := fsys.List(dir)
	if err != nil {
		return 0, err
	}
	var n uint64
	for _, name := range names {
		p := filepath.Join(dir, name)
		info, err := fsys.Stat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return 0, err
		case !info.IsDir():
			n += uint64(max(info.Size(), 0))
			continue
		}
		m, err := dirUsage(fsys, p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return 0, err
		default:
			n += m
		}
	}
	return n, nil
}

// Check runs shale's DB.Verify, the checks kvcli check makes, on the
// open database: every record of the MANIFEST and of the live write-ahead
// logs, and every block of every live table, read from disk, not from the
// caches. It returns an error matching shale.ErrCorruption (a
// *shale.VerifyError naming each damaged file and offset) for damage, and
// ctx's error when ctx is done first.
func (d *Datastore) Check(ctx context.Context) error {
	return d.verify(ctx, "check")
}

// Scrub is Check: shale keeps one copy of each block, so there is nothing
// to correct from, only damage to report.
func (d *Datastore) Scrub(ctx context.Context) error {
	return d.verify(ctx, "scrub")
}

// verify runs DB.Verify; op names the caller in the error.
func (d *Datastore) verify(ctx context.Context, op string) error {
	if err := d.db.Verify(ctx); err != nil {
		return errors.Wrapf(err, "datastore: %s", op)
	}
	return nil
}

// Close closes the database. Results of queries still open keep reading
// the tables they hold until they are closed; every other use of the
// datastore fails with an error matching shale.ErrClosed, and so does a
// second Close.
func (d *Datastore) Close() error {
	if err := d.db.Close(); err != nil {
		return errors.Wrap(err, "datastore: close")
	}
	return nil
}

// get, has and getSize implement Get, Has and GetSize over a function with
// the contract of shale.DB.Get, for the datastore and its transactions.
func get(read func([]byte) ([]byte, error), key ds.Key) ([]byte, error) {
	v, err := read(key.Bytes())
	switch {
	case errors.Is(err, shale.ErrNotFound):
		return nil, ds.ErrNotFound
	case err != nil:
		return nil, errors.Wrapf(err, "datastore: get %s", key)
	}
	return v, nil
}

func has(check func([]byte) (bool, error), key ds.Key) (bool, error) {
	ok, err := check(key.Bytes())
	if err != nil {
		return false, errors.Wrapf(err, "datastore: has %s", key)
	}
	return ok, nil
}

func getSize(read func([]byte) ([]byte, error), key ds.Key) (int, error) {
	v, err := get(read, key)
	if err != nil {
		return -1, err
	}
	return len(v), nil
}
