// Package manifest keeps the set of table files that make up the database
// (a Version), the changes made to it (VersionEdits), and their durable
// record: the MANIFEST file, named by the CURRENT file. The formats are
// LevelDB's, so goleveldb and LevelDB read what this package writes and the
// other way round.
//
// # Use
//
// A new database starts with Create; an existing one opens with Load, which
// replays the MANIFEST named by CURRENT and, unless read-only, starts a new
// MANIFEST holding a snapshot of the result. The engine then records each
// flush or compaction with LogAndApply, reads through Current (a referenced
// Version that must be released with Unref), allocates file numbers with
// NewFileNum, and asks LiveFiles which tables it must not delete.
//
// # Concurrency
//
// A VersionSet is safe for concurrent use: LogAndApply calls are serialized
// by the set (the engine makes them from one background goroutine); Current,
// LiveFiles, LogNumber and CompactPointer take a short mutex never held
// during I/O; NewFileNum, MarkFileNumUsed, LastSequence and SetLastSequence
// are atomic and never block. A Version is immutable once installed and safe
// for concurrent reads; its Ref and Unref are atomic. VersionEdit and
// FileMeta are plain values: one goroutine at a time.
//
// # Format (part of the format; LevelDB's, do not change)
//
// The MANIFEST is a record log (package wal, LevelDB's log format) whose
// records are each one encoded VersionEdit: a sequence of fields, each a
// varint32 tag followed by its value, in any order.
//
//	+-----+--------------------+-------------------------------------------+
//	| tag | field              | value                                     |
//	+-----+--------------------+-------------------------------------------+
//	|  1  | comparator         | varint32 length, name bytes               |
//	|  2  | log number         | varint64                                  |
//	|  3  | next file number   | varint64                                  |
//	|  4  | last sequence      | varint64                                  |
//	|  5  | compact pointer    | varint32 level, varint32 len, ikey        |
//	|  6  | deleted file       | varint32 level, varint64 number           |
//	|  7  | new file           | varint32 level, varint64 number,          |
//	|     |                    | varint64 size, varint32 len, smallest     |
//	|     |                    | ikey, varint32 len, largest ikey          |
//	|  8  | (unused; was large value refs in old LevelDB: corruption)      |
//	|  9  | prev log number    | varint64                                  |
//	+-----+--------------------+-------------------------------------------+
//
// Levels are below NumLevels (7); keys are internal keys (package ikey), at
// least 8 bytes. CURRENT holds the base name of the live MANIFEST and a
// newline: "MANIFEST-000005\n". It is replaced by writing a temporary file,
// syncing it, renaming it over CURRENT and syncing the directory.
//
// # Damage
//
// A MANIFEST is read strictly: any damage (bad checksum, undecodable edit,
// a version that breaks the level invariants) fails with an error matching
// ErrCorrupt that names the file and, for damage within a record, the record
// and the offset. Only a torn tail, a last
// record that was never completely written and so never acknowledged, ends
// the replay quietly. A writable Load never appends to a MANIFEST that may
// end in a torn tail: it starts a new one.
package manifest
