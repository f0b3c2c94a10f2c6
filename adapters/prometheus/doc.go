// Package shaleprom exports the metrics of a shale DB to Prometheus.
//
// A Collector gathers two kinds of metrics. Event metrics come from the
// shale.EventListener that EventListener returns, which the DB calls as
// its flushes, compactions, write stalls, slow syncs and file creations
// and deletions happen; they live as long as the Collector, across any
// number of DBs opened with its listener, and are always collected. DB
// metrics are read from DB.Metrics at each scrape, once Attach has been
// given the DB: the shape of the tree, the block cache, the memtables and
// logs, and the DB's own counters, which start again at zero at each Open
// (Prometheus sees a counter reset). Their names carry "db" after the
// namespace, so that, say, shale_flushes_total (flushes the listener
// heard of) and shale_db_flushes_total (DB.Metrics' Flushes) are told
// apart.
//
// The listener must be in the Options given to Open, so that the flushes
// Open makes are counted too; Attach comes after Open:
//
//	c := shaleprom.New(shaleprom.Opts{})
//	l := c.EventListener()
//	db, err := shale.Open(dir, &shale.Options{EventListener: &l})
//	// handle err
//	c.Attach(db)
//	prometheus.MustRegister(c)
//
// To have callbacks of one's own as well, combine them with
// shale.TeeEventListener(c.EventListener(), mine).
//
// Before Attach, and after Detach, Collect emits the event metrics only.
// Call Detach before closing the DB: it waits for a scrape that is reading
// the DB to finish, and later scrapes leave the DB alone. A scrape of a
// DB closed without Detach does not panic; it reports what DB.Metrics
// returns for the closed DB.
//
// # Event metrics
//
// With the default namespace "shale" (Opts.Namespace changes the prefix;
// Opts.ConstLabels are added to every metric):
//
//	shale_flushes_total{reason}                  counter    flushes ended ("memtable full", "forced", "open")
//	shale_flushes_failed_total                   counter    flushes that ended with an error
//	shale_flush_duration_seconds                 histogram  duration of every flush
//	shale_flush_written_bytes_total              counter    bytes of the tables flushes wrote
//	shale_compactions_total{reason}              counter    compactions ended ("default", "move", "tombstone", "manual")
//	shale_compactions_failed_total               counter    compactions that ended with an error
//	shale_compaction_duration_seconds{reason}    histogram  duration of every compaction
//	shale_compaction_read_bytes_total            counter    bytes compactions read (moves excluded)
//	shale_compaction_written_bytes_total         counter    bytes compactions wrote (moves excluded)
//	shale_write_stalls_total{reason}             counter    write stalls ended ("memtable count limit reached", "L0 file count limit exceeded")
//	shale_write_stall_duration_seconds{reason}   histogram  duration of every write stall
//	shale_background_errors_total                counter    errors that stopped writes
//	shale_slow_syncs_total{op}                   counter    syncs slower than Options.DiskSlowThreshold ("sync", "sync dir")
//	shale_slow_sync_duration_seconds             histogram  how long each slow sync had taken when reported
//	shale_tables_created_total{reason}           counter    table files created ("flushing", "compacting")
//	shale_tables_deleted_total                   counter    table files removed
//	shale_wals_created_total                     counter    write-ahead logs created
//	shale_wals_deleted_total                     counter    write-ahead logs removed
//
// Flushes and compactions are counted when they end, failed or not, so
// that a total and its histogram's count agree. A compaction or flush
// that Close interrupted (its error matches shale.ErrClosed) is counted in
// the total but not as failed. Bytes are counted for the jobs that
// succeeded; a move (a table passed down a level unread) reads and writes
// nothing, as DB.Metrics counts it. A creation or deletion that failed is
// not counted (shale tries a failed deletion again later). The listener
// sets the DiskSlow callback, which makes the DB time its syncs.
//
// # DB metrics
//
// Read from DB.Metrics at each scrape while a DB is attached; the counters
// restart at zero with each Open:
//
//	shale_db_level_tables{level}                          gauge    tables in the level
//	shale_db_level_size_bytes{level}                      gauge    bytes of the level's tables
//	shale_db_level_score{level}                           gauge    compaction score (due at 1 or more)
//	shale_db_level_target_size_bytes{level}               gauge    the level's target size
//	shale_db_level_read_bytes_total{level}                counter  bytes compactions read from the level
//	shale_db_level_written_bytes_total{level}             counter  bytes flushes and compactions wrote into the level
//	shale_db_level_compactions_total{level}               counter  compactions into the level
//	shale_db_base_level                                   gauge    the level that level 0 compacts into
//	shale_db_flushes_total                                counter  memtables flushed
//	shale_db_flush_written_bytes_total                    counter  bytes of the tables flushes wrote
//	shale_db_compactions_total{reason}                    counter  compactions by kind
//	shale_db_compaction_read_bytes_total                  counter  bytes compactions read
//	shale_db_compaction_written_bytes_total               counter  bytes compactions wrote
//	shale_db_compactions_running                          gauge    compactions under way
//	shale_db_wal_written_bytes_total                      counter  bytes written to the write-ahead logs
//	shale_db_wal_records_total                            counter  records written to the logs (one a commit group)
//	shale_db_wal_syncs_total                              counter  syncs of a log that writes asked for
//	shale_db_write_amplification                          gauge    bytes written to disk per byte written by the user
//	shale_db_write_stalls_total{reason}                   counter  writes delayed or stalled ("slowdown", "memtable_full", "l0_full")
//	shale_db_write_stall_duration_seconds_total{reason}   counter  time they waited
//	shale_db_block_cache_hits_total                       counter  block cache hits
//	shale_db_block_cache_misses_total                     counter  block cache misses
//	shale_db_block_cache_size_bytes                       gauge    data blocks held in the cache
//	shale_db_block_cache_pinned_bytes                     gauge    index and filter blocks, in the cache or kept by open tables
//	shale_db_block_cache_capacity_bytes                   gauge    the cache's capacity
//	shale_db_memtable_size_bytes                          gauge    the memtable taking writes
//	shale_db_immutable_memtables                          gauge    full memtables waiting to be flushed
//	shale_db_immutable_memtables_size_bytes               gauge    their size
//	shale_db_wal_size_bytes                               gauge    the write-ahead log taking writes
//	shale_db_manifest_size_bytes                          gauge    the MANIFEST
//	shale_db_manifest_switches_total                      counter  times the MANIFEST was replaced
//	shale_db_range_deletion_marked                        gauge    1 while the directory carries the range-deletion mark
//	shale_db_transactions_open                            gauge    transactions open
//	shale_db_transaction_conflicts_total                  counter  commits refused with ErrConflict
//	shale_db_transaction_conflict_log_keys                gauge    keys the conflict log holds
//	shale_db_transaction_conflict_log_size_bytes          gauge    their estimated memory
//	shale_db_transaction_conflict_log_trimmed_keys_total  counter  keys the log forgot to stay within its memory
package shaleprom
