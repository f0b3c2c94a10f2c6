package wal

import (
	"bytes"
	"io"
)

// NextReader returns a reader of the next record, for records too large to
// hold in memory: it buffers one block, never the record. Its Read returns
// io.EOF at the end of an intact record, an error matching ErrCorrupt if a
// later fragment proves damaged (the record is then dropped, and reported as
// Next would report it), and io.ErrUnexpectedEOF if the log ends inside the
// record (a torn tail). The returned reader goes stale at the next call to
// Next or NextReader, which first skips whatever of its record is unread.
// NextReader returns io.EOF at the end of the log, and in strict mode a
// *CorruptionError at the first damage.
func (r *Reader) NextReader() (io.Reader, error) {
	r.endStream()
	if len(r.packed) > 0 {
		return bytes.NewReader(r.nextPacked()), nil
	}
	for r.startRecord() {
		if t := r.cur.typ; t != FullType && t != FirstType {
			// A compressed record or a pack is decoded whole: Next
			// reads it.
			r.unread = true
			rec, err := r.Next()
			if err != nil {
				return nil, err
			}
			return bytes.NewReader(rec), nil
		}
		s := &r.stream
		s.data, s.last = r.cur.data, r.cur.typ == FullType
		off := r.cur.off
		if !s.last {
			r.beginFragmented()
			if len(s.data) == 0 {
				// Look past an empty FIRST, so that a record already
				// known to be cut short is never handed out.
				data, st := r.continueRecord()
				switch st {
				case contMore, contLast:
					s.data, s.last = data, st == contLast
				case contCut:
					continue
				case contFail:
					return nil, r.err
				}
			}
		}
		s.seq++
		s.active, s.err = true, nil
		r.lastOff = off
		return recordReader{r, s.seq}, nil
	}
	return nil, r.err
}

// stream is the state of the record NextReader last handed out.
type stream struct {
	seq    uint64 // counts the records handed out
	active bool   // the record may have unread fragments
	data   []byte // the unread rest of the current fragment's payload
	last   bool   // the current fragment is the record's last
	err    error  // sticky: io.EOF at the record's end, or why it was cut
}

// recordReader is the reader NextReader returns: a handle on the Reader's
// stream, stale once seq moves on.
type recordReader struct {
	r   *Reader
	seq uint64
}

var _ io.Reader = recordReader{}

// Read reads from the record, fetching fragments as it goes.
func (h recordReader) Read(b []byte) (int, error) {
	s := &h.r.stream
	if !s.active || s.seq != h.seq {
		return 0, errStale
	}
	for len(s.data) == 0 {
		if s.err != nil {
			return 0, s.err
		}
		h.r.advance()
	}
	n := copy(b, s.data)
	s.data = s.data[n:]
	return n, nil
}

// advance moves the stream to its record's next fragment, or ends it.
func (r *Reader) advance() {
	s := &r.stream
	if s.last {
		s.err = io.EOF
		return
	}
	data, st := r.continueRecord()
	switch st {
	case contMore:
		s.data = data
	case contLast:
		s.data, s.last = data, true
	case contCut:
		s.err = r.cutErr
	case contFail:
		s.err = r.err
	}
}

// endStream skips the unread rest of the streamed record, if any, so that
// the scan resumes after it; damage found there is reported as usual.
func (r *Reader) endStream() {
	s := &r.stream
	if !s.active {
		return
	}
	for s.err == nil {
		s.data = nil
		r.advance()
	}
	s.active, s.data = false, nil
}
