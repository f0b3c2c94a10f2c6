// Package kv puts shale, goleveldb, Pebble v2, Badger v4 and bbolt behind one
// small interface, each opened with its defaults.
//
// The exceptions, which the benchmark's notes repeat:
//   - bbolt commits, and fsyncs, every transaction; an unsynced Put therefore
//     joins a transaction that commits every 1,000 puts (and at Close). A
//     Sync Put is a transaction of its own.
//   - Badger has no per-write sync; a store opened with Config.Sync opens it
//     with SyncWrites, so that every write is synced.
//   - Config.CacheBytes, when set, sizes the block cache of the stores that
//     have one (bbolt reads through the operating system's page cache).
//   - Badger's logger is turned off: its default writes to stderr.
//
// A Store's Put, Get and NewIter may be called from several goroutines at
// once; a Batch belongs to one.
package kv

import (
	"fmt"
	"slices"
)

// Store is one engine under test.
type Store interface {
	// Put writes one key. sync asks for the write to reach the disk before
	// Put returns; otherwise the store's own unsynced write is used.
	Put(key, value []byte, sync bool) error
	// Get reads a key's value, reports whether it was found, and returns
	// the value's length (reading the value is part of a Get).
	Get(key []byte) (n int, found bool, err error)
	// NewBatch returns an empty batch, written unsynced by Commit.
	NewBatch() Batch
	// NewIter returns an unpositioned iterator over the whole store.
	NewIter() (Iter, error)
	// Close makes what was written durable as the store does at Close and
	// releases everything.
	Close() error
}

// Batch is a group of puts applied atomically.
type Batch interface {
	// Put adds a key; the batch copies what it must keep.
	Put(key, value []byte)
	// Commit applies the batch, unsynced, and empties it for reuse.
	Commit() error
}

// Iter is a forward iterator. Key and Value are valid until the next call.
type Iter interface {
	// First moves to the smallest key and reports whether there is one.
	First() bool
	// SeekGE moves to the smallest key >= key and reports whether there is
	// one.
	SeekGE(key []byte) bool
	// Next moves to the next key and reports whether there is one.
	Next() bool
	// Key is the current key.
	Key() []byte
	// Value is the current value.
	Value() []byte
	// Close releases the iterator and returns the first error it met.
	Close() error
}

// Config adjusts what the defaults leave open.
type Config struct {
	// Sync opens the store for synced writes where that is an Open-time
	// choice (Badger's SyncWrites).
	Sync bool
	// CacheBytes, if positive, is the block cache's capacity.
	CacheBytes int64
}

// Staller is implemented by stores that report how long their flow
// control delayed or held writes since Open (shale's Metrics.Stalls).
type Staller interface {
	StallSeconds() float64
	// Stalls breaks StallSeconds down by kind (the store's names).
	Stalls() map[string]Stall
}

// Stall is one kind of write stall: how many writes it held, and for how
// long in all.
type Stall struct {
	Count   int64   `json:"count"`
	Seconds float64 `json:"seconds"`
}

// Names lists the stores in the order the benchmark runs and prints them.
var Names = []string{"shale", "goleveldb", "pebble", "badger", "bbolt"}

// Variants are stores run only when -stores names them: shale-walz is
// shale with Options.WALCompression, measured against plain shale.
var Variants = []string{"shale-walz"}

var openers = map[string]func(dir string, c Config) (Store, error){
	"shale":      openShale,
	"shale-walz": openShaleWALCompressed,
	"goleveldb":  openGoleveldb,
	"pebble":     openPebble,
	"badger":     openBadger,
	"bbolt":      openBbolt,
}

// Open opens the named store in dir, creating it if needed.
func Open(name, dir string, c Config) (Store, error) {
	open, ok := openers[name]
	if !ok {
		return nil, fmt.Errorf("kv: unknown store %q (have %v)", name, Names)
	}
	return open(dir, c)
}

// Known reports whether name is one of Names or Variants.
func Known(name string) bool { return slices.Contains(Names, name) || slices.Contains(Variants, name) }

// Txner is implemented by the stores with serializable read-write
// transactions (shale, Badger, bbolt), for the transaction workloads.
type Txner interface {
	// ReadModifyWrite runs one transaction: it reads a and b, writes va
	// to a and vb to b, and commits, synced if sync (Badger: as opened).
	// conflict reports a commit the store refused with its conflict
	// error; it is not retried.
	ReadModifyWrite(a, b, va, vb []byte, sync bool) (conflict bool, err error)
	// View runs one read-only transaction that reads a and b, and
	// returns how many were found.
	View(a, b []byte) (found int, err error)
}

// RangeDeleter is implemented by the stores with a range deletion that is
// one write (shale, Pebble), for the range-deletion workloads.
type RangeDeleter interface {
	// DeleteRange deletes the keys in [start, end), unsynced.
	DeleteRange(start, end []byte) error
}
