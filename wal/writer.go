package wal

import (
	"encoding/binary"
	"io"

	"github.com/cockroachdb/errors"
)

// Writer appends records to a log. It writes exactly the bytes LevelDB's
// log::Writer, goleveldb's journal.Writer and Pebble's record.Writer write
// for the same records.
//
// A Writer buffers the current block: WriteRecord copies fragments into the
// block buffer and hands the buffer to the underlying io.Writer whenever the
// block fills; Flush hands over the rest. A fragment of at least 4 KiB
// that completes its block (the FIRST and MIDDLE fragments
// of a large record) is not copied: the buffered bytes and its header go out
// in one Write and its payload in a second, straight from the caller's
// slice. So a record is copied at most once, and a large one only in its
// last fragment.
//
// If the underlying io.Writer is a FragmentWriter, the Writer buffers
// nothing: each fragment goes to WriteFragment as it is made, and each zero
// trailer to Write.
//
// Errors are sticky: after the underlying io.Writer fails once, every
// method returns that error. A Writer is not safe for concurrent use.
type Writer struct {
	w   io.Writer
	fw  FragmentWriter // w, if it is one
	err error

	// buf[:n] is the current block; buf[done:n] has not yet been written to
	// w. Bytes of buf[:done] may be stale (NewWriterAt never saw them).
	buf  *[BlockSize]byte
	n    int
	done int

	// blockOff is the log offset of buf[0].
	blockOff int64
	// lastOff is the offset of the first header of the last record, or -1.
	lastOff int64
}

// NewWriter returns a Writer that starts a new log at w's current position,
// which counts as offset 0.
func NewWriter(w io.Writer) *Writer {
	return NewWriterAt(w, 0)
}

// NewWriterAt returns a Writer that continues a log whose first size bytes
// are already written (a log reopened for append, with w positioned at its
// end). The position in the current block is size % BlockSize; when fewer
// than HeaderSize bytes remain in that block, the next record first writes
// the zero trailer. A negative size makes every method return an error.
func NewWriterAt(w io.Writer, size int64) *Writer {
	wr := &Writer{w: w, buf: new([BlockSize]byte), lastOff: -1}
	wr.fw, _ = w.(FragmentWriter)
	if size < 0 {
		wr.err = errors.Newf("wal: negative log size %d", size)
		return wr
	}
	wr.blockOff = size - size%BlockSize
	wr.n = int(size % BlockSize)
	wr.done = wr.n
	return wr
}

// WriteRecord appends p as one record, in as many fragments as the block
// boundaries require. The record is buffered; a full block is written
// through at once, the rest on Flush. p may be empty, and may be reused as
// soon as WriteRecord returns.
func (w *Writer) WriteRecord(p []byte) error {
	if w.err != nil {
		return w.err
	}
	first := true
	for {
		if BlockSize-w.n < HeaderSize {
			// Too little room for a header: fill the trailer with zeros.
			clear(w.buf[w.n:])
			w.n = BlockSize
			if !w.nextBlock() {
				return w.err
			}
		}
		if first {
			w.lastOff = w.blockOff + int64(w.n)
		}
		room := BlockSize - w.n - HeaderSize
		frag := min(len(p), room)
		last := frag == len(p)
		if w.fw != nil {
			if !w.handFragment(fragmentType(first, last), p[:frag]) {
				return w.err
			}
		} else if frag == room && frag >= directMin {
			if !w.writeThrough(fragmentType(first, last), p[:frag]) {
				return w.err
			}
		} else {
			w.appendFragment(fragmentType(first, last), p[:frag])
		}
		p = p[frag:]
		if w.n == BlockSize && !w.nextBlock() {
			return w.err
		}
		if last {
			return nil
		}
		first = false
	}
}

// appendFragment writes a header and payload at buf[n:]. The type byte and
// the payload are contiguous, so one CRC call covers both.
func (w *Writer) appendFragment(t RecordType, payload []byte) {
	h := w.buf[w.n : w.n+HeaderSize+len(payload)]
	binary.LittleEndian.PutUint16(h[4:6], uint16(len(payload)))
	h[6] = byte(t)
	copy(h[HeaderSize:], payload)
	binary.LittleEndian.PutUint32(h[0:4], checksum(h[6:]))
	w.n += len(h)
}

