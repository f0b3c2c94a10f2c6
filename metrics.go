package shale

import (
	"fmt"
	"strings"
	"time"

	"github.com/shale-db/shale/compaction"
	"github.com/shale-db/shale/internal/manifest"
)

// LevelMetrics describes one level of the tree.
type LevelMetrics struct {
	Tables int
	Bytes  int64
	// Score is the level's need of compaction: at 1 or more it is due.
	// Level 0's is its table count over 4; a deeper level's is its bytes
	// over Target.
	Score float64
	// Target is the level's target size in bytes (0 for level 0 and for
	// the levels above the base level, which stay empty).
	Target int64
	// BytesIn is what compactions read from this level; BytesWritten what
	// flushes (level 0) and compactions wrote into it, since Open.
	BytesIn, BytesWritten int64
	// Compactions counts the compactions, trivial moves included, that
	// wrote into this level since Open.
	Compactions int64
}

// StallMetrics counts one kind of write stall since Open.
type StallMetrics struct {
	Count    int64
	Duration time.Duration
}

// Metrics is a description of the database at one moment: the shape of
// its tree, and what its background work and its writers did since Open.
// Counters start at zero at each Open.
type Metrics struct {
	Levels [NumLevels]LevelMetrics
	// BaseLevel is the level that level 0 compacts into.
	BaseLevel int

	// Flushes counts memtables written to level 0; FlushBytes their size.
	Flushes    int64
	FlushBytes int64
	// Compactions counts compactions by kind: Default (a level over its
	// target), Move (a table moved down without rewriting), Tombstone (a
	// table dense with deletions), Manual (Compact).
	Compactions struct{ Default, Move, Tombstone, Manual int64 }
	// CompactionBytesIn and CompactionBytesOut are the bytes compactions
	// read and wrote (moves excluded: they copy nothing).
	CompactionBytesIn, CompactionBytesOut int64
	// CompactionsRunning is the number of compactions under way.
	CompactionsRunning int
	// Subcompactions counts the parts that compactions out of level 0
	// were split into, each run beside the others (see
	// Options.MaxConcurrentCompactions); an unsplit compaction adds none.
	Subcompactions int64
	// WALBytes is what the write-ahead logs received since Open.
	WALBytes int64
	// WALRecords counts the records written to the write-ahead logs since
	// Open: one a commit group, however many writers' batches it holds.
	// WALSyncs counts the syncs of a log that Sync writes asked for. With
	// many concurrent Sync writers, WALRecords and WALSyncs well below
	// their writes show group commit at work.
	WALRecords, WALSyncs int64
	// WriteAmp is (WALBytes + FlushBytes + CompactionBytesOut) / WALBytes:
	// the bytes written to disk per byte written by the user, in the
	// engine's files (0 before any write).
	WriteAmp float64

	// Stalls: Slowdown is a write delayed because level 0 reached 8
	// tables; MemtableFull a write waiting because full memtables
	// (Options.MaxImmutableMemtables of them) waited to be flushed;
	// L0Full a write waiting because level 0 held 12 tables. Flush waits
	// for the same reasons uncounted.
	Stalls struct{ Slowdown, MemtableFull, L0Full StallMetrics }

	// BlockCache: hits, misses, and the bytes of data blocks it holds out
	// of its capacity; Pinned is the bytes of the tables' index and filter
	// blocks, which it holds beside them under the same capacity (see
	// Options.CacheSize), plus any too large for it that their open
	// tables keep.
	BlockCache struct{ Hits, Misses, Bytes, Pinned, Capacity int64 }

	// MemtableBytes is the approximate size of the memtable taking writes;
	// ImmutableMemtables how many full ones wait to be flushed, holding
	// ImmutableBytes. WALSize is the size of the WAL taking writes.
	MemtableBytes      int64
	ImmutableMemtables int
	ImmutableBytes     int64
	WALSize            int64

	// ManifestSize is the size of the MANIFEST (0 on a read-only DB);
	// ManifestSwitches counts the times it was replaced by a new one
	// since Open (see Options.MaxManifestFileSize).
	ManifestSize, ManifestSwitches int64

	// Marked reports that the directory carries the mark that makes
	// LevelDB and goleveldb refuse to open it: its logs or tables may
	// hold range deletions (see DB.DeleteRange). It comes off once
	// compaction has dropped the last of them.
	Marked bool

	// Transactions: Open is how many are open; Conflicts counts the
	// commits refused with ErrConflict since Open, Trimmed the keys the
	// conflict log forgot to stay within Options.TxnConflictMemory.
	// TrackedKeys and TrackedBytes are what the log holds now: the keys
	// written since the oldest open transaction began, and their
	// estimated memory.
	Transactions struct {
		Open, Conflicts, Trimmed int64
		TrackedKeys              int
		TrackedBytes             int64
	}
}

