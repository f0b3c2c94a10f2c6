package shaleprom

import (
	"errors"
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/shale-db/shale"
)

// Opts configure New.
type Opts struct {
	// Namespace is the first part of every metric's name: "shale" if
	// empty.
	Namespace string
	// ConstLabels are added to every metric, to tell apart the
	// collectors of several DBs registered together, say.
	ConstLabels prometheus.Labels
}

// Collector is a prometheus.Collector of a shale DB's metrics: those of
// the events its EventListener hears, and those DB.Metrics reports for the
// DB given to Attach. It is safe for concurrent use. See the package
// documentation for the metrics.
type Collector struct {
	ev eventMetrics
	db dbDescs

	mu       sync.RWMutex // guards attached; held for reading while a scrape reads it
	attached *shale.DB
}

// eventMetrics are the metrics the EventListener updates.
type eventMetrics struct {
	flushes            *prometheus.CounterVec // reason
	flushesFailed      prometheus.Counter
	flushDuration      prometheus.Histogram
	flushWritten       prometheus.Counter
	compactions        *prometheus.CounterVec // reason
	compactionsFailed  prometheus.Counter
	compactionDuration *prometheus.HistogramVec // reason
	compactionRead     prometheus.Counter
	compactionWritten  prometheus.Counter
	stalls             *prometheus.CounterVec   // reason
	stallDuration      *prometheus.HistogramVec // reason
	backgroundErrors   prometheus.Counter
	slowSyncs          *prometheus.CounterVec // op
	slowSyncDuration   prometheus.Histogram
	tablesCreated      *prometheus.CounterVec // reason
	tablesDeleted      prometheus.Counter
	walsCreated        prometheus.Counter
	walsDeleted        prometheus.Counter

	all []prometheus.Collector
}

// The label values shale documents, set up front so that their series
// exist (at zero) before the first event.
var (
	flushReasons      = []string{"memtable full", "forced", "open"}
	compactionReasons = []string{"default", "move", "tombstone", "manual"}
	stallReasons      = []string{"memtable count limit reached", "L0 file count limit exceeded"}
	syncOps           = []string{"sync", "sync dir"}
	tableReasons      = []string{"flushing", "compacting"}
)

// dbDescs describe the metrics read from DB.Metrics.
type dbDescs struct {
	levelTables, levelSize, levelScore, levelTarget  *prometheus.Desc
	levelRead, levelWritten, levelCompactions        *prometheus.Desc
	baseLevel                                        *prometheus.Desc
	flushes, flushWritten                            *prometheus.Desc
	compactions, compactionRead, compactionWritten   *prometheus.Desc
	compactionsRunning                               *prometheus.Desc
	walWritten, walRecords, walSyncs, writeAmp       *prometheus.Desc
	stalls, stallDuration                            *prometheus.Desc
	cacheHits, cacheMisses                           *prometheus.Desc
	cacheSize, cachePinned, cacheCapacity            *prometheus.Desc
	memtableSize, immutables, immutableSize, walSize *prometheus.Desc
	manifestSize, manifestSwitches, marked           *prometheus.Desc
	txnOpen, txnConflicts, txnLogKeys, txnLogSize    *prometheus.Desc
	txnLogTrimmed                                    *prometheus.Desc
	all                                              []*prometheus.Desc
}

// New returns a Collector with no DB attached.
func New(opts Opts) *Collector {
	ns := opts.Namespace
	if ns == "" {
		ns = "shale"
	}
	c := &Collector{}
	c.ev = newEventMetrics(ns, opts.ConstLabels)
	c.db = newDBDescs(ns, opts.ConstLabels)
	return c
}

