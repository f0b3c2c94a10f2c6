package vfs

import "io"

// Appender appends to a new file of the OS file system, where the
// platform offers a faster way for the write-ahead log's Sync appends than
// File.Write (Linux on amd64 and arm64). Every append is a write(2) call
// (pwritev), so what the file system answers is what the append returns,
// and what an Appender has appended is in the kernel's page cache: it
// survives the process being killed, and Sync makes it durable. Until
// Finish the file may be longer than what was appended, the rest zeros
// (space reserved ahead of the appends; LevelDB's log readers skip zeroed
// space).
//
// An Appender is also a wal.FragmentWriter (its WriteFragment has that
// method's signature, spelled out here so that vfs need not import wal):
// a fragment's header and payload go out in one call, from the caller's
// buffers.
//
// After any failure an Appender fails every later call with that error.
// An Appender is used by one goroutine at a time; the File it came from
// must not be written while it is in use.
type Appender interface {
	io.Writer
	// WriteFragment appends the 7-byte header h and then payload.
	WriteFragment(h *[7]byte, payload []byte) error
	// Sync makes what was appended durable (fdatasync).
	Sync() error
	// Finish ends the appends: the file is cut to what was appended. The
	// File stays open; the caller syncs and closes it.
	Finish() error
}

// AppendTo returns an Appender over f, a new, empty file created by this
// package's OS file system, or nil if there is none for f (another file
// system, or a platform without one): the caller then writes to f.
func AppendTo(f File) (Appender, error) { return appendTo(f) }
