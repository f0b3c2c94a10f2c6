// Package compaction runs compactions: it merges the entries of input
// tables and keeps only what a reader can still see, at the newest
// sequence number or at any open snapshot. Picking which tables to compact
// (leveled compaction) will join it here; today the engine's manual
// Compact picks them.
//
// Usage: build an Iter over the inputs' entries (a merging iterator, in
// ikey order), a Filter for the open snapshots, and call Run with an
// Outputs that creates the table files. Run is not safe for concurrent
// use on one Outputs; separate runs are independent.
package compaction

import (
	"bytes"

	"github.com/cockroachdb/errors"
	"github.com/shale-db/shale/internal/ikey"
	"github.com/shale-db/shale/internal/iterator"
	"github.com/shale-db/shale/sstable"
)

// Filter decides, entry by entry in internal-key order, what a compaction
// drops. It applies LevelDB's two rules:
//
//   - an entry is dropped if a newer entry of the same user key is visible
//     at the smallest snapshot (every reader sees that one, or a newer
//     one);
//   - a deletion is dropped if it is visible at the smallest snapshot and
//     nothing older of its user key exists outside the compaction's inputs
//     (Bottommost), since then it hides nothing.
type Filter struct {
	// SmallestSnapshot is the oldest sequence number any reader may read
	// at: the oldest open snapshot's, or the newest sequence number if
	// there is none.
	SmallestSnapshot uint64
	// Bottommost says that the inputs hold every version of their user
	// keys that exists in tables.
	Bottommost bool

	ukey    []byte // the user key of the previous entry
	started bool
	lastSeq uint64 // sequence number of the previous entry of ukey
}

// Drop reports whether the entry with internal key k (entries must come in
// ikey.Compare order) can be dropped. k must be valid.
func (f *Filter) Drop(k []byte) bool {
	uk, seq, kind := ikey.UserKey(k), ikey.Seq(k), ikey.KindOf(k)
	if !f.started || !bytes.Equal(uk, f.ukey) {
		f.ukey = append(f.ukey[:0], uk...)
		f.started = true
		f.lastSeq = ikey.MaxSeq + 1 // no newer entry of this key
	}
	drop := false
	switch {
	case f.lastSeq <= f.SmallestSnapshot:
		drop = true // shadowed, for every reader, by the previous entry
	case kind == ikey.KindDelete && seq <= f.SmallestSnapshot && f.Bottommost:
		drop = true // hides nothing
	}
	f.lastSeq = seq
	return drop
}

// Outputs creates the tables a compaction writes.
type Outputs interface {
	// Create starts a new output table and returns its writer.
	Create() (*sstable.Writer, error)
	// Finish closes the writer Create returned last, after its last
	// entry, and makes the table durable.
	Finish(w *sstable.Writer) error
}

// Run copies the entries of in that f keeps to tables made by out, in
// order, starting a new table once the current one reaches targetSize
// bytes at a user-key boundary (so that one user key never spans two
// output tables). It closes in. An error leaves the outputs made so far
// for the caller to delete.
func Run(in iterator.Iterator, f *Filter, targetSize uint64, out Outputs) (err error) {
	defer func() { err = errors.CombineErrors(err, in.Close()) }()
	var w *sstable.Writer
	var prev []byte // the user key last written
	for ok := in.First(); ok; ok = in.Next() {
		k := in.Key()
		if !ikey.Valid(k) {
			return errors.Newf("compaction: malformed internal key %x", k)
		}
		if f.Drop(k) {
			continue
		}
		uk := ikey.UserKey(k)
		if w != nil && w.EstimatedSize() >= targetSize && !bytes.Equal(uk, prev) {
			if err := out.Finish(w); err != nil {
				return err
			}
			w = nil
		}
		if w == nil {
			if w, err = out.Create(); err != nil {
				return err
			}
		}
		if err := w.Add(k, in.Value()); err != nil {
			return err
		}
		prev = append(prev[:0], uk...)
	}
	if err := in.Err(); err != nil {
		return err
	}
	if w != nil {
		return out.Finish(w)
	}
	return nil
}