// handFragment gives a fragment, which starts at buf[n], to the
// FragmentWriter, and marks its bytes written. It reports whether that
// succeeded.
func (w *Writer) handFragment(t RecordType, payload []byte) bool {
	var h [HeaderSize]byte
	binary.LittleEndian.PutUint32(h[0:4], fragmentChecksum(t, payload))
	binary.LittleEndian.PutUint16(h[4:6], uint16(len(payload)))
	h[6] = byte(t)
	if err := w.fw.WriteFragment(&h, payload); err != nil {
		w.err = errors.Wrapf(err, "wal: write at offset %d", w.blockOff+int64(w.n))
		return false
	}
	w.n += HeaderSize + len(payload)
	w.done = w.n
	return true
}

// directMin is the smallest payload that writeThrough hands over uncopied:
// below it, a copy costs less than a second Write.
const directMin = 4096

// writeThrough writes the buffered bytes and the header of a fragment that
// completes the block, then the payload from the caller's slice, leaving
// the block full and written. It reports whether the writes succeeded.
func (w *Writer) writeThrough(t RecordType, payload []byte) bool {
	h := w.buf[w.n : w.n+HeaderSize]
	binary.LittleEndian.PutUint32(h[0:4], fragmentChecksum(t, payload))
	binary.LittleEndian.PutUint16(h[4:6], uint16(len(payload)))
	h[6] = byte(t)
	w.n += HeaderSize
	if !w.write() || !w.writeOut(payload) {
		return false
	}
	w.n, w.done = BlockSize, BlockSize
	return true
}

func fragmentType(first, last bool) RecordType {
	switch {
	case first && last:
		return FullType
	case first:
		return FirstType
	case last:
		return LastType
	}
	return MiddleType
}

// nextBlock writes out the full block and starts the next one. It reports
// whether the write succeeded.
func (w *Writer) nextBlock() bool {
	if !w.write() {
		return false
	}
	w.blockOff += BlockSize
	w.n, w.done = 0, 0
	return true
}

// write hands buf[done:n] to the underlying io.Writer.
func (w *Writer) write() bool {
	if w.done == w.n {
		return true
	}
	if !w.writeOut(w.buf[w.done:w.n]) {
		return false
	}
	w.done = w.n
	return true
}

// writeOut writes b, which goes to log offset blockOff+done, and reports
// whether it all went; if not, w.err is set.
func (w *Writer) writeOut(b []byte) bool {
	m, err := w.w.Write(b)
	if err == nil && m < len(b) {
		err = io.ErrShortWrite
	}
	if err != nil {
		w.err = errors.Wrapf(err, "wal: write at offset %d", w.blockOff+int64(w.done))
		return false
	}
	return true
}

// Flush writes every buffered byte to the underlying io.Writer. It does not
// sync: call the file's Sync (or fdatasync) after Flush for durability.
func (w *Writer) Flush() error {
	if w.err != nil {
		return w.err
	}
	w.write()
	return w.err
}

// Buffered returns the number of bytes written by WriteRecord but not yet
// handed to the underlying io.Writer; Flush makes it 0.
func (w *Writer) Buffered() int {
	return w.n - w.done
}

// Size returns the length of the log after the next Flush: the size given
// to NewWriterAt plus every byte written since, buffered bytes included.
func (w *Writer) Size() int64 {
	return w.blockOff + int64(w.n)
}

// FragmentWriter is an io.Writer that takes a log's fragments one at a
// time: a Writer over a FragmentWriter buffers nothing, hands it every
// fragment through WriteFragment, in order, and writes only zero trailers
// through Write. The use is a file written with one vectored write per
// fragment (header and payload from their own buffers), which copies no
// payload into a block buffer first.
type FragmentWriter interface {
	io.Writer
	// WriteFragment appends the fragment whose header is h and whose
	// payload follows it. The header is valid only during the call.
	WriteFragment(h *[HeaderSize]byte, payload []byte) error
}

// LastRecordOffset returns the offset in the log of the first header of the
// record last written by WriteRecord, or -1 if there is none. A Reader
// reports the same offset through its LastRecordOffset.
func (w *Writer) LastRecordOffset() int64 {
	return w.lastOff
}
