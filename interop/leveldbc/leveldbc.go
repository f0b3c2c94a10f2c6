//go:build leveldb_cgo

package leveldbc

/*
#cgo LDFLAGS: -lleveldb
#include <stdlib.h>
#include <leveldb/c.h>
*/
import "C"

import (
	"fmt"
	"runtime"
	"unsafe"

	"github.com/cockroachdb/errors"
)

// BloomBitsPerKey is the bits per key of the bloom filter policy every
// database opened here uses.
const BloomBitsPerKey = 10

// ErrNotFound is returned by Get for a key the database does not hold.
var ErrNotFound = errors.New("leveldbc: not found")

// ErrClosed is returned by the methods of a closed DB.
var ErrClosed = errors.New("leveldbc: closed")

// Options are the settings of Open. The zero value opens an existing
// database with LevelDB's defaults.
type Options struct {
	// CreateIfMissing creates the database if dir holds none; without it,
	// Open of a directory without a database fails.
	CreateIfMissing bool
	// WriteBufferSize is the memtable's size in bytes; 0 keeps LevelDB's
	// default (4 MiB). LevelDB raises anything below 64 KiB to 64 KiB.
	WriteBufferSize int
	// MaxFileSize is the size at which a compaction starts a new table; 0
	// keeps LevelDB's default (2 MiB). LevelDB raises anything below 1 MiB
	// to 1 MiB.
	MaxFileSize int
	// NoParanoidChecks turns LevelDB's paranoid_checks off (Open turns
	// them on otherwise): LevelDB's default, under which it keeps the
	// entries of a batch before one it cannot decode.
	NoParanoidChecks bool
}

// DB is an open LevelDB database. It is safe for concurrent use.
type DB struct {
	db     *C.leveldb_t // nil once closed
	opts   *C.leveldb_options_t
	filter *C.leveldb_filterpolicy_t // outlives db, which uses it
	ro     *C.leveldb_readoptions_t
	wo     *C.leveldb_writeoptions_t
}

// Open opens the LevelDB database in dir with the bloom filter policy,
// paranoid checks (unless o.NoParanoidChecks) and checksum verification on
// every read.
func Open(dir string, o Options) (*DB, error) {
	db := &DB{
		opts:   C.leveldb_options_create(),
		filter: C.leveldb_filterpolicy_create_bloom(BloomBitsPerKey),
		ro:     C.leveldb_readoptions_create(),
		wo:     C.leveldb_writeoptions_create(),
	}
	C.leveldb_options_set_filter_policy(db.opts, db.filter)
	C.leveldb_options_set_create_if_missing(db.opts, cbool(o.CreateIfMissing))
	C.leveldb_options_set_paranoid_checks(db.opts, cbool(!o.NoParanoidChecks))
	if o.WriteBufferSize > 0 {
		C.leveldb_options_set_write_buffer_size(db.opts, C.size_t(o.WriteBufferSize))
	}
	if o.MaxFileSize > 0 {
		C.leveldb_options_set_max_file_size(db.opts, C.size_t(o.MaxFileSize))
	}
	C.leveldb_readoptions_set_verify_checksums(db.ro, 1)

	cdir := C.CString(dir)
	defer C.free(unsafe.Pointer(cdir))
	var cerr *C.char
	db.db = C.leveldb_open(db.opts, cdir, &cerr)
	if err := takeError(cerr, "open %s", dir); err != nil {
		db.db = nil
		db.destroyOptions()
		return nil, err
	}
	return db, nil
}

// Close closes the database; LevelDB waits for a compaction under way. A
// second Close returns ErrClosed.
func (db *DB) Close() error {
	if db.db == nil {
		return ErrClosed
	}
	C.leveldb_close(db.db)
	db.db = nil
	db.destroyOptions()
	return nil
}

func (db *DB) destroyOptions() {
	C.leveldb_options_destroy(db.opts)
	C.leveldb_filterpolicy_destroy(db.filter)
	C.leveldb_readoptions_destroy(db.ro)
	C.leveldb_writeoptions_destroy(db.wo)
}

// Put sets key to value (a write without sync, as LevelDB's default).
func (db *DB) Put(key, value []byte) error {
	if db.db == nil {
		return ErrClosed
	}
	k, kn := cbytes(key)
	v, vn := cbytes(value)
	var cerr *C.char
	C.leveldb_put(db.db, db.wo, k, kn, v, vn, &cerr)
	runtime.KeepAlive(key)
	runtime.KeepAlive(value)
	return takeError(cerr, "put %q", key)
}

// Delete removes key.
func (db *DB) Delete(key []byte) error {
	if db.db == nil {
		return ErrClosed
	}
	k, kn := cbytes(key)
	var cerr *C.char
	C.leveldb_delete(db.db, db.wo, k, kn, &cerr)
	runtime.KeepAlive(key)
	return takeError(cerr, "delete %q", key)
}

// Get returns a copy of key's value, or ErrNotFound.
func (db *DB) Get(key []byte) ([]byte, error) {
	if db.db == nil {
		return nil, ErrClosed
	}
	k, kn := cbytes(key)
	var vn C.size_t
	var cerr *C.char
	v := C.leveldb_get(db.db, db.ro, k, kn, &vn, &cerr)
	runtime.KeepAlive(key)
	if err := takeError(cerr, "get %q", key); err != nil {
		return nil, err
	}
	if v == nil {
		return nil, ErrNotFound
	}
	defer C.leveldb_free(unsafe.Pointer(v))
	return C.GoBytes(unsafe.Pointer(v), C.int(vn)), nil
}

// CompactRange compacts the tables that hold keys in [start, limit] (both
// inclusive, as LevelDB's CompactRange; an empty bound is open) down to
// the deepest level that holds any, and returns when that is done.
func (db *DB) CompactRange(start, limit []byte) error {
	if db.db == nil {
		return ErrClosed
	}
	s, sn := cbytes(start)
	l, ln := cbytes(limit)
	C.leveldb_compact_range(db.db, s, sn, l, ln)
	runtime.KeepAlive(start)
	runtime.KeepAlive(limit)
	return nil
}

// Property returns the value of one of LevelDB's properties (such as
// "leveldb.num-files-at-level2" or "leveldb.stats"), and whether LevelDB
// knows the name.
func (db *DB) Property(name string) (string, bool) {
	if db.db == nil {
		return "", false
	}
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	v := C.leveldb_property_value(db.db, cname)
	if v == nil {
		return "", false
	}
	defer C.leveldb_free(unsafe.Pointer(v))
	return C.GoString(v), true
}

// cbytes returns b's bytes for the length of one C call (the caller keeps
// b alive): LevelDB copies what it keeps. An empty b is a NULL pointer.
func cbytes(b []byte) (*C.char, C.size_t) {
	if len(b) == 0 {
		return nil, 0
	}
	return (*C.char)(unsafe.Pointer(unsafe.SliceData(b))), C.size_t(len(b))
}

func cbool(b bool) C.uint8_t {
	if b {
		return 1
	}
	return 0
}

// takeError turns an error message LevelDB allocated into an error, and
// frees it.
func takeError(cerr *C.char, format string, args ...any) error {
	if cerr == nil {
		return nil
	}
	defer C.leveldb_free(unsafe.Pointer(cerr))
	return errors.Newf("leveldbc: %s: %s", fmt.Sprintf(format, args...), C.GoString(cerr))
}