// stallKind indexes stallCounters.
type stallKind int

const (
	stallSlowdown stallKind = iota
	stallMemtable
	stallL0
	numStallKinds
)

// stallCounters accumulates write stalls; guarded by DB.mu.
type stallCounters [numStallKinds]StallMetrics

func (s *stallCounters) add(k stallKind, d time.Duration) {
	s[k].Count++
	s[k].Duration += d
}

// addWait adds d to a write's wait of kind k, counting the wait once
// however many times background work wakes it before it may go on:
// counted records the kinds already counted for this write.
func (s *stallCounters) addWait(k stallKind, d time.Duration, counted *[numStallKinds]bool) {
	if !counted[k] {
		counted[k] = true
		s[k].Count++
	}
	s[k].Duration += d
}

// bgCounters accumulates what flushes and compactions did; guarded by
// DB.mu.
type bgCounters struct {
	flushes, flushBytes   int64
	kinds                 [compaction.NumKinds]int64
	bytesIn, bytesOut     int64
	levelIn, levelWritten [manifest.NumLevels]int64
	levelCompactions      [manifest.NumLevels]int64
}

func (c *bgCounters) noteFlush(meta *manifest.FileMeta) {
	c.flushes++
	if meta != nil {
		c.flushBytes += meta.Size
		c.levelWritten[0] += meta.Size
	}
}

func (c *bgCounters) noteCompaction(cc *compaction.Compaction, r compactionResult) {
	c.kinds[cc.Kind]++
	c.bytesIn += r.bytesIn
	c.bytesOut += r.bytesOut
	for level, n := range r.inputLevels {
		c.levelIn[level] += n
	}
	c.levelWritten[cc.OutputLevel] += r.bytesOut
	c.levelCompactions[cc.OutputLevel]++
}

// Metrics returns the database's metrics. It works on a read-only DB too
// (the counters then stay at zero).
func (db *DB) Metrics() Metrics {
	var m Metrics
	v := db.vs.Current()
	shape := compaction.Measure(newVersionLSM(v), db.pickerOptions())
	m.BaseLevel = shape.BaseLevel
	for level := range NumLevels {
		m.Levels[level] = LevelMetrics{
			Tables: v.NumFiles(level), Bytes: shape.Sizes[level],
			Score: shape.Scores[level], Target: shape.Targets[level],
		}
	}
	v.Unref()
	cm := db.blockCache.Metrics()
	m.BlockCache.Hits, m.BlockCache.Misses = cm.Hits, cm.Misses
	m.BlockCache.Bytes, m.BlockCache.Pinned, m.BlockCache.Capacity = cm.Size-cm.Meta, cm.Meta+cm.Kept, db.opts.CacheSize
	m.WALBytes = db.walBytes.Load()
	m.Marked = db.vs.Marked()
	cs := db.txns.stats()
	m.Transactions.Open, m.Transactions.Conflicts, m.Transactions.Trimmed = cs.open, cs.conflicts, cs.trimmed
	m.Transactions.TrackedKeys, m.Transactions.TrackedBytes = cs.keys, cs.bytes
	m.WALRecords, m.WALSyncs = db.walRecords.Load(), db.walSyncs.Load()
	m.ManifestSize, m.ManifestSwitches = db.vs.ManifestSize(), db.manifestSwitches.Load()

	db.mu.Lock()
	defer db.mu.Unlock()
	c := &db.mu.counters
	m.Flushes, m.FlushBytes = c.flushes, c.flushBytes
	m.Compactions.Default = c.kinds[compaction.KindDefault]
	m.Compactions.Move = c.kinds[compaction.KindMove]
	m.Compactions.Tombstone = c.kinds[compaction.KindTombstone]
	m.Compactions.Manual = c.kinds[compaction.KindManual]
	m.CompactionBytesIn, m.CompactionBytesOut = c.bytesIn, c.bytesOut
	m.CompactionsRunning = len(db.mu.compactions)
	m.Subcompactions = int64(db.subcompactions.Load())
	for level := range NumLevels {
		lm := &m.Levels[level]
		lm.BytesIn, lm.BytesWritten, lm.Compactions = c.levelIn[level], c.levelWritten[level], c.levelCompactions[level]
	}
	if m.WALBytes > 0 {
		m.WriteAmp = float64(m.WALBytes+m.FlushBytes+m.CompactionBytesOut) / float64(m.WALBytes)
	}
	s := &db.mu.stalls
	m.Stalls.Slowdown, m.Stalls.MemtableFull, m.Stalls.L0Full = s[stallSlowdown], s[stallMemtable], s[stallL0]
	if db.mu.mem != nil {
		m.MemtableBytes = db.mu.mem.ApproximateSize()
	}
	m.ImmutableMemtables = len(db.mu.imm)
	for _, imm := range db.mu.imm {
		m.ImmutableBytes += imm.mem.ApproximateSize()
	}
	if db.mu.log != nil {
		m.WALSize = db.mu.log.size.Load()
	}
	return m
}

