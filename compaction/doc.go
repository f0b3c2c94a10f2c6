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
// the levels between are empty. A 1 GiB database with the default 8 MiB
// write buffer:
//
//	level  target    holds
//	L0     4 tables  flushed memtables, of up to 8 MiB each
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
//
// # At scale: 1 TB and 10 billion keys, on paper
//
// The per-table figures are measured: a 2 MiB table of db_bench's entries
// (16-byte keys, 100-byte values that snappy takes to about 57%) holds 882
// data blocks of 4 KiB before compression, about 35 entries each; its
// index block takes 19.6 bytes a data block, its filter 10.7 bits a key
// (10 for the bloom filter, the rest its offsets: 4 bytes for every 2 KiB
// of the table, LevelDB's format). An open table holds its index and
// filter in memory, plus 40 bytes a data block that Get binary-searches
// (sstable's index table): about 60 bytes a data block.
//
// Take 1 TB of tables in the last level and 10 billion keys: 100 bytes an
// entry on disk, about 40 entries in a 4 KiB block. With the defaults
// (8 MiB write buffer, 2 MiB tables, 4 KiB blocks, 10 bloom bits a key,
// 500 open tables):
//
//	level  target    tables of 2 MiB
//	L0     4 tables  4 to 12 (writes slow at 8 and stop at 12)
//	L1     10 MB     5: the base level
//	L2     100 MB    48
//	L3     1 GB      477
//	L4     10 GB     4,770
//	L5     100 GB    47,700
//	L6     1 TB      477,000
//	total  1.11 TB   530,000 files in one directory
//
// What follows from the table:
//
//   - Space: the levels above the last add a ninth: 1.11 TB, 11.1 billion
//     entries, 278 million data blocks.
//   - Index: 278 million blocks at 60 bytes, 16.7 GB. Filters: 13.9 GB of
//     bloom bits and 2.2 GB of offsets, 16.1 GB. About 33 GB in all, 3% of
//     the data, if every table were open at once.
//   - Open files: 500 of 530,000. A Get's last-level table is almost never
//     open: it opens the file and reads its footer, metaindex, index
//     (about 10 KiB) and filter (about 30 KiB), then the data block: five
//     reads and 44 KiB where one 4 KiB read would do.
//   - The MANIFEST: about 60 bytes a table, a snapshot of 32 MB that Open
//     reads whole. It is replaced at twice its snapshot (64 MB), not at
//     MaxManifestFileSize.
//   - The directory: after each flush and compaction the engine lists it
//     to find obsolete files, as LevelDB does. That took 0.17 ms at 400
//     files and 1.7 ms at 4,000 (linear): about 230 ms at 530,000, as
//     long as a compaction of 2 MiB tables.
//   - A Get, every table open: the memtables, the level-0 tables, then one
//     table per level: a binary search of the level's tables (19 steps in
//     L6), one of its index (9 steps) and a filter probe. A filter passes
//     1% of absent keys, so with four level-0 tables a Get of a present
//     key reads 1 + 0.01 x 9 = 1.09 data blocks on average, one of an
//     absent key 0.09. Almost all of them come from the disk: the 8 MiB
//     block cache is 1/130,000 of the data.
//   - Writes: a byte goes once to the WAL, once into a level-0 table, and
//     then into each level from L1 to L6, each time rewritten with up to
//     ten times as much of the level below (about half that on average):
//     a write amplification near 30 once the tree has six levels, and the
//     disk must sustain 30 times the rate of user writes. At 20 million
//     keys (under 1 GB, the base level L4) a run measured 6.9.
//
// So at this size one default is wrong: the table count. With
// TargetFileSize 64 MiB and BlockSize 16 KiB the same data is 17,000
// tables: MaxOpenFiles can hold them all (with the process's file limit
// raised), the MANIFEST snapshot is 1 MB, a listing 7 ms beside
// compactions that take seconds, and the index falls to 4.2 GB.
// The filters stay at 16.1 GB: LevelDB's format gives every table a
// filter, and shale has no option to leave the last level's out (as
// RocksDB's optimize_filters_for_hits does), which would save nine tenths
// of them for one data block read on each Get of an absent key. A machine
// holding 1 TB in shale needs about 20 GB of memory for its metadata.
package compaction
