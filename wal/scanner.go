package wal

import "io"

// Fragment is one step of a Scanner: a physical fragment of the log, or a
// stretch of it that holds none.
type Fragment struct {
	// Offset and Span give the stretch of the log covered:
	// [Offset, Offset+Span). For an intact fragment, Span is
	// HeaderSize+Length.
	Offset int64
	Span   int64
	// Type and Length are as stored in the header; both are 0 when the
	// header is incomplete.
	Type   RecordType
	Length int
	// Payload is the fragment's payload when Problem is "", else nil. It is
	// valid until the next call to Next.
	Payload []byte
	// Problem is "" for an intact fragment (its checksum verified; its type
	// may still be unknown). Otherwise the stretch is skipped by a Reader,
	// and Problem says why: "checksum mismatch" or "bad record length"
	// (damage; the rest of the block is skipped), "zeroed space"
	// (preallocated; the rest of the block is skipped silently), or
	// "incomplete header" or "incomplete record" (the log ends there).
	Problem string
}

// Scanner lists the physical fragments of a log, as inspection tools show
// them; it does not assemble records. Block trailers are skipped. A Scanner
// is not safe for concurrent use.
type Scanner struct {
	blk blockReader
	cur phys
}

// NewScanner returns a Scanner of the log that r holds, from r's current
// position, which counts as offset 0.
func NewScanner(r io.Reader) *Scanner {
	s := &Scanner{}
	s.blk.init(r, 0)
	return s
}

// Next returns the next fragment or skipped stretch, io.EOF at the end of the
// log, or the underlying reader's error.
func (s *Scanner) Next() (Fragment, error) {
	p := &s.cur
	s.blk.next(p)
	switch p.kind {
	case physEOF:
		return Fragment{}, io.EOF
	case physErr:
		return Fragment{}, p.err
	}
	return Fragment{
		Offset:  p.off,
		Span:    p.span,
		Type:    p.typ,
		Length:  p.length,
		Payload: p.data,
		Problem: p.reason,
	}, nil
}
