//go:build leveldb_cgo

package leveldbc

/*
#include <leveldb/c.h>
*/
import "C"

import (
	"bytes"
	"runtime"
)

// Batch collects puts and deletes that Write applies atomically, in the
// order they were added. The zero value is an empty batch.
type Batch struct {
	ops []batchOp
}

type batchOp struct {
	key, value []byte
	del        bool
}

// Put adds a put of key to value; the batch keeps copies.
func (b *Batch) Put(key, value []byte) {
	b.ops = append(b.ops, batchOp{key: bytes.Clone(key), value: bytes.Clone(value)})
}

// Delete adds a delete of key; the batch keeps a copy.
func (b *Batch) Delete(key []byte) {
	b.ops = append(b.ops, batchOp{key: bytes.Clone(key), del: true})
}

// Len is the number of puts and deletes in the batch.
func (b *Batch) Len() int { return len(b.ops) }

// Write applies b atomically: all of it or none of it.
func (db *DB) Write(b *Batch) error {
	if db.db == nil {
		return ErrClosed
	}
	wb := C.leveldb_writebatch_create()
	defer C.leveldb_writebatch_destroy(wb)
	for _, op := range b.ops {
		k, kn := cbytes(op.key)
		if op.del {
			C.leveldb_writebatch_delete(wb, k, kn)
			continue
		}
		v, vn := cbytes(op.value)
		C.leveldb_writebatch_put(wb, k, kn, v, vn)
	}
	runtime.KeepAlive(b)
	var cerr *C.char
	C.leveldb_write(db.db, db.wo, wb, &cerr)
	return takeError(cerr, "write a batch of %d", len(b.ops))
}
