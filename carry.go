package shale

import (
	"slices"

	"github.com/shale-db/shale/internal/manual"
	"github.com/shale-db/shale/memtable"
)

// carryForward writes the records replayed at Open into log, the new WAL,
// and syncs it. createLog made its directory entry durable, so once this
// returns the records survive a power loss in the new log alone, and the
// MANIFEST may name it and the old logs be deleted. The old logs are never
// appended to: one may end in a torn write, which would hide what follows.
func (db *DB) carryForward(log *logFile, records [][]byte) error {
	for _, rec := range records {
		if err := log.append(rec); err != nil {
			return err
		}
	}
	return log.sync()
}

// carried holds the records Open carries forward, copied out of the WAL
// reader's buffers as replay reads them. The copies go into chunks of the
// memtables' pool, outside the Go heap, which Open then gives back: on the
// heap, up to carryLimit bytes of copies (and the slices that grew to
// list them) were a third of what the recovery workload allocated, and
// drove the heap to its collector's goal.
type carried struct {
	chunks *memtable.Chunks
	recs   [][]byte // the copies, in log order
	bufs   []*manual.Buf
	free   []byte // the unused tail of the last of bufs
}

// add appends a copy of rec. A record larger than a chunk is copied to the
// Go heap.
func (c *carried) add(rec []byte) {
	if len(rec) > memtable.ChunkSize {
		c.recs = append(c.recs, slices.Clone(rec))
		return
	}
	if len(rec) > len(c.free) {
		b := c.chunks.Get()
		c.bufs = append(c.bufs, b)
		c.free = b.B
	}
	n := copy(c.free, rec)
	c.recs = append(c.recs, c.free[:n:n])
	c.free = c.free[n:]
}

// release gives the chunks back and forgets the copies. It may be called
// more than once.
func (c *carried) release() {
	for _, b := range c.bufs {
		b.Put()
	}
	clear(c.bufs)
	c.recs, c.bufs, c.free = nil, c.bufs[:0], nil
}
