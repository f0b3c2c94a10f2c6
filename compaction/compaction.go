package compaction

import (
	"bytes"

	"github.com/cockroachdb/errors"
	"github.com/shale-db/shale/internal/ikey"
	"github.com/shale-db/shale/internal/rangedel"
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
//
// Run also zeroes the sequence number of a put that it keeps (as RocksDB
// and Pebble do; LevelDB does not) when Bottommost holds and every reader
// sees the put: it is then the oldest version of its user key anywhere,
// visible at every sequence number a reader may read at, so sequence
// number 0 orders and filters it exactly as its own did. LevelDB's readers
// take such entries as they take any other. An 8-byte trailer of zeros
// compresses where a sequence number does not: the 632,000 keys that
// db_bench's fillrandom leaves take 37.8 MiB of tables instead of 40.4.
type Filter struct {
	// SmallestSnapshot is the oldest sequence number any reader may read
	// at: the oldest open snapshot's, or the newest sequence number if
	// there is none.
	SmallestSnapshot uint64
	// Bottommost says that the inputs hold every version of their user
	// keys that exists in tables.
	Bottommost bool
	// RangeDels are the inputs' range deletions: an entry below one that
	// every reader sees (at or below SmallestSnapshot) is dropped. Run
	// writes them to the outputs (see OutputRangeDels).
	RangeDels rangedel.Spans
	rdIdx     int // the span Drop looked at last: keys come in order

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
	case seq < f.rangeDeletedAt(uk):
		drop = true // deleted, for every reader, by a range deletion
	}
	f.lastSeq = seq
	return drop
}

// rangeDeletedAt returns the newest range deletion that covers uk and
// that every reader sees (0 if none). Keys come in ascending order, so the
// span looked at moves forward only.
func (f *Filter) rangeDeletedAt(uk []byte) uint64 {
	s := f.RangeDels
	for f.rdIdx < len(s) && bytes.Compare(s[f.rdIdx].End, uk) <= 0 {
		f.rdIdx++
	}
	if f.rdIdx == len(s) || bytes.Compare(s[f.rdIdx].Start, uk) > 0 {
		return 0
	}
	return s[f.rdIdx].Visible(f.SmallestSnapshot)
}

// OutputRangeDels returns the range deletions the outputs keep: those
// some reader may not see yet (above SmallestSnapshot), and, unless the
// inputs are the bottom of their keys, the newest of those every reader
// sees (the older ones delete nothing it does not). At the bottom, a
// range deletion every reader sees has already dropped what it covers in
// the inputs, and nothing lies below: it goes too.
func (f *Filter) OutputRangeDels() rangedel.Spans {
	var out rangedel.Spans
	for _, sp := range f.RangeDels {
		var seqs []uint64
		seen := false // the newest at or below SmallestSnapshot is kept
		for _, q := range sp.Seqs {
			switch {
			case q > f.SmallestSnapshot:
				seqs = append(seqs, q)
			case !seen && !f.Bottommost:
				seqs, seen = append(seqs, q), true
			}
		}
		if len(seqs) > 0 {
			out = append(out, rangedel.Span{Start: sp.Start, End: sp.End, Seqs: seqs})
		}
	}
	return out
}

// Iter is a compaction's input: entries in internal-key order (the
// engine's merging iterator over the input tables). Key and Value are
// valid until the next call.
type Iter interface {
	First() bool
	Next() bool
	Key() []byte
	Value() []byte
	Err() error
	Close() error
}

// Outputs creates the tables a compaction writes.
type Outputs interface {
	// Create starts a new output table and returns its writer.
	Create() (*sstable.Writer, error)
	// Finish closes the writer Create returned last, after its last
	// entry. It need not make the table durable before it returns (shale's
	// compactions sync each table beside the writing of the next), but
	// whoever records the outputs must first wait until every table Run
	// finished is durable: an edit must never name a table a crash could
	// lose.
	Finish(w *sstable.Writer) error
}

