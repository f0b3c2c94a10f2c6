// Package leveldbc is a small cgo binding to LevelDB itself (the C++
// library, through its C API in leveldb/c.h), used by the interop tests to
// check that shale's directories open in LevelDB and LevelDB's open in
// shale.
//
// It builds only with the build tag leveldb_cgo and needs the library and
// its headers (Debian: libleveldb-dev):
//
//	go test -tags leveldb_cgo ./...
//
// Without the tag the package is empty, so the interop module builds on
// machines without LevelDB.
//
// Every database opened here uses LevelDB's built-in bloom filter policy at
// 10 bits per key (the policy shale writes, under the name
// leveldb.BuiltinBloomFilter2), paranoid checks, and checksum verification
// on every read, so that LevelDB reads shale's filter blocks and checks
// everything it can. A DB and its iterators are safe for concurrent use, as
// LevelDB's are; an Iterator is not.
package leveldbc
