package sstable

import "encoding/binary"

// blockWriter builds one block: prefix-compressed entries, then the restart
// array and its length (see the package doc for the layout).
type blockWriter struct {
	restartInterval int
	buf             []byte   // entries written so far
	restarts        []uint32 // offsets in buf of entries with shared == 0
	lastKey         []byte   // key of the last entry, for prefix sharing
	sinceRestart    int      // entries since the last restart point
	entries         int
}

// add appends an entry. Keys must be added in increasing order (the caller
// checks); the block does not look at their meaning.
func (w *blockWriter) add(key, value []byte) {
	shared := 0
	if w.sinceRestart < w.restartInterval && w.entries > 0 {
		n := min(len(key), len(w.lastKey))
		for shared < n && key[shared] == w.lastKey[shared] {
			shared++
		}
	} else {
		w.restarts = append(w.restarts, uint32(len(w.buf)))
		w.sinceRestart = 0
	}
	w.buf = binary.AppendUvarint(w.buf, uint64(shared))
	w.buf = binary.AppendUvarint(w.buf, uint64(len(key)-shared))
	w.buf = binary.AppendUvarint(w.buf, uint64(len(value)))
	w.buf = append(w.buf, key[shared:]...)
	w.buf = append(w.buf, value...)
	w.lastKey = append(w.lastKey[:0], key...)
	w.sinceRestart++
	w.entries++
}

// estimatedSize is the size finish would return now.
func (w *blockWriter) estimatedSize() int {
	n := len(w.restarts)
	if n == 0 {
		n = 1
	}
	return len(w.buf) + 4*n + 4
}

// finish appends the restart array and returns the block. An empty block
// has one restart point at 0, as LevelDB writes it. The result aliases the
// writer's buffer: it is valid until reset.
func (w *blockWriter) finish() []byte {
	if len(w.restarts) == 0 {
		w.restarts = append(w.restarts, 0)
	}
	for _, r := range w.restarts {
		w.buf = binary.LittleEndian.AppendUint32(w.buf, r)
	}
	w.buf = binary.LittleEndian.AppendUint32(w.buf, uint32(len(w.restarts)))
	return w.buf
}

// reset empties the writer for the next block, keeping its buffers.
func (w *blockWriter) reset() {
	w.buf = w.buf[:0]
	w.restarts = w.restarts[:0]
	w.lastKey = w.lastKey[:0]
	w.sinceRestart = 0
	w.entries = 0
}
