// Package vfs is the file system shale does all its I/O through: the
// operating system's (Default), an in-memory one (NewMem) for tests and
// for databases that need no disk, or any FS of the caller's, given to
// shale.Options.FS. An FS can wrap another to encrypt at rest, count bytes
// or inject faults (see the Example).
//
// # What shale asks of an FS
//
// Names are paths as the os package takes them. shale creates the
// directory (MkdirAll), takes a LOCK file (Lock), creates and appends to
// its log and table files (Create, then Write and Sync), reads tables at
// any offset (Open, then ReadAt), replaces CURRENT atomically (Create a
// temporary file, Sync, Rename), lists the directory (List), removes
// obsolete files (Remove), and makes new, renamed and removed entries
// durable by syncing the directory (OpenDir, then Sync on the File it
// returns). Link is used by checkpoints, which fall back to copying when
// it fails.
//
// Durability is the FS's promise, and shale's rests on it: when File.Sync
// returns nil, the file's data must survive a power loss; when a File from
// OpenDir returns nil from Sync, so must the directory's entries. An error
// from any call reaches shale's caller: a failed write or sync fails the
// write in flight and every later one until a reopen.
//
// Implementations must be safe for concurrent use; a File must allow
// concurrent ReadAt, and is otherwise used by one goroutine at a time.
// Lock must fail at once, with an error matching ErrLocked, when the lock
// is held, in this process or another.
package vfs

import ivfs "github.com/shale-db/shale/internal/vfs"

// FS is a file system. See the package doc for what shale calls and
// relies on.
type FS = ivfs.FS

// File is an open file or directory.
type File = ivfs.File

// ErrLocked is matched (with errors.Is) by the error FS.Lock returns when
// the lock is held.
var ErrLocked = ivfs.ErrLocked

// Default is the operating system's file system: what shale uses when
// Options.FS is nil. On Linux its files' Sync is fdatasync, and its Lock
// takes both the flock lock goleveldb takes and the fcntl lock LevelDB
// takes.
var Default FS = ivfs.OS()

// NewMem returns an empty in-memory file system. A database opened on it,
// closed, and opened again on the same value has all its data; nothing is
// written to the real disk, and the memory goes with the value.
func NewMem() FS { return ivfs.NewMem() }
