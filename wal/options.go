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