func newEventMetrics(ns string, constLabels prometheus.Labels) eventMetrics {
	var e eventMetrics
	counter := func(name, help string) prometheus.Counter {
		m := prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: name, Help: help, ConstLabels: constLabels})
		e.all = append(e.all, m)
		return m
	}
	counterVec := func(name, help, label string, values []string) *prometheus.CounterVec {
		m := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: name, Help: help, ConstLabels: constLabels}, []string{label})
		for _, v := range values {
			m.WithLabelValues(v)
		}
		e.all = append(e.all, m)
		return m
	}
	histogram := func(name, help string, buckets []float64) prometheus.Histogram {
		m := prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: name, Help: help, ConstLabels: constLabels, Buckets: buckets})
		e.all = append(e.all, m)
		return m
	}
	histogramVec := func(name, help string, buckets []float64, label string, values []string) *prometheus.HistogramVec {
		m := prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: name, Help: help, ConstLabels: constLabels, Buckets: buckets}, []string{label})
		for _, v := range values {
			m.WithLabelValues(v)
		}
		e.all = append(e.all, m)
		return m
	}

	// 1 ms to 16 s; compactions to 9 minutes; slow syncs from 10 ms (the
	// threshold is 1 s unless configured) to 82 s.
	jobBuckets := prometheus.ExponentialBuckets(0.001, 2, 15)
	compactionBuckets := prometheus.ExponentialBuckets(0.001, 2, 20)
	syncBuckets := prometheus.ExponentialBuckets(0.01, 2, 14)

	e.flushes = counterVec("flushes_total", "Memtable flushes that ended, failed or not, by reason.", "reason", flushReasons)
	e.flushesFailed = counter("flushes_failed_total", "Memtable flushes that ended with an error (other than the DB closing).")
	e.flushDuration = histogram("flush_duration_seconds", "Duration of memtable flushes.", jobBuckets)
	e.flushWritten = counter("flush_written_bytes_total", "Bytes of the tables that flushes wrote.")
	e.compactions = counterVec("compactions_total", "Compactions that ended, failed or not, by reason.", "reason", compactionReasons)
	e.compactionsFailed = counter("compactions_failed_total", "Compactions that ended with an error (other than the DB closing).")
	e.compactionDuration = histogramVec("compaction_duration_seconds", "Duration of compactions, by reason.", compactionBuckets, "reason", compactionReasons)
	e.compactionRead = counter("compaction_read_bytes_total", "Bytes of the tables that successful compactions read (moves excluded).")
	e.compactionWritten = counter("compaction_written_bytes_total", "Bytes of the tables that successful compactions wrote (moves excluded).")
	e.stalls = counterVec("write_stalls_total", "Write stalls that ended, by reason.", "reason", stallReasons)
	e.stallDuration = histogramVec("write_stall_duration_seconds", "Duration of write stalls, by reason.", jobBuckets, "reason", stallReasons)
	e.backgroundErrors = counter("background_errors_total", "Background errors that stopped writes.")
	e.slowSyncs = counterVec("slow_syncs_total", "Syncs slower than the DB's DiskSlowThreshold, by operation.", "op", syncOps)
	e.slowSyncDuration = histogram("slow_sync_duration_seconds", "How long slow syncs had taken when they were reported.", syncBuckets)
	e.tablesCreated = counterVec("tables_created_total", "Table files created, by reason.", "reason", tableReasons)
	e.tablesDeleted = counter("tables_deleted_total", "Table files removed.")
	e.walsCreated = counter("wals_created_total", "Write-ahead logs created.")
	e.walsDeleted = counter("wals_deleted_total", "Write-ahead logs removed.")
	return e
}

