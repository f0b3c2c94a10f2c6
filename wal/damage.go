package wal

import "io"

// report hands a dropped stretch to the OnDrop callback, or, for damage in
// strict mode, makes it the sticky error. Stretches that begin outside the
// range [start, end) belong to another range's reader and are not reported.
func (r *Reader) report(off, n int64, reason string, torn bool) {
	if r.err != nil || off < r.start || off >= r.end {
		return
	}
	if r.opts.strict && !torn {
		r.err = &CorruptionError{File: r.opts.name, Offset: off, Bytes: n, Reason: reason}
		return
	}
	if r.opts.onDrop != nil {
		r.opts.onDrop(Drop{File: r.opts.name, Offset: off, Bytes: n, Reason: reason, TornTail: torn})
	}
}

// cut drops the fragmented record under way, which covers [fragOff, end);
// an empty reason drops it silently. It sets cutErr to what a streamed
// record's Read returns: io.ErrUnexpectedEOF for a torn tail, a
// *CorruptionError for damage.
func (r *Reader) cut(reason string, torn bool, end int64) contStatus {
	if torn {
		r.cutErr = io.ErrUnexpectedEOF
	} else {
		r.cutErr = &CorruptionError{File: r.opts.name, Offset: r.fragOff, Bytes: end - r.fragOff, Reason: reason}
	}
	if reason != "" {
		r.report(r.fragOff, end-r.fragOff, reason, torn)
	}
	if r.err != nil {
		return contFail
	}
	return contCut
}

// continueAfterZero handles zeroed space inside a fragmented record. No
// writer leaves such a gap, so the record is lost; whether that is a torn
// tail or damage depends on what follows the zeros: the end of the log (as
// when a crash leaves preallocated space unwritten) or more data.
func (r *Reader) continueAfterZero() ([]byte, contStatus) {
	p := r.read()
	for p.kind == physZero {
		p = r.read()
	}
	switch p.kind {
	case physEOF, physTorn:
		return nil, r.cut("incomplete record", true, p.off+p.span)
	case physErr:
		r.err = p.err
		return nil, contFail
	}
	r.unread = true
	return nil, r.cut("partial record cut by zeroed space", false, r.fragEnd)
}
