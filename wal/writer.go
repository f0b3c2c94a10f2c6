package wal

import (
	"encoding/binary"
	"io"

	"github.com/cockroachdb/errors"
	"github.com/golang/snappy"
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

	opts writerOptions
	// pack holds the entries of the pack under way (PackSmallRecords):
	// packRecs records, to start at log offset packOff.
	pack     []byte
	packRecs int
	packOff  int64
	zbuf     []byte // compressed records are built here
}

// MaxPackedRecord is the largest record PackSmallRecords packs: past it,
// the 7 bytes a header costs are under 0.7% of the record, and a record
// that size would fill too much of a pack's block.
const MaxPackedRecord = 1024

// minCompressed is the smallest record CompressRecords tries to compress:
// snappy cannot save an eighth of anything shorter.
const minCompressed = 16

// NewWriter returns a Writer that starts a new log at w's current position,
// which counts as offset 0. Without options it writes LevelDB's bytes;
// PackSmallRecords and CompressRecords add shale's fragment types, which
// NewReader reads without being told.
func NewWriter(w io.Writer, opts ...WriterOption) *Writer {
	return NewWriterAt(w, 0, opts...)
}

// NewWriterAt returns a Writer that continues a log whose first size bytes
// are already written (a log reopened for append, with w positioned at its
// end). The position in the current block is size % BlockSize; when fewer
// than HeaderSize bytes remain in that block, the next record first writes
// the zero trailer. A negative size makes every method return an error.
func NewWriterAt(w io.Writer, size int64, opts ...WriterOption) *Writer {
	wr := &Writer{w: w, buf: new([BlockSize]byte), lastOff: -1}
	for _, o := range opts {
		o(&wr.opts)
	}
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
	if w.opts.pack && len(p) <= MaxPackedRecord {
		return w.addToPack(p)
	}
	if err := w.endPack(); err != nil {
		return err
	}
	return w.writeRecord(p, w.opts.compress)
}

// addToPack adds p to the pack under way, ending it first if p does not
// fit in its block. A record that cannot start a pack where the log stands
// (too little of the block left) is written on its own.
func (w *Writer) addToPack(p []byte) error {
	entry := uvarintLen(len(p)) + len(p)
	if w.packRecs > 0 && int(w.packOff-w.blockOff)+HeaderSize+len(w.pack)+entry > BlockSize {
		if err := w.endPack(); err != nil {
			return err
		}
	}
	if w.packRecs == 0 {
		if BlockSize-w.n < HeaderSize {
			clear(w.buf[w.n:])
			w.n = BlockSize
			if !w.nextBlock() {
				return w.err
			}
		}
		if BlockSize-w.n < HeaderSize+entry {
			return w.writeRecord(p, w.opts.compress)
		}
		w.packOff = w.blockOff + int64(w.n)
	}
	w.pack = binary.AppendUvarint(w.pack, uint64(len(p)))
	w.pack = append(w.pack, p...)
	w.packRecs++
	w.lastOff = w.packOff
	return nil
}

// endPack writes the pack under way, if any, where the log stands (which
// is where it was begun: nothing is written while a pack is open). A pack
// of one record is written as that record.
func (w *Writer) endPack() error {
	defer func() { w.pack, w.packRecs = w.pack[:0], 0 }()
	switch w.packRecs {
	case 0:
		return nil
	case 1:
		_, n := binary.Uvarint(w.pack)
		return w.writeRecord(w.pack[n:], w.opts.compress)
	}
	payload, t := w.pack, PackedType
	if w.opts.compress {
		if c, ok := w.compressed(payload); ok {
			payload, t = c, PackedSnappyType
		}
	}
	if w.fw != nil {
		if !w.handFragment(t, payload) {
			return w.err
		}
	} else {
		w.appendFragment(t, payload)
	}
	if w.n == BlockSize && !w.nextBlock() {
		return w.err
	}
	return nil
}

// compressed returns p compressed with snappy if that saves at least an
// eighth of it.
func (w *Writer) compressed(p []byte) ([]byte, bool) {
	if len(p) < minCompressed {
		return nil, false
	}
	w.zbuf = snappy.Encode(w.zbuf[:cap(w.zbuf)], p)
	if len(w.zbuf) > len(p)-len(p)/8 {
		return nil, false
	}
	return w.zbuf, true
}

func uvarintLen(n int) int {
	l := 1
	for ; n >= 0x80; n >>= 7 {
		l++
	}
	return l
}

// writeRecord writes p as one record (compressed if compress is set and
// it pays), in as many fragments as the block boundaries require.
func (w *Writer) writeRecord(p []byte, compress bool) error {
	firstType, fullType := FirstType, FullType
	if compress {
		if c, ok := w.compressed(p); ok {
			p, firstType, fullType = c, SnappyFirstType, SnappyFullType
		}
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
		t := recordType(first, last, firstType, fullType)
		if w.fw != nil {
			if !w.handFragment(t, p[:frag]) {
				return w.err
			}
		} else if frag == room && frag >= directMin {
			if !w.writeThrough(t, p[:frag]) {
				return w.err
			}
		} else {
			w.appendFragment(t, p[:frag])
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

// recordType is the type of a fragment of a record whose first and full
// types are firstType and fullType.
func recordType(first, last bool, firstType, fullType RecordType) RecordType {
	switch {
	case first && last:
		return fullType
	case first:
		return firstType
	case last:
		return LastType
	}
	return MiddleType
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
	if err := w.endPack(); err != nil {
		return err
	}
	w.write()
	return w.err
}

// Buffered returns the number of bytes written by WriteRecord but not yet
// handed to the underlying io.Writer (a pack under way counted as stored
// plain); Flush makes it 0.
func (w *Writer) Buffered() int {
	return w.n - w.done + w.pendingPack()
}

// pendingPack returns the bytes the pack under way takes stored plain.
func (w *Writer) pendingPack() int {
	if w.packRecs == 0 {
		return 0
	}
	return HeaderSize + len(w.pack)
}

// Size returns the length of the log after the next Flush: the size given
// to NewWriterAt plus every byte written since, buffered bytes included
// (a pack under way counted as stored plain, which compression may make
// shorter).
func (w *Writer) Size() int64 {
	return w.blockOff + int64(w.n+w.pendingPack())
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
