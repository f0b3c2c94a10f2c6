//go:build leveldb_cgo

package leveldbc

/*
#include <leveldb/c.h>
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// Iterator walks a consistent view of the database in key order. It is not
// safe for concurrent use. Close it before closing its DB.
type Iterator struct {
	it  *C.leveldb_iterator_t // nil once closed
	err error
}

// NewIterator returns an iterator over the whole database, positioned
// nowhere: call First, Last or SeekGE.
func (db *DB) NewIterator() *Iterator {
	if db.db == nil {
		return &Iterator{err: ErrClosed}
	}
	return &Iterator{it: C.leveldb_create_iterator(db.db, db.ro)}
}

// First moves to the smallest key and reports whether there is one.
func (it *Iterator) First() bool {
	if it.it == nil {
		return false
	}
	C.leveldb_iter_seek_to_first(it.it)
	return it.valid()
}

// Last moves to the largest key and reports whether there is one.
func (it *Iterator) Last() bool {
	if it.it == nil {
		return false
	}
	C.leveldb_iter_seek_to_last(it.it)
	return it.valid()
}

// SeekGE moves to the smallest key at or after key.
func (it *Iterator) SeekGE(key []byte) bool {
	if it.it == nil {
		return false
	}
	k, kn := cbytes(key)
	C.leveldb_iter_seek(it.it, k, kn)
	runtime.KeepAlive(key)
	return it.valid()
}

// Next moves to the next key; it returns false at the end, or if the
// iterator was not positioned.
func (it *Iterator) Next() bool {
	if !it.valid() {
		return false // LevelDB's Next requires a valid iterator
	}
	C.leveldb_iter_next(it.it)
	return it.valid()
}

// Prev moves to the previous key; it returns false at the start, or if the
// iterator was not positioned.
func (it *Iterator) Prev() bool {
	if !it.valid() {
		return false
	}
	C.leveldb_iter_prev(it.it)
	return it.valid()
}

func (it *Iterator) valid() bool {
	return it.it != nil && C.leveldb_iter_valid(it.it) != 0
}

// Key returns a copy of the current key.
func (it *Iterator) Key() []byte {
	if !it.valid() {
		return nil
	}
	var n C.size_t
	k := C.leveldb_iter_key(it.it, &n)
	return C.GoBytes(unsafe.Pointer(k), C.int(n))
}

// Value returns a copy of the current value.
func (it *Iterator) Value() []byte {
	if !it.valid() {
		return nil
	}
	var n C.size_t
	v := C.leveldb_iter_value(it.it, &n)
	return C.GoBytes(unsafe.Pointer(v), C.int(n))
}

// Err returns the error that stopped the iterator, if any.
func (it *Iterator) Err() error {
	if it.it == nil {
		return it.err
	}
	var cerr *C.char
	C.leveldb_iter_get_error(it.it, &cerr)
	return takeError(cerr, "iterate")
}

// Close releases the iterator; it is safe to call twice.
func (it *Iterator) Close() error {
	if it.it == nil {
		return it.err
	}
	err := it.Err()
	C.leveldb_iter_destroy(it.it)
	it.it = nil
	it.err = err
	return err
}