// String formats the metrics as a table, one row per level, then the
// counters.
func (m Metrics) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "level  tables        size     score      target     read(in)   written  compactions\n")
	for level, l := range m.Levels {
		base := ""
		if level == m.BaseLevel {
			base = " base"
		}
		target := "-"
		if l.Target > 0 {
			target = humanBytes(l.Target)
		}
		score := "-"
		switch {
		case level < NumLevels-1 && level > 0 && level < m.BaseLevel && l.Tables > 0:
			// Above the base level, where nothing should stay: due
			// before any level, whatever its size (the picker's score
			// is a huge sentinel).
			score = "above"
		case level < NumLevels-1:
			score = fmt.Sprintf("%.2f", l.Score)
		}
		fmt.Fprintf(&b, "L%d%-5s %6d  %10s  %8s  %10s  %10s  %8s  %11d\n", level, base, l.Tables,
			humanBytes(l.Bytes), score, target, humanBytes(l.BytesIn), humanBytes(l.BytesWritten), l.Compactions)
	}
	fmt.Fprintf(&b, "flushes: %d (%s)\n", m.Flushes, humanBytes(m.FlushBytes))
	fmt.Fprintf(&b, "compactions: %d default, %d move, %d tombstone, %d manual; %d running; %d split parts; %s in, %s out\n",
		m.Compactions.Default, m.Compactions.Move, m.Compactions.Tombstone, m.Compactions.Manual,
		m.CompactionsRunning, m.Subcompactions, humanBytes(m.CompactionBytesIn), humanBytes(m.CompactionBytesOut))
	fmt.Fprintf(&b, "write amplification: %.2f (WAL %s in %d records, %d synced)\n", m.WriteAmp, humanBytes(m.WALBytes), m.WALRecords, m.WALSyncs)
	fmt.Fprintf(&b, "stalls: slowdown %d (%v), memtable full %d (%v), level 0 full %d (%v)\n",
		m.Stalls.Slowdown.Count, m.Stalls.Slowdown.Duration.Round(time.Millisecond),
		m.Stalls.MemtableFull.Count, m.Stalls.MemtableFull.Duration.Round(time.Millisecond),
		m.Stalls.L0Full.Count, m.Stalls.L0Full.Duration.Round(time.Millisecond))
	fmt.Fprintf(&b, "block cache: %d hits, %d misses, %s and %s of index and filter blocks of %s\n",
		m.BlockCache.Hits, m.BlockCache.Misses, humanBytes(m.BlockCache.Bytes),
		humanBytes(m.BlockCache.Pinned), humanBytes(m.BlockCache.Capacity))
	fmt.Fprintf(&b, "memtable: %s; immutable: %d (%s); WAL: %s\n", humanBytes(m.MemtableBytes),
		m.ImmutableMemtables, humanBytes(m.ImmutableBytes), humanBytes(m.WALSize))
	fmt.Fprintf(&b, "manifest: %s; replaced %d times since Open\n", humanBytes(m.ManifestSize), m.ManifestSwitches)
	fmt.Fprintf(&b, "transactions: %d open, %d conflicts; tracking %d keys (%s), %d forgotten past the limit\n",
		m.Transactions.Open, m.Transactions.Conflicts, m.Transactions.TrackedKeys,
		humanBytes(m.Transactions.TrackedBytes), m.Transactions.Trimmed)
	return b.String()
}

// humanBytes formats n with a binary unit: 0 B, 12 KiB, 3.4 MiB.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	f, suffix := float64(n), "KMGTPE"
	i := -1
	for f >= unit && i < len(suffix)-1 {
		f /= unit
		i++
	}
	if f < 10 {
		return fmt.Sprintf("%.1f %ciB", f, suffix[i])
	}
	return fmt.Sprintf("%.0f %ciB", f, suffix[i])
}
