package shale

import "github.com/shale-db/shale/internal/batchrepr"

// Batch is a sequence of puts and deletes that Write applies atomically:
// after a crash the database holds all of it or none of it. The zero value
// is an empty batch ready to use.
//
// A Batch copies the keys and values it is given, so the caller may reuse
// its buffers at once. It is not safe for concurrent use: it must not be
// changed, nor passed to another Write, while a Write of it is in progress
// (Write stores the sequence number in it).
//
// The encoding is LevelDB's WriteBatch: each write-ahead log record is
// exactly what LevelDB would write, so LevelDB and goleveldb can replay
// shale's logs.
type Batch struct {
	// repr is the batchrepr encoding; nil or a 12-byte header followed by
	// the entries. The header's sequence number is set by the commit.
	repr []byte
}

// Put adds the setting of key to value.
func (b *Batch) Put(key, value []byte) { b.repr = batchrepr.AppendPut(b.repr, key, value) }

// Delete adds the deletion of key.
func (b *Batch) Delete(key []byte) { b.repr = batchrepr.AppendDelete(b.repr, key) }

// Len returns the number of puts and deletes in the batch.
func (b *Batch) Len() int {
	if len(b.repr) < batchrepr.HeaderLen {
		return 0
	}
	return int(batchrepr.Count(b.repr))
}

// Reset empties the batch, keeping its memory for reuse.
func (b *Batch) Reset() {
	if b.repr != nil {
		b.repr = b.repr[:0]
	}
}

// size returns the encoded size of the batch in bytes.
func (b *Batch) size() int { return len(b.repr) }
