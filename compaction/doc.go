// Package compaction decides which tables of the LSM tree to merge, and
// merges them, keeping only what a reader can still see at the newest
// sequence number or at an open snapshot.
//
// # Use
//
// The engine describes one version of its tables as an LSM (the tables of
// each level, their key ranges, sizes and deletion counts) and calls Pick
// with what is under way (State). Pick returns a Compaction or nil. The
// engine then either moves the one input table down a level (KindMove) or
// builds an Iter over the inputs' entries (a merging iterator, in internal
// key order) and calls Run with a Filter for the open snapshots and an
// Outputs that creates the table files. Measure returns the levels'
// targets and scores, for metrics.
//
// Pick and Measure are pure functions of their arguments and safe for
// concurrent use. Run is not safe for concurrent use on one Outputs or
// Filter; separate runs are independent.
//
// This package exports only its own types, sstable's and the standard
// library's, so the engine's internal packages stay internal.
//
// # Levels and targets
//
// Level 0 holds flushed memtables, which overlap one another; its score
// is its table count over a trigger of 4. Every deeper level is a sorted
// run of disjoint tables, scored by its bytes over its target.
//
// Targets are sized from the bottom up, as RocksDB's "dynamic level bytes"
// does, not fixed from the top as LevelDB's (10 MiB for level 1, then ten
// times more per level). The last level's target is the size of the
// largest level, which is where the data is: the last level once the tree
// has settled. Each level above targets a tenth of the one below, up to
// the base level, the lowest-numbered level whose target is still at least
// the write buffer size; level 0 compacts straight into the base level, and
// the levels between are empty. A 1 GiB database with a 4 MiB write
// buffer:
//
//	level  target    holds
//	L0     4 tables  flushed memtables, about 4 MiB each
//	L1     -         empty
//	L2     -         empty
//	L3     -         empty (1 MiB would be under the write buffer size)
//	L4     10 MiB    base level: L0 compacts into it
//	L5     100 MiB
//	L6     1 GiB     the data
//
// With fixed targets, a database of a few tens of MiB has its data in
// level 1 and level 2 with level 2 mostly empty, and overwritten data can
// sit in level 1 as long again as the live data beneath it; with targets
// from the bottom up, every level above the last holds at most about a
// ninth of the data, so dead data stays near a ninth of the live, at any
// size. As the database grows the base level moves up; a database written
// by LevelDB or goleveldb, whose data lies in upper levels, has those
// tables moved down (without rewriting them where nothing overlaps).
//
// # Picking
//
// Pick tries the levels whose score is at least 1, highest first. Level 0
// takes its oldest table and every level-0 table that shares keys with
// the chosen ones, so that no older version of a key stays above a newer
// one; they merge into the base level, or into a level above it that
// still holds some of their keys, since those versions are older. A
// deeper level takes the first table after its compact pointer
// (round-robin through the key space, as LevelDB does), widened to
// neighbours that share a boundary user key. The inputs' overlap in the
// level below joins them. A single table that overlaps nothing below, and
// at most 10 tables' worth of the level after that, moves without being
// rewritten. When no level is due, a table whose entries are mostly
// deletions (a queue, a Raft log truncated from the front) is compacted
// anyway, so tombstones do not pile up in front of live keys.
//
// Compactions run side by side when they share no table and write no
// overlapping key range of one level; only one reads level 0 at a time.
package compaction
