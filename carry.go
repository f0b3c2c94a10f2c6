package shale

import (
	"encoding/binary"
	"slices"

	"github.com/shale-db/shale/internal/manual"
	"github.com/shale-db/shale/memtable"
)

// carryForward writes the records replayed at Open into log, the new WAL,
// and syncs it. createLog made its directory entry durable, so once this
// returns the records survive a power loss in the new log alone, and the
// MANIFEST may name it and the old logs be deleted. The old logs are never
// appended to: one may end in a torn write, which would hide what follows.
func (db *DB) carryForward(log *logFile, records *carried) error {
	if err := log.appendAll(records.each); err != nil {
		return err
	}
	return log.sync()
}

// carried holds the records Open carries forward, copied out of the WAL
// reader's buffers as replay reads them. The copies go into chunks of the
// memtables' pool, outside the Go heap, which Open then gives back: on the
// heap, up to carryLimit bytes of copies (and the slices that grew to
// list them) were a third of what the recovery workload allocated, and
// drove the heap to its collector's goal. Each copy is preceded in its
// chunk by its length (a uvarint), so that listing them takes no slice
// of 24 bytes a record either: a slice of one record in 20,000 puts grew
// to 700 KB on the heap.
type carried struct {
	chunks *memtable.Chunks
	bufs   []*manual.Buf
	used   []int    // bytes of each of bufs holding records
	big    [][]byte // records larger than a chunk, on the Go heap, in order
}

// add appends a copy of rec. A record larger than a chunk is copied to the
// Go heap, and a length of 0 in the chunk stands for it (so does an empty
// record, which a WAL's batches never are).
func (c *carried) add(rec []byte) {
	need := binary.MaxVarintLen64 + len(rec)
	if need > memtable.ChunkSize || len(rec) == 0 {
		c.big = append(c.big, slices.Clone(rec))
		rec, need = nil, binary.MaxVarintLen64
	}
	last := len(c.bufs) - 1
	if last < 0 || len(c.bufs[last].B)-c.used[last] < need {
		c.bufs = append(c.bufs, c.chunks.Get())
		c.used = append(c.used, 0)
		last++
	}
	b := binary.AppendUvarint(c.bufs[last].B[:c.used[last]], uint64(len(rec)))
	b = append(b, rec...)
	c.used[last] = len(b)
}

// each calls fn with every record in the order added, until fn fails.
func (c *carried) each(fn func(rec []byte) error) error {
	big := c.big
	for i, buf := range c.bufs {
		b := buf.B[:c.used[i]]
		for len(b) > 0 {
			n, w := binary.Uvarint(b)
			b = b[w:]
			rec := b[:n]
			if n == 0 {
				rec, big = big[0], big[1:]
			}
			b = b[n:]
			if err := fn(rec); err != nil {
				return err
			}
		}
	}
	return nil
}

// release gives the chunks back and forgets the copies. It may be called
// more than once.
func (c *carried) release() {
	for _, b := range c.bufs {
		b.Put()
	}
	clear(c.bufs)
	c.bufs, c.used, c.big = c.bufs[:0], c.used[:0], nil
}
