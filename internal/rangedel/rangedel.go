// Package rangedel holds range deletions as the read and compaction paths
// use them: fragmented into spans that do not overlap, each with the
// sequence numbers of every range deletion that covers it.
//
// A range deletion [Start, End) at sequence number S deletes every entry
// of a user key k with Start <= k < End whose sequence number is below S,
// for a reader at a sequence number >= S. Fragmenting keeps that meaning:
// a span's Seqs are the sequence numbers of the deletions that cover all
// of it (a deletion either covers a span whole or misses it).
//
// Functions are pure; a Spans value is never modified once made, so any
// number of readers may share one.
package rangedel

import (
	"bytes"
	"slices"
)

// Tombstone is one range deletion: the keys in [Start, End) below Seq.
type Tombstone struct {
	Start, End []byte
	Seq        uint64
}

// Span is one fragment: [Start, End), covered by the deletions of Seqs,
// newest first (no two equal).
type Span struct {
	Start, End []byte
	Seqs       []uint64
}

// Spans are fragments in key order, not overlapping, none empty.
type Spans []Span

// Fragment returns the fragments of ts (in any order; empty ranges are
// ignored). The spans' keys alias ts' keys.
func Fragment(ts []Tombstone) Spans {
	// Every start and end is a boundary; between two neighbouring
	// boundaries, the covering set is constant.
	var bounds [][]byte
	for _, t := range ts {
		if bytes.Compare(t.Start, t.End) < 0 {
			bounds = append(bounds, t.Start, t.End)
		}
	}
	if len(bounds) == 0 {
		return nil
	}
	slices.SortFunc(bounds, bytes.Compare)
	bounds = slices.CompactFunc(bounds, bytes.Equal)
	sorted := slices.Clone(ts)
	slices.SortFunc(sorted, func(a, b Tombstone) int { return bytes.Compare(a.Start, b.Start) })
	var out Spans
	var active []Tombstone // deletions started before the current boundary
	next := 0
	for i := 0; i+1 < len(bounds); i++ {
		lo, hi := bounds[i], bounds[i+1]
		for next < len(sorted) && bytes.Compare(sorted[next].Start, lo) <= 0 {
			if bytes.Compare(sorted[next].Start, sorted[next].End) < 0 {
				active = append(active, sorted[next])
			}
			next++
		}
		active = slices.DeleteFunc(active, func(t Tombstone) bool { return bytes.Compare(t.End, lo) <= 0 })
		if len(active) == 0 {
			continue
		}
		seqs := make([]uint64, 0, len(active))
		for _, t := range active {
			seqs = append(seqs, t.Seq)
		}
		slices.SortFunc(seqs, func(a, b uint64) int { return cmpDesc(a, b) })
		seqs = slices.Compact(seqs)
		out = append(out, Span{Start: lo, End: hi, Seqs: seqs})
	}
	return out.merged()
}

func cmpDesc(a, b uint64) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}

// merged joins neighbouring spans that touch and have the same Seqs.
func (s Spans) merged() Spans {
	if len(s) < 2 {
		return s
	}
	out := s[:1]
	for _, sp := range s[1:] {
		last := &out[len(out)-1]
		if bytes.Equal(last.End, sp.Start) && slices.Equal(last.Seqs, sp.Seqs) {
			last.End = sp.End
			continue
		}
		out = append(out, sp)
	}
	return out
}

// Tombstones returns the deletions the spans stand for, one per span and
// sequence number: fragmented, in (Start, Seq descending) order, as a
// table stores them.
func (s Spans) Tombstones() []Tombstone {
	var out []Tombstone
	for _, sp := range s {
		for _, seq := range sp.Seqs {
			out = append(out, Tombstone{Start: sp.Start, End: sp.End, Seq: seq})
		}
	}
	return out
}

// Find returns the index of the span that holds key, or -1.
func (s Spans) Find(key []byte) int {
	// The first span whose End is past key is the only candidate.
	i, _ := slices.BinarySearchFunc(s, key, func(sp Span, k []byte) int {
		if bytes.Compare(sp.End, k) <= 0 {
			return -1
		}
		return 1
	})
	if i < len(s) && bytes.Compare(s[i].Start, key) <= 0 {
		return i
	}
	return -1
}

// Visible returns the newest of the span's sequence numbers at or below
// seq (a reader at seq sees those deletions), or 0 if none.
func (sp *Span) Visible(seq uint64) uint64 {
	for _, s := range sp.Seqs {
		if s <= seq {
			return s
		}
	}
	return 0
}

