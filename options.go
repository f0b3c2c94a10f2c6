package shale

import (
	"log/slog"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/shale-db/shale/sstable"
	"github.com/shale-db/shale/vfs"
)

// Durability says how far a write must have gone before Put, Delete or
// Write returns.
type Durability int

const (
	// NoSync returns once the write has reached the operating system: it
	// survives the process being killed (kill -9), not a power loss.
	NoSync Durability = iota
	// Sync returns once the write, and the directory entry of the log file
	// it went to, have reached the disk: it survives a power loss.
	Sync
)

// RecoveryMode says what Open does with a damaged write-ahead log.
type RecoveryMode int

const (
	// SkipCorrupt replays the records it can read and skips the damage:
	// as LevelDB does, damage drops the rest of its 32 KiB block (a
	// damaged length hides where the next record starts), intact records
	// after it in that block included.
	// It is the default.
	SkipCorrupt RecoveryMode = iota
	// PointInTime stops replaying at the first damage, so that what
	// survives is a prefix of the writes.
	PointInTime
	// Strict fails Open on any damage other than a torn tail (a write cut
	// short by a crash) at the end of the newest log.
	Strict
)

// String returns the mode's name as written in this package.
func (m RecoveryMode) String() string {
	switch m {
	case SkipCorrupt:
		return "SkipCorrupt"
	case PointInTime:
		return "PointInTime"
	case Strict:
		return "Strict"
	}
	return "RecoveryMode(" + itoa(int(m)) + ")"
}

// Compression is the block compression of the tables the database writes.
// Tables are read whatever compression they were written with.
type Compression int

const (
	// SnappyCompression compresses blocks with snappy when that saves at
	// least an eighth. It is the default.
	SnappyCompression Compression = iota
	// NoCompression writes blocks as they are.
	NoCompression
)

// Default sizes, used when the corresponding Options field is zero
// (DefaultMaxOpenFiles is, on Unix, a ceiling under the process's file
// limit: see Options.MaxOpenFiles).
const (
	// DefaultWriteBufferSize is 8 MiB, where LevelDB's is 4: shale counts
	// what a memtable takes, every entry's index slot included (see
	// memtable.ApproximateSize), where goleveldb counts only the keys' and
	// values' bytes. With db_bench's 100-byte values, 8 MiB holds 1.27
	// times the entries of goleveldb's 4 MiB memdb; the whole process's
	// peak RSS on fillrandom stays under goleveldb's (47.6 against 62.3
	// MiB). A memtable that holds more means fewer level-0 tables and
	// fewer, larger level-0 compactions: fillrandom's write amplification
	// fell from 3.74 to 2.78 and its time by 29% (three passes each, A/B
	// against 4 MiB; the README has the figures).
	DefaultWriteBufferSize = 8 << 20
	DefaultCacheSize       = 8 << 20
	DefaultMaxOpenFiles    = 500
	DefaultBlockSize       = 4 << 10
	// DefaultBlockRestartInterval is twice LevelDB's 16: a restart point
	// stores its key whole and 4 bytes more, and at 16 keys apart they
	// took 0.4% of fillrandom's tables (100-byte values); a lookup in a
	// block scans about 8 more keys, which readrandom did not show.
	DefaultBlockRestartInterval = sstable.DefaultRestartInterval
	DefaultBloomBitsPerKey      = 10
	DefaultTargetFileSize       = 2 << 20
	// DefaultMaxImmutableMemtables is Options.MaxImmutableMemtables'
	// default.
	DefaultMaxImmutableMemtables = 2
	// DefaultMaxManifestFileSize bounds the MANIFEST of a database that
	// stays open: past it, the next flush or compaction starts a new one.
	// Open replays a MANIFEST of compaction edits at about 64 MiB a
	// second (measured on a 2-core machine), so the bound keeps what a
	// MANIFEST adds to Open near a quarter of a second.
	DefaultMaxManifestFileSize = 16 << 20
	// DefaultDiskSlowThreshold is Options.DiskSlowThreshold's default.
	DefaultDiskSlowThreshold = time.Second
)

