package wal

// ReaderOption configures a Reader; pass options to NewReader or
// NewRangeReader.
type ReaderOption func(*readerOptions)

type readerOptions struct {
	name   string
	strict bool
	onDrop func(Drop)
}

// Named sets the file name that Drops and errors carry, so that reports say
// which log they are about.
func Named(name string) ReaderOption {
	return func(o *readerOptions) { o.name = name }
}

// Strict makes the first damage end reading: Next (and a streamed record's
// Read) returns a *CorruptionError, which matches ErrCorrupt, and returns it
// again on every later call. A torn tail is not damage: in strict mode too it
// ends the log with io.EOF and is reported to the OnDrop callback.
func Strict() ReaderOption {
	return func(o *readerOptions) { o.strict = true }
}

// OnDrop sets a function that the Reader calls, from within Next,
// NextReader or a streamed record's Read, for every stretch of the log it
// skips: each piece of damage (unless Strict turns it into an error) and the
// torn tail. Without it, drops go unreported. Zeroed, preallocated space and
// block trailers are not drops.
func OnDrop(f func(Drop)) ReaderOption {
	return func(o *readerOptions) { o.onDrop = f }
}

// WriterOption configures a Writer; pass options to NewWriter or
// NewWriterAt. Without options a Writer writes LevelDB's bytes exactly.
type WriterOption func(*writerOptions)

type writerOptions struct {
	pack, compress bool
}

// PackSmallRecords makes the Writer put consecutive small records (of at
// most MaxPackedRecord bytes) into one fragment of type PackedType: one
// header and one checksum for them all, and about one byte more a record
// (its length). A pack lies in one block; it ends when the next record
// would not fit in what is left of the block, when a record too large to
// pack comes, and at Flush, so that a flushed record can be read. A pack
// of one record is written as a FULL fragment.
func PackSmallRecords() WriterOption {
	return func(o *writerOptions) { o.pack = true }
}

// CompressRecords makes the Writer store a record (or a pack) compressed
// with snappy, as its own fragment type, when that saves at least an
// eighth of its bytes (as tables decide); otherwise it is stored plain.
// The checksum covers the stored bytes, so damage is caught before
// decompression.
func CompressRecords() WriterOption {
	return func(o *writerOptions) { o.compress = true }
}