func newDBDescs(ns string, constLabels prometheus.Labels) dbDescs {
	var d dbDescs
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		m := prometheus.NewDesc(prometheus.BuildFQName(ns, "db", name), help, labels, constLabels)
		d.all = append(d.all, m)
		return m
	}
	d.levelTables = desc("level_tables", "Tables in the level.", "level")
	d.levelSize = desc("level_size_bytes", "Bytes of the level's tables.", "level")
	d.levelScore = desc("level_score", "The level's need of compaction: due at 1 or more.", "level")
	d.levelTarget = desc("level_target_size_bytes", "The level's target size (0 for level 0 and the levels above the base level).", "level")
	d.levelRead = desc("level_read_bytes_total", "Bytes that compactions read from the level since Open.", "level")
	d.levelWritten = desc("level_written_bytes_total", "Bytes that flushes and compactions wrote into the level since Open.", "level")
	d.levelCompactions = desc("level_compactions_total", "Compactions, moves included, that wrote into the level since Open.", "level")
	d.baseLevel = desc("base_level", "The level that level 0 compacts into.")
	d.flushes = desc("flushes_total", "Memtables flushed since Open.")
	d.flushWritten = desc("flush_written_bytes_total", "Bytes of the tables that flushes wrote since Open.")
	d.compactions = desc("compactions_total", "Compactions since Open, by kind.", "reason")
	d.compactionRead = desc("compaction_read_bytes_total", "Bytes that compactions read since Open (moves excluded).")
	d.compactionWritten = desc("compaction_written_bytes_total", "Bytes that compactions wrote since Open (moves excluded).")
	d.compactionsRunning = desc("compactions_running", "Compactions under way.")
	d.walWritten = desc("wal_written_bytes_total", "Bytes written to the write-ahead logs since Open.")
	d.walRecords = desc("wal_records_total", "Records written to the write-ahead logs since Open (one a commit group).")
	d.walSyncs = desc("wal_syncs_total", "Syncs of a write-ahead log that writes asked for since Open.")
	d.writeAmp = desc("write_amplification", "Bytes written to the engine's files per byte written to the write-ahead logs.")
	d.stalls = desc("write_stalls_total", "Writes delayed (slowdown) or stalled (memtable_full, l0_full) since Open.", "reason")
	d.stallDuration = desc("write_stall_duration_seconds_total", "Time writes were delayed or stalled since Open.", "reason")
	d.cacheHits = desc("block_cache_hits_total", "Block cache hits since Open.")
	d.cacheMisses = desc("block_cache_misses_total", "Block cache misses since Open.")
	d.cacheSize = desc("block_cache_size_bytes", "Bytes of data blocks in the block cache.")
	d.cachePinned = desc("block_cache_pinned_bytes", "Bytes of the tables' index and filter blocks in the block cache (and any too large for it, kept by their open tables).")
	d.cacheCapacity = desc("block_cache_capacity_bytes", "The block cache's capacity.")
	d.memtableSize = desc("memtable_size_bytes", "Approximate size of the memtable taking writes.")
	d.immutables = desc("immutable_memtables", "Full memtables waiting to be flushed.")
	d.immutableSize = desc("immutable_memtables_size_bytes", "Approximate size of the full memtables waiting to be flushed.")
	d.walSize = desc("wal_size_bytes", "Size of the write-ahead log taking writes.")
	d.manifestSize = desc("manifest_size_bytes", "Size of the MANIFEST.")
	d.manifestSwitches = desc("manifest_switches_total", "Times the MANIFEST was replaced by a new one since Open.")
	d.marked = desc("range_deletion_marked", "1 while the directory carries the mark that keeps LevelDB from opening it (range deletions), else 0.")
	d.txnOpen = desc("transactions_open", "Transactions open.")
	d.txnConflicts = desc("transaction_conflicts_total", "Transaction commits refused with ErrConflict since Open.")
	d.txnLogKeys = desc("transaction_conflict_log_keys", "Keys the transaction conflict log holds.")
	d.txnLogSize = desc("transaction_conflict_log_size_bytes", "Estimated memory of the keys the transaction conflict log holds.")
	d.txnLogTrimmed = desc("transaction_conflict_log_trimmed_keys_total", "Keys the transaction conflict log forgot to stay within its memory since Open.")
	return d
}

// EventListener returns the callbacks that update the Collector's event
// metrics. Give it to shale.Open in Options.EventListener (through
// shale.TeeEventListener to add callbacks of one's own). Several DBs may
// share one listener; their events then add up.
func (c *Collector) EventListener() shale.EventListener {
	e := &c.ev
	return shale.EventListener{
		BackgroundError: func(error) { e.backgroundErrors.Inc() },
		CompactionEnd: func(info shale.CompactionInfo) {
			e.compactions.WithLabelValues(info.Reason).Inc()
			e.compactionDuration.WithLabelValues(info.Reason).Observe(info.Duration.Seconds())
			switch {
			case info.Err != nil:
				if !errors.Is(info.Err, shale.ErrClosed) {
					e.compactionsFailed.Inc()
				}
			case info.Reason != "move": // a move reads and writes nothing
				e.compactionRead.Add(float64(info.InputBytes))
				e.compactionWritten.Add(float64(info.OutputBytes))
			}
		},
		DiskSlow: func(info shale.DiskSlowInfo) {
			e.slowSyncs.WithLabelValues(info.OpType).Inc()
			e.slowSyncDuration.Observe(info.Duration.Seconds())
		},
		FlushEnd: func(info shale.FlushInfo) {
			e.flushes.WithLabelValues(info.Reason).Inc()
			e.flushDuration.Observe(info.Duration.Seconds())
			if info.Err != nil {
				if !errors.Is(info.Err, shale.ErrClosed) {
					e.flushesFailed.Inc()
				}
				return
			}
			var n int64
			for _, t := range info.Output {
				n += int64(t.Size)
			}
			e.flushWritten.Add(float64(n))
		},
		TableCreated: func(info shale.TableCreateInfo) { e.tablesCreated.WithLabelValues(info.Reason).Inc() },
		TableDeleted: func(info shale.TableDeleteInfo) {
			if info.Err == nil {
				e.tablesDeleted.Inc()
			}
		},
		WALCreated: func(info shale.WALCreateInfo) {
			if info.Err == nil {
				e.walsCreated.Inc()
			}
		},
		WALDeleted: func(info shale.WALDeleteInfo) {
			if info.Err == nil {
				e.walsDeleted.Inc()
			}
		},
		WriteStallEnd: func(info shale.WriteStallEndInfo) {
			e.stalls.WithLabelValues(info.Reason).Inc()
			e.stallDuration.WithLabelValues(info.Reason).Observe(info.Duration.Seconds())
		},
	}
}