// Options configure Open. The zero value (and a nil *Options) means the
// defaults; Open fills and validates a copy once and never changes the
// caller's.
type Options struct {
	// ReadOnly opens an existing database without changing anything on
	// disk: no files are created, rewritten or deleted, and the lock is
	// taken shared, so read-only opens exclude a writer but not each other.
	// Open fails if there is no database. Writes fail with ErrReadOnly.
	// A directory without a LOCK file (a copy of a database, say) is read
	// without a lock rather than have one created.
	ReadOnly bool
	// ErrorIfNotExists makes Open fail, with an error matching
	// fs.ErrNotExist, if dir holds no database (no CURRENT), rather than
	// create one.
	ErrorIfNotExists bool
	// Recovery says how Open treats damage in the write-ahead logs.
	Recovery RecoveryMode
	// WriteBufferSize is the memtable size, in bytes, above which it is
	// flushed to a table. Default DefaultWriteBufferSize.
	WriteBufferSize int64
	// CacheSize is the capacity of the block cache in bytes. It holds the
	// tables' data blocks and their index and filter blocks alike, least
	// recently used first out, so the memory reads take stays within it
	// however large the database grows (index and filter blocks are about
	// 5% of the tables: 45 MB at 20 million keys). An index or filter
	// block larger than a sixteenth of it is kept by its table while the
	// table is open instead. Default DefaultCacheSize.
	CacheSize int64
	// MaxOpenFiles bounds the table files kept open, by reads and
	// compactions alike: an iterator over more tables than this reopens
	// files rather than hold more open. Default: on Unix, half the
	// process's soft limit on open files (RLIMIT_NOFILE) and at most
	// DefaultMaxOpenFiles; elsewhere DefaultMaxOpenFiles. A value below 16
	// is taken as 16.
	MaxOpenFiles int
	// BlockSize is the approximate size of a table's data blocks before
	// compression. Default DefaultBlockSize.
	BlockSize int
	// BlockRestartInterval is the number of keys between restart points
	// in a data block (LevelDB's block_restart_interval): keys between
	// them are stored as a suffix of the key before, and a lookup in a
	// block scans from the restart point before its key. Default
	// DefaultBlockRestartInterval.
	BlockRestartInterval int
	// BloomBitsPerKey sizes the bloom filters of new tables, in bits per
	// key: 10 (the default, DefaultBloomBitsPerKey) lets about 1% of the
	// lookups of an absent key through to a data block. A negative value
	// writes tables without filters, as LevelDB does by default: they take
	// about BloomBitsPerKey/8 bytes a key less, and every lookup that
	// reaches a table reads one of its data blocks. Tables keep the
	// filters they were written with. Open refuses more than
	// sstable.MaxBloomBitsPerKey (100).
	BloomBitsPerKey int
	// Compression of new tables' blocks. Default SnappyCompression.
	Compression Compression
	// TargetFileSize is the size at which compactions start a new table.
	// Default DefaultTargetFileSize.
	TargetFileSize int64
	// MaxManifestFileSize is the size past which a writable DB replaces
	// its MANIFEST (a record of every flush and compaction, replayed by
	// the next Open) with a new one holding only the current state, so
	// that a database that stays open for months neither grows it without
	// end nor makes its next Open replay it all. The limit is at least
	// twice the size of the state a new MANIFEST starts with (a database
	// of many tables has a larger one). Open always starts a new MANIFEST.
	// Default DefaultMaxManifestFileSize; a negative value never replaces
	// it while the database is open, as LevelDB does.
	MaxManifestFileSize int64
	// MaxImmutableMemtables is how many full memtables may wait for their
	// flushes before a write that fills one more waits: 1 or 2. Default
	// DefaultMaxImmutableMemtables (2): a slow flush does not stop writes,
	// and two full memtables are flushed side by side, on two cores when
	// there are two. The memtables then hold up to three write buffers,
	// only while flushes fall behind. With 1 they hold at most two, as
	// LevelDB's and RocksDB's do by default: at 1M keys db_bench's
	// fillbatch (whose flushes fall behind its writer) ran 1.27 times as
	// fast with 2, for a peak RSS 8 MiB higher (53 against 45 MiB).
	MaxImmutableMemtables int
	// MaxConcurrentCompactions bounds the compactions that run at once
	// (a flush runs beside them in any case). A compaction out of level 0,
	// which nothing else can run beside, is split by key range into up to
	// this many parts (at most 4) that run at once. Default: 1 on a
	// machine with one CPU, else 2.
	MaxConcurrentCompactions int
	// WALCompression writes the write-ahead log's records compressed with
	// snappy (wal.CompressRecords: a record is stored compressed when that
	// saves at least an eighth). LevelDB and goleveldb cannot read such a
	// log, so the directory is marked while a compressed WAL is live, and
	// both refuse to open it (see the package doc); reopening without
	// WALCompression takes the mark off once the compressed WALs are
	// flushed. Off by default.
	WALCompression bool
	// TxnConflictMemory bounds the memory that keeps, while transactions
	// are open, the keys written since the oldest of them began (about
	// 96 bytes a key besides its bytes). Past it the oldest keys are
	// forgotten, and a transaction that began before them fails to commit
	// with an error matching ErrConflict that says so. Default
	// DefaultTxnConflictMemory (64 MiB).
	TxnConflictMemory int64
	// FS is the file system the database's files live in (see package
	// vfs): nil is the operating system's (vfs.Default); vfs.NewMem() keeps
	// the database in memory. Every file shale touches, the LOCK file
	// included, goes through it.
	FS vfs.FS
	// Logger receives what recovery found and background errors. Nil
	// means, for a writable Open, a LOG file in the database directory
	// (the previous one kept as LOG.old), as LevelDB writes; a read-only
	// Open with a nil Logger logs nowhere (see DB.Recovery).
	Logger *slog.Logger
	// EventListener, if not nil, is told of flushes, compactions, write
	// stalls, the files the DB creates and deletes, background errors and
	// slow syncs, on a goroutine of its own (see EventListener for how
	// and when).
	EventListener *EventListener
	// DiskSlowThreshold is how long a sync may take before
	// EventListener.DiskSlow hears of it. 0 means DefaultDiskSlowThreshold
	// (one second). Without a DiskSlow callback syncs are not timed.
	DiskSlowThreshold time.Duration

	// disableAutoCompactions, for this package's tests that lay out
	// levels by hand, leaves compaction to Compact.
	disableAutoCompactions bool
	// defaultLogger is set when Logger was nil: a writable Open then
	// writes LOG.
	defaultLogger bool
}