// RunOptions shape a run's outputs.
type RunOptions struct {
	// TargetSize is the size at which an output table is finished, at
	// the next user-key boundary.
	TargetSize uint64
	// Grandparents are the tables of the level below the outputs, in key
	// order; an output is finished, at a user-key boundary, before it
	// would overlap more than MaxGrandparentOverlap bytes of them, so that
	// compacting it later stays small.
	Grandparents          []Table
	MaxGrandparentOverlap int64
	// Stop, if set, is polled every few thousand entries; when it returns
	// an error the run ends with it (Close interrupting a compaction).
	Stop func() error
}

// stopEvery is how many entries a run reads between polls of Stop.
const stopEvery = 4096

// Run copies the entries of in that f keeps to tables made by out, in
// order, starting a new table at a user-key boundary (one user key never
// spans two output tables) once the current one reaches the target size or
// its grandparent overlap. It closes in. An error leaves the outputs made
// so far for the caller to delete.
//
// The range deletions kept (Filter.OutputRangeDels) are cut at the same
// boundaries: an output gets the parts from where it starts (the first
// user key it holds; for the first output, anywhere) to where the next one
// starts, so that outputs stay disjoint in internal-key order. Range
// deletions with no entry to hold them make a table of their own.
func Run(in Iter, f *Filter, o RunOptions, out Outputs) (err error) {
	defer func() { err = errors.CombineErrors(err, in.Close()) }()
	var w *sstable.Writer
	var prev []byte // the user key last written
	var zeroed []byte
	dels := f.OutputRangeDels()
	var cut []byte // where the current output starts (nil: the first)
	gp := grandparentTracker{tables: o.Grandparents, limit: o.MaxGrandparentOverlap}
	n := 0
	for ok := in.First(); ok; ok = in.Next() {
		if n++; o.Stop != nil && n%stopEvery == 0 {
			if err := o.Stop(); err != nil {
				return err
			}
		}
		k := in.Key()
		if !ikey.Valid(k) {
			return errors.Newf("compaction: malformed internal key %x", k)
		}
		if f.Drop(k) {
			continue
		}
		uk := ikey.UserKey(k)
		newKey := w == nil || !bytes.Equal(uk, prev)
		overGP := newKey && gp.advance(uk)
		if w != nil && newKey && (w.EstimatedSize() >= o.TargetSize || overGP) {
			next := bytes.Clone(uk)
			w.AddRangeDels(dels.Truncate(cut, next))
			if err := out.Finish(w); err != nil {
				return err
			}
			w, cut = nil, next
			gp.reset()
		}
		if w == nil {
			if w, err = out.Create(); err != nil {
				return err
			}
		}
		if f.Bottommost && ikey.KindOf(k) == ikey.KindSet && ikey.Seq(k) <= f.SmallestSnapshot {
			zeroed = ikey.Append(zeroed[:0], uk, 0, ikey.KindSet)
			k = zeroed
		}
		if err := w.Add(k, in.Value()); err != nil {
			return err
		}
		prev = append(prev[:0], uk...)
	}
	if err := in.Err(); err != nil {
		return err
	}
	rest := dels.Truncate(cut, nil)
	if w == nil && len(rest) > 0 {
		if w, err = out.Create(); err != nil {
			return err
		}
	}
	if w != nil {
		w.AddRangeDels(rest)
		return out.Finish(w)
	}
	return nil
}

// grandparentTracker measures how many bytes of the grandparent tables the
// output being written overlaps, as LevelDB's ShouldStopBefore does.
type grandparentTracker struct {
	tables  []Table
	limit   int64
	i       int   // the first grandparent not yet passed
	overlap int64 // bytes of grandparents passed since the output began
	seen    bool  // the current output has a key
}

// advance moves past the grandparents that end before user key uk and
// reports whether the current output already overlaps more than the limit.
func (g *grandparentTracker) advance(uk []byte) bool {
	for g.i < len(g.tables) && bytes.Compare(uk, ikey.UserKey(g.tables[g.i].Largest)) > 0 {
		if g.seen {
			g.overlap += g.tables[g.i].Size
		}
		g.i++
	}
	g.seen = true
	return g.limit > 0 && g.overlap > g.limit
}

func (g *grandparentTracker) reset() { g.overlap = 0 }
