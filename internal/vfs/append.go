package vfs

import "io"

// Appender is a faster way to append to a new file than File.Write, where
// a file system offers one: on Linux the OS file system appends through a
// shared memory mapping, so that an append is a copy into the kernel's page
// cache rather than a write(2) call. What an Appender has appended is in
// the page cache, exactly as if written: it survives the process being
// killed, and Sync makes it durable. Until Finish the file may be longer
// than what was appended, the rest zeros (LevelDB's log readers skip
// zeroed space, which LevelDB's own mmap-based writer used to leave).
//
// An Appender is also a wal.FragmentWriter (its WriteFragment has that
// method's signature, spelled out here so that vfs need not import wal): a
// fragment's bytes go into the mapping first and its 4-byte checksum last,
// in one store, so a kill leaves the last fragment whole or with a zero
// checksum, and the file zero after it.
//
// An Appender is used by one goroutine at a time; the File it came from
// must not be written while it is in use.
type Appender interface {
	io.Writer
	// WriteFragment appends the 7-byte header h and then payload, storing
	// h[0:4] after everything else.
	WriteFragment(h *[7]byte, payload []byte) error
	// Sync makes what was appended durable (fdatasync).
	Sync() error
	// Finish ends the appends: the mapping is released and the file cut
	// to what was appended. The File stays open; the caller syncs and
	// closes it.
	Finish() error
}

// AppendTo returns an Appender over f, a new, empty file created by this
// package's OS file system, or nil if there is none for f (another file
// system, or a platform without one): the caller then writes to f.
func AppendTo(f File) (Appender, error) { return appendTo(f) }
