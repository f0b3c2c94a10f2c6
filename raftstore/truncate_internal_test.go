package raftstore

import (
	"testing"

	"github.com/hashicorp/raft"
	"github.com/shale-db/shale"
)

// TestTruncationIsOneWrite: a DeleteRange of any size is one synced batch
// holding one range deletion (and the low-water mark for a prefix), so a
// crash leaves it whole or absent; the entries are gone, those outside
// the range stay.
func TestTruncationIsOneWrite(t *testing.T) {
	for _, tc := range []struct {
		n      uint64 // entries deleted
		prefix bool   // a prefix (writes the low-water mark) or a suffix
	}{{1, true}, {50_000, true}, {1, false}, {50_000, false}} {
		s, err := New(t.TempDir(), nil)
		if err != nil {
			t.Fatal(err)
		}
		const total = 60_000
		logs := make([]*raft.Log, 0, total)
		for i := uint64(1); i <= total; i++ {
			logs = append(logs, &raft.Log{Index: i, Term: 1, Data: []byte("x")})
		}
		if err := s.StoreLogs(logs); err != nil {
			t.Fatal(err)
		}
		var batches, entries int
		writeBatch = func(db *shale.DB, b *shale.Batch, d shale.Durability) error {
			batches++
			entries += b.Len()
			if d != shale.Sync {
				t.Error("a truncation written without Sync")
			}
			return db.Write(b, d)
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
		want := 1
		if tc.prefix {
			want = 2 // and the low-water mark
		}
		if batches != 1 || entries != want {
			t.Fatalf("deleting %d entries (prefix %v): %d batches of %d entries, want one of %d", tc.n, tc.prefix, batches, entries, want)
		}
		var l raft.Log
		for _, i := range []uint64{from, to} {
			if err := s.GetLog(i, &l); err != raft.ErrLogNotFound {
				t.Fatalf("GetLog(%d) after deleting it: %v", i, err)
			}
		}
		keep := uint64(total)
		if !tc.prefix {
			keep = 1
		}
		if err := s.GetLog(keep, &l); err != nil {
			t.Fatalf("GetLog(%d), outside the range: %v", keep, err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
