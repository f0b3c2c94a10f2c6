package raftstore

import (
	"testing"

	"github.com/hashicorp/raft"
	"github.com/shale-db/shale"
)

// TestTruncationBatches: a DeleteRange written in more than one batch
// records the range first (metaTruncation), so that a crash between its
// batches leaves a deletion that New finishes. Around the chunk size, with
// and without the low-water mark that a prefix deletion writes, the batches
// and the record must agree: 16,384 tombstones and the mark were split in
// two batches with no record, and a crash between them left the last
// entry on disk below the low-water mark.
func TestTruncationBatches(t *testing.T) {
	for _, tc := range []struct {
		n      uint64 // entries deleted
		prefix bool   // a prefix (writes the low-water mark) or a suffix
	}{
		{truncateChunk - 1, true}, {truncateChunk, true}, {truncateChunk + 1, true},
		{truncateChunk, false}, {truncateChunk + 1, false}, {3*truncateChunk + 5, true},
	} {
		s, err := New(t.TempDir(), nil)
		if err != nil {
			t.Fatal(err)
		}
		const total = 4*truncateChunk + 10
		logs := make([]*raft.Log, 0, total)
		for i := uint64(1); i <= total; i++ {
			logs = append(logs, &raft.Log{Index: i, Term: 1, Data: []byte("x")})
		}
		if err := s.StoreLogs(logs); err != nil {
			t.Fatal(err)
		}
		// After each batch: is the range recorded? A crash after any
		// batch but the last must find it.
		var recorded []bool
		writeBatch = func(db *shale.DB, b *shale.Batch, d shale.Durability) error {
			if b.Len() > truncateChunk+1 {
				t.Errorf("a batch of %d entries", b.Len())
			}
			if err := db.Write(b, d); err != nil {
				return err
			}
			_, err := db.Get(metaTruncation)
			recorded = append(recorded, err == nil)
			return nil
		}
		from, to := uint64(1), tc.n
		if !tc.prefix {
			from, to = total-tc.n+1, total
		}
		err = s.DeleteRange(from, to)
		writeBatch = func(db *shale.DB, b *shale.Batch, d shale.Durability) error { return db.Write(b, d) }
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range recorded {
			if last := i == len(recorded)-1; r == last {
				t.Errorf("deleting %d entries (prefix %v) in %d batches: after batch %d the range is recorded: %v; want it recorded after every batch but the last",
					tc.n, tc.prefix, len(recorded), i+1, r)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