// withDefaults returns a validated copy of o with zero fields filled.
func (o *Options) withDefaults() (Options, error) {
	var c Options
	if o != nil {
		c = *o
	}
	if c.Recovery < SkipCorrupt || c.Recovery > Strict {
		return c, errors.Newf("shale: invalid recovery mode %d", int(c.Recovery))
	}
	if c.Compression < SnappyCompression || c.Compression > NoCompression {
		return c, errors.Newf("shale: invalid compression %d", int(c.Compression))
	}
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"WriteBufferSize", c.WriteBufferSize}, {"CacheSize", c.CacheSize},
		{"MaxOpenFiles", int64(c.MaxOpenFiles)}, {"BlockSize", int64(c.BlockSize)},
		{"BlockRestartInterval", int64(c.BlockRestartInterval)},
		{"TargetFileSize", c.TargetFileSize},
		{"MaxConcurrentCompactions", int64(c.MaxConcurrentCompactions)},
		{"MaxImmutableMemtables", int64(c.MaxImmutableMemtables)},
		{"TxnConflictMemory", c.TxnConflictMemory},
	} {
		if f.v < 0 {
			return c, errors.Newf("shale: Options.%s is negative (%d)", f.name, f.v)
		}
	}
	if c.MaxImmutableMemtables > maxImmutables {
		return c, errors.Newf("shale: Options.MaxImmutableMemtables is %d; at most %d", c.MaxImmutableMemtables, maxImmutables)
	}
	if c.BloomBitsPerKey > sstable.MaxBloomBitsPerKey {
		return c, errors.Newf("shale: Options.BloomBitsPerKey is %d; at most %d", c.BloomBitsPerKey, sstable.MaxBloomBitsPerKey)
	}
	setDefault(&c.WriteBufferSize, DefaultWriteBufferSize)
	setDefault(&c.CacheSize, DefaultCacheSize)
	setDefault(&c.MaxOpenFiles, defaultMaxOpenFiles())
	setDefault(&c.BlockSize, DefaultBlockSize)
	setDefault(&c.BlockRestartInterval, DefaultBlockRestartInterval)
	setDefault(&c.BloomBitsPerKey, DefaultBloomBitsPerKey)
	setDefault(&c.TargetFileSize, DefaultTargetFileSize)
	setDefault(&c.MaxManifestFileSize, DefaultMaxManifestFileSize)
	setDefault(&c.MaxConcurrentCompactions, defaultMaxConcurrentCompactions())
	setDefault(&c.MaxImmutableMemtables, DefaultMaxImmutableMemtables)
	setDefault(&c.TxnConflictMemory, DefaultTxnConflictMemory)
	if c.DiskSlowThreshold < 0 {
		return c, errors.Newf("shale: Options.DiskSlowThreshold is negative (%v)", c.DiskSlowThreshold)
	}
	if c.DiskSlowThreshold == 0 {
		c.DiskSlowThreshold = DefaultDiskSlowThreshold
	}
	if c.MaxOpenFiles < 16 {
		c.MaxOpenFiles = 16
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
		c.defaultLogger = true
	}
	return c, nil
}

// maxOpenFilesFor returns the default MaxOpenFiles under a soft limit of
// limit open files: half of it, at most DefaultMaxOpenFiles (the
// minimum of 16 applies after).
func maxOpenFilesFor(limit uint64) int {
	return int(min(limit/2, DefaultMaxOpenFiles))
}

func setDefault[T int | int64](p *T, def T) {
	if *p == 0 {
		*p = def
	}
}
