package shale

import (
	"bytes"
	"encoding/binary"
	"slices"
	"sync/atomic"

	"github.com/shale-db/shale/internal/batchrepr"
	"github.com/shale-db/shale/internal/ikey"
)

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
	// rangeDels counts the range deletions in repr; openEnds those
	// without an end, which the commit gives one.
	rangeDels, openEnds int
}

// Put adds the setting of key to value.
func (b *Batch) Put(key, value []byte) {
	b.grow(len(key) + len(value))
	b.repr = batchrepr.AppendPut(b.repr, key, value)
}

// Delete adds the deletion of key.
func (b *Batch) Delete(key []byte) {
	b.grow(len(key))
	b.repr = batchrepr.AppendDelete(b.repr, key)
}

// entryRoom is what an entry takes in a batch besides its key and value:
// its tag and two length varints, plus the header a first entry adds.
const entryRoom = batchrepr.HeaderLen + 1 + 2*binary.MaxVarintLen64

// grow makes room for an entry of n key and value bytes. A new batch
// starts small (firstBatchCap) and doubles; once it holds an eighth of the
// size of the batches written lately (batchSizeHint) it jumps to that size,
// and past it doubles again, growing by half at a time beyond
// taperBatchGrowth. So a batch of a few writes stays small whatever else
// the process writes (at most about 9 times its size, and only when it is
// an eighth of the hint), and a batch of the usual size takes a few small
// allocations and one of its size. append's own growth, about 1.25 times a
// step for large slices, took a new batch of 1,000 puts of 116 bytes
// through 24 allocations and 515 KB: a batch made with new(Batch) for each
// Write, the ordinary way to write one, spent more of its time growing
// than being written.
func (b *Batch) grow(n int) {
	n += entryRoom
	c, l := cap(b.repr), len(b.repr)
	if c-l >= n {
		return
	}
	add := max(n, c) // double
	switch h := int(batchSizeHint.Load()); {
	case c == 0:
		add = max(n, firstBatchCap)
	case c >= h/8 && c < h:
		add = max(n, h+h/8-l) // an eighth over: batches vary a little
	case c >= taperBatchGrowth:
		add = max(n, c+c/2-l) // half as much again
	}
	b.repr = growBytes(b.repr, add)
}

// growBytes returns b with room for n more bytes. A large array is made
// with make, whose room is not written: slices.Grow (append's growth)
// zeroes the room it adds, and so touches every page of it at once, where
// a large array comes fresh from the operating system, already zero, and
// the batch fills it later or never (a growth by half leaves up to a third
// of the last array unused). Building go-ethereum's batch of 1,000,000 puts
// (67 MB) faulted in about 240 MB that way. Its capacity is rounded up to
// a whole page of the allocator's (8 KiB), as append's would be: the
// runtime allocates that much anyway.
func growBytes(b []byte, n int) []byte {
	if cap(b)-len(b) >= n {
		return b
	}
	want := len(b) + n
	if want < largeAlloc {
		return slices.Grow(b, n)
	}
	nb := make([]byte, len(b), (want+allocPage-1)&^(allocPage-1))
	copy(nb, b)
	return nb
}

// largeAlloc is the size from which the Go allocator gives an object pages
// of its own (its maxSmallSize), and allocPage the unit it rounds them to.
const (
	largeAlloc = 32 << 10
	allocPage  = 8 << 10
)

// Grow makes room in the batch for n more bytes of entries, so that a
// batch whose size is known ahead takes one allocation rather than several
// growths, each a copy of all it holds. An entry takes its key's and
// value's bytes and a few of framing (Size counts them all). Grow with n <=
// 0 does nothing.
func (b *Batch) Grow(n int) {
	if n <= 0 {
		return
	}
	if len(b.repr) < batchrepr.HeaderLen {
		n += batchrepr.HeaderLen
	}
	b.repr = growBytes(b.repr, n)
}

// firstBatchCap is a new batch's first capacity; taperBatchGrowth the
// capacity past which a batch grows by half rather than doubling, so that a
// huge batch carries at most half as much again unused. (By a quarter, a
// batch of 1,000,000 puts of 64 bytes, go-ethereum's benchmark's, copied
// about four times its size growing: a quarter of that benchmark's CPU
// profile, building the batch and writing it.)
const (
	firstBatchCap    = 512
	taperBatchGrowth = 16 << 20
)

// batchSizeHint is the capacity a new Batch starts with: a moving average
// of the sizes of the batches DB.Write was given (single Puts and Deletes
// are not counted), held between minBatchHint and maxBatchHint. It is only
// a hint, shared by every DB in the process: a batch of another size costs
// one more growth, or some unused capacity.
var batchSizeHint atomic.Int64

const (
	minBatchHint = 256
	maxBatchHint = 1 << 20
)

func init() { batchSizeHint.Store(minBatchHint) }

// noteBatchSize moves the hint an eighth of the way to size. It stores only
// when the hint changes, so that writers of batches of one size share the
// hint's cache line without writing to it.
func noteBatchSize(size int) {
	old := batchSizeHint.Load()
	next := old + (min(max(int64(size), minBatchHint), maxBatchHint)-old)/8
	if next != old {
		batchSizeHint.Store(next)
	}
}

// DeleteRange adds the deletion of every key k with start <= k < end. A nil
// start is the smallest key; a nil end means no end. start >= end adds
// nothing. It is ordered with the batch's other writes: a Put after it in
// the batch survives it, one before it does not.
//
// A database that has held a range deletion is marked so that LevelDB
// and goleveldb refuse to open it, rather than show its deleted keys (see
// the package doc).
func (b *Batch) DeleteRange(start, end []byte) {
	if start == nil {
		start = []byte{}
	}
	if end != nil && bytes.Compare(start, end) >= 0 {
		return
	}
	b.grow(len(start) + len(end))
	b.repr = batchrepr.AppendRangeDelete(b.repr, start, end)
	b.rangeDels++
	if end == nil {
		b.openEnds++
	}
}

// Len returns the number of puts, deletes and range deletions in the
// batch.
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
	b.rangeDels, b.openEnds = 0, 0
}

// Size returns the encoded size of the batch in bytes: what its WAL
// record will take, before the log's own framing.
func (b *Batch) Size() int { return len(b.repr) }

// BatchOp is the kind of one entry of a Batch, as Visit reports it.
type BatchOp int

const (
	// BatchPut sets a key to a value.
	BatchPut BatchOp = iota
	// BatchDelete deletes a key.
	BatchDelete
	// BatchDeleteRange deletes the keys in [key, value); a nil value is
	// a range with no end.
	BatchDeleteRange
)

// Visit calls fn on each entry of the batch, in order, and stops at the
// first error fn returns. For a BatchDelete value is nil; for a
// BatchDeleteRange key is the start and value the end (nil: no end). The
// slices alias the batch: they are valid until the batch changes.
func (b *Batch) Visit(fn func(op BatchOp, key, value []byte) error) error {
	if b.Len() == 0 {
		return nil
	}
	r := batchrepr.NewReader(b.repr)
	for {
		kind, k, v, ok := r.Next()
		if !ok {
			return r.Err()
		}
		op := BatchPut
		switch kind {
		case ikey.KindDelete:
			op, v = BatchDelete, nil
		case ikey.KindRangeDelete:
			op = BatchDeleteRange
			if len(v) == 0 {
				v = nil
			}
		}
		if err := fn(op, k, v); err != nil {
			return err
		}
	}
}