// Covers reports whether an entry of a key in the span, with sequence
// number entrySeq, is deleted for a reader at seq.
func (sp *Span) Covers(entrySeq, seq uint64) bool {
	return entrySeq < sp.Visible(seq)
}

// DeletedAt returns the newest deletion, visible at seq, that covers key
// (0 if none): an entry of key below it is deleted for that reader.
func (s Spans) DeletedAt(key []byte, seq uint64) uint64 {
	if i := s.Find(key); i >= 0 {
		return s[i].Visible(seq)
	}
	return 0
}

// Truncate returns the parts of the spans within [lo, hi) (nil: open).
func (s Spans) Truncate(lo, hi []byte) Spans {
	var out Spans
	for _, sp := range s {
		if hi != nil && bytes.Compare(sp.Start, hi) >= 0 {
			break
		}
		if lo != nil && bytes.Compare(sp.End, lo) <= 0 {
			continue
		}
		if lo != nil && bytes.Compare(sp.Start, lo) < 0 {
			sp.Start = lo
		}
		if hi != nil && bytes.Compare(sp.End, hi) > 0 {
			sp.End = hi
		}
		if bytes.Compare(sp.Start, sp.End) < 0 {
			out = append(out, sp)
		}
	}
	return out
}

// Merge fragments the deletions of several span lists together.
func Merge(lists ...Spans) Spans {
	n := 0
	for _, l := range lists {
		n += len(l)
	}
	switch {
	case n == 0:
		return nil
	case n == len(lists[0]):
		return lists[0]
	}
	var ts []Tombstone
	for _, l := range lists {
		ts = append(ts, l.Tombstones()...)
	}
	return Fragment(ts)
}

// Filter returns the spans with only the sequence numbers keep accepts,
// dropping spans left with none.
func (s Spans) Filter(keep func(seq uint64) bool) Spans {
	var out Spans
	for _, sp := range s {
		var seqs []uint64
		for _, q := range sp.Seqs {
			if keep(q) {
				seqs = append(seqs, q)
			}
		}
		if len(seqs) > 0 {
			sp.Seqs = seqs
			out = append(out, sp)
		}
	}
	return out.merged()
}

// AddNewest returns the spans with t added, where t is newer than every
// deletion in s (as a memtable applies them, in sequence order). It
// touches only the spans t overlaps: the others are shared with s, whose
// spans it does not modify.
func (s Spans) AddNewest(t Tombstone) Spans {
	if bytes.Compare(t.Start, t.End) >= 0 {
		return s
	}
	// s[i:j] are the spans that overlap [t.Start, t.End).
	i, _ := slices.BinarySearchFunc(s, t.Start, func(sp Span, k []byte) int {
		if bytes.Compare(sp.End, k) <= 0 {
			return -1
		}
		return 1
	})
	j, _ := slices.BinarySearchFunc(s, t.End, func(sp Span, k []byte) int {
		if bytes.Compare(sp.Start, k) < 0 {
			return -1
		}
		return 1
	})
	out := make(Spans, 0, len(s)+3)
	out = append(out, s[:i]...)
	with := func(seqs []uint64) []uint64 { return append([]uint64{t.Seq}, seqs...) }
	at := t.Start // the part of t not yet placed starts here
	for _, sp := range s[i:j] {
		if bytes.Compare(sp.Start, at) < 0 {
			// sp starts before t: its head keeps its deletions.
			out = append(out, Span{Start: sp.Start, End: at, Seqs: sp.Seqs})
			sp.Start = at
		} else if bytes.Compare(at, sp.Start) < 0 {
			out = append(out, Span{Start: at, End: sp.Start, Seqs: []uint64{t.Seq}}) // a gap
		}
		if bytes.Compare(sp.End, t.End) > 0 {
			out = append(out, Span{Start: sp.Start, End: t.End, Seqs: with(sp.Seqs)},
				Span{Start: t.End, End: sp.End, Seqs: sp.Seqs})
			at = sp.End
			continue
		}
		out = append(out, Span{Start: sp.Start, End: sp.End, Seqs: with(sp.Seqs)})
		at = sp.End
	}
	if bytes.Compare(at, t.End) < 0 {
		out = append(out, Span{Start: at, End: t.End, Seqs: []uint64{t.Seq}})
	}
	return append(out, s[j:]...)
}