// Attach makes later scrapes read db.Metrics, in place of the DB attached
// before, if any. Attach(nil) is Detach.
func (c *Collector) Attach(db *shale.DB) {
	c.mu.Lock()
	c.attached = db
	c.mu.Unlock()
}

// Detach stops the scrapes reading the attached DB: it waits for a scrape
// that is reading it, and later ones collect the event metrics only. Call
// it before closing the DB.
func (c *Collector) Detach() { c.Attach(nil) }

// Describe sends the descriptions of every metric the Collector may
// collect, attached or not. It implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range c.ev.all {
		m.Describe(ch)
	}
	for _, d := range c.db.all {
		ch <- d
	}
}

// Collect sends the event metrics and, while a DB is attached, those of
// its Metrics. It implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	for _, m := range c.ev.all {
		m.Collect(ch)
	}
	if m, ok := c.metrics(); ok {
		c.db.collect(ch, &m)
	}
}

// metrics returns the attached DB's Metrics, or false if none is attached
// or Metrics panicked (it is not documented to work on a closed DB): a
// scrape must not take the program down.
func (c *Collector) metrics() (m shale.Metrics, ok bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.attached == nil {
		return m, false
	}
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	return c.attached.Metrics(), true
}

func (d *dbDescs) collect(ch chan<- prometheus.Metric, m *shale.Metrics) {
	counter := func(desc *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.CounterValue, v, labels...)
	}
	gauge := func(desc *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v, labels...)
	}
	for i, l := range m.Levels {
		level := strconv.Itoa(i)
		gauge(d.levelTables, float64(l.Tables), level)
		gauge(d.levelSize, float64(l.Bytes), level)
		gauge(d.levelScore, l.Score, level)
		gauge(d.levelTarget, float64(l.Target), level)
		counter(d.levelRead, float64(l.BytesIn), level)
		counter(d.levelWritten, float64(l.BytesWritten), level)
		counter(d.levelCompactions, float64(l.Compactions), level)
	}
	gauge(d.baseLevel, float64(m.BaseLevel))

	counter(d.flushes, float64(m.Flushes))
	counter(d.flushWritten, float64(m.FlushBytes))
	counter(d.compactions, float64(m.Compactions.Default), "default")
	counter(d.compactions, float64(m.Compactions.Move), "move")
	counter(d.compactions, float64(m.Compactions.Tombstone), "tombstone")
	counter(d.compactions, float64(m.Compactions.Manual), "manual")
	counter(d.compactionRead, float64(m.CompactionBytesIn))
	counter(d.compactionWritten, float64(m.CompactionBytesOut))
	gauge(d.compactionsRunning, float64(m.CompactionsRunning))

	counter(d.walWritten, float64(m.WALBytes))
	counter(d.walRecords, float64(m.WALRecords))
	counter(d.walSyncs, float64(m.WALSyncs))
	gauge(d.writeAmp, m.WriteAmp)

	for _, s := range []struct {
		reason string
		s      shale.StallMetrics
	}{
		{"slowdown", m.Stalls.Slowdown},
		{"memtable_full", m.Stalls.MemtableFull},
		{"l0_full", m.Stalls.L0Full},
	} {
		counter(d.stalls, float64(s.s.Count), s.reason)
		counter(d.stallDuration, s.s.Duration.Seconds(), s.reason)
	}

	counter(d.cacheHits, float64(m.BlockCache.Hits))
	counter(d.cacheMisses, float64(m.BlockCache.Misses))
	gauge(d.cacheSize, float64(m.BlockCache.Bytes))
	gauge(d.cachePinned, float64(m.BlockCache.Pinned))
	gauge(d.cacheCapacity, float64(m.BlockCache.Capacity))

	gauge(d.memtableSize, float64(m.MemtableBytes))
	gauge(d.immutables, float64(m.ImmutableMemtables))
	gauge(d.immutableSize, float64(m.ImmutableBytes))
	gauge(d.walSize, float64(m.WALSize))
	gauge(d.manifestSize, float64(m.ManifestSize))
	counter(d.manifestSwitches, float64(m.ManifestSwitches))
	marked := 0.0
	if m.Marked {
		marked = 1
	}
	gauge(d.marked, marked)

	gauge(d.txnOpen, float64(m.Transactions.Open))
	counter(d.txnConflicts, float64(m.Transactions.Conflicts))
	gauge(d.txnLogKeys, float64(m.Transactions.TrackedKeys))
	gauge(d.txnLogSize, float64(m.Transactions.TrackedBytes))
	counter(d.txnLogTrimmed, float64(m.Transactions.Trimmed))
}
