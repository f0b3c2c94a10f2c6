package shaleprom_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/shale-db/shale"
	shaleprom "github.com/shale-db/shale/adapters/prometheus"
	"github.com/shale-db/shale/vfs"
)

// open opens a DB in dir on fs with c's listener (and opts), and
// attaches it.
func open(t *testing.T, c *shaleprom.Collector, fs vfs.FS, opts shale.Options) *shale.DB {
	t.Helper()
	l := c.EventListener()
	opts.FS, opts.EventListener = fs, &l
	db, err := shale.Open("/db", &opts)
	if err != nil {
		t.Fatal(err)
	}
	c.Attach(db)
	return db
}

// write puts n keys, overwriting earlier ones in a scattered order, with
// values that do not compress.
func write(t *testing.T, db *shale.DB, n int) {
	t.Helper()
	r := rand.New(rand.NewPCG(1, 2))
	value := make([]byte, 200)
	for i := range n {
		for j := range value {
			value[j] = byte(r.Uint32())
		}
		key := fmt.Appendf(nil, "key%06d", (i*7919)%(n/2))
		if err := db.Put(key, value, shale.NoSync); err != nil {
			t.Fatal(err)
		}
	}
}

// gathered indexes the series of one Gather by metric name.
type gathered map[string]*dto.MetricFamily

func gather(t *testing.T, g prometheus.Gatherer) gathered {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := make(gathered, len(mfs))
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

// series returns the series of name whose labels include the given
// name/value pairs.
func (g gathered) series(name string, labels ...string) []*dto.Metric {
	var out []*dto.Metric
	for _, m := range g[name].GetMetric() {
		has := map[string]string{}
		for _, lp := range m.GetLabel() {
			has[lp.GetName()] = lp.GetValue()
		}
		ok := true
		for i := 0; i < len(labels); i += 2 {
			if v, found := has[labels[i]]; !found || v != labels[i+1] {
				ok = false
			}
		}
		if ok {
			out = append(out, m)
		}
	}
	return out
}

// value is the value of the one series of name with labels: a counter's
// or a gauge's value, a histogram's sample count.
func (g gathered) value(t *testing.T, name string, labels ...string) float64 {
	t.Helper()
	s := g.series(name, labels...)
	if len(s) != 1 {
		t.Fatalf("%d series of %s%q, want 1", len(s), name, labels)
	}
	return metricValue(s[0])
}

// sum adds up the values (sample counts) of every series of name.
func (g gathered) sum(name string) float64 {
	var n float64
	for _, m := range g.series(name) {
		n += metricValue(m)
	}
	return n
}

func metricValue(m *dto.Metric) float64 {
	switch {
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue()
	case m.GetHistogram() != nil:
		return float64(m.GetHistogram().GetSampleCount())
	}
	panic("unexpected metric type")
}

// stableGather gathers while db's Metrics stay the same, and returns them
// with what was gathered.
func stableGather(t *testing.T, db *shale.DB, g prometheus.Gatherer) (shale.Metrics, gathered) {
	t.Helper()
	for range 500 {
		before := db.Metrics()
		got := gather(t, g)
		if after := db.Metrics(); reflect.DeepEqual(before, after) {
			return before, got
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the DB's metrics keep changing")
	return shale.Metrics{}, nil
}

type want struct {
	name   string
	labels []string
	value  float64
}

// dbWants is what the DB metrics should be given m.
func dbWants(m shale.Metrics) []want {
	var w []want
	add := func(name string, v float64, labels ...string) {
		w = append(w, want{"shale_db_" + name, labels, v})
	}
	for i, l := range m.Levels {
		level := strconv.Itoa(i)
		add("level_tables", float64(l.Tables), "level", level)
		add("level_size_bytes", float64(l.Bytes), "level", level)
		add("level_score", l.Score, "level", level)
		add("level_target_size_bytes", float64(l.Target), "level", level)
		add("level_read_bytes_total", float64(l.BytesIn), "level", level)
		add("level_written_bytes_total", float64(l.BytesWritten), "level", level)
		add("level_compactions_total", float64(l.Compactions), "level", level)
	}
	add("base_level", float64(m.BaseLevel))
	add("flushes_total", float64(m.Flushes))
	add("flush_written_bytes_total", float64(m.FlushBytes))
	add("compactions_total", float64(m.Compactions.Default), "reason", "default")
	add("compactions_total", float64(m.Compactions.Move), "reason", "move")
	add("compactions_total", float64(m.Compactions.Tombstone), "reason", "tombstone")
	add("compactions_total", float64(m.Compactions.Manual), "reason", "manual")
	add("compaction_read_bytes_total", float64(m.CompactionBytesIn))
	add("compaction_written_bytes_total", float64(m.CompactionBytesOut))
	add("compactions_running", float64(m.CompactionsRunning))
	add("wal_written_bytes_total", float64(m.WALBytes))
	add("wal_records_total", float64(m.WALRecords))
	add("wal_syncs_total", float64(m.WALSyncs))
	add("write_amplification", m.WriteAmp)
	add("write_stalls_total", float64(m.Stalls.Slowdown.Count), "reason", "slowdown")
	add("write_stalls_total", float64(m.Stalls.MemtableFull.Count), "reason", "memtable_full")
	add("write_stalls_total", float64(m.Stalls.L0Full.Count), "reason", "l0_full")
	add("write_stall_duration_seconds_total", m.Stalls.Slowdown.Duration.Seconds(), "reason", "slowdown")
	add("write_stall_duration_seconds_total", m.Stalls.MemtableFull.Duration.Seconds(), "reason", "memtable_full")
	add("write_stall_duration_seconds_total", m.Stalls.L0Full.Duration.Seconds(), "reason", "l0_full")
	add("block_cache_hits_total", float64(m.BlockCache.Hits))
	add("block_cache_misses_total", float64(m.BlockCache.Misses))
	add("block_cache_size_bytes", float64(m.BlockCache.Bytes))
	add("block_cache_pinned_bytes", float64(m.BlockCache.Pinned))
	add("block_cache_capacity_bytes", float64(m.BlockCache.Capacity))
	add("memtable_size_bytes", float64(m.MemtableBytes))
	add("immutable_memtables", float64(m.ImmutableMemtables))
	add("immutable_memtables_size_bytes", float64(m.ImmutableBytes))
	add("wal_size_bytes", float64(m.WALSize))
	add("manifest_size_bytes", float64(m.ManifestSize))
	add("manifest_switches_total", float64(m.ManifestSwitches))
	marked := 0.0
	if m.Marked {
		marked = 1
	}
	add("range_deletion_marked", marked)
	add("transactions_open", float64(m.Transactions.Open))
	add("transaction_conflicts_total", float64(m.Transactions.Conflicts))
	add("transaction_conflict_log_keys", float64(m.Transactions.TrackedKeys))
	add("transaction_conflict_log_size_bytes", float64(m.Transactions.TrackedBytes))
	add("transaction_conflict_log_trimmed_keys_total", float64(m.Transactions.Trimmed))
	return w
}

// checkDBMetrics checks that g holds exactly the DB metrics of m.
func checkDBMetrics(t *testing.T, g gathered, m shale.Metrics) {
	t.Helper()
	names := map[string]int{}
	for _, w := range dbWants(m) {
		names[w.name]++
		if got := g.value(t, w.name, w.labels...); got != w.value {
			t.Errorf("%s%q = %v, want %v", w.name, w.labels, got, w.value)
		}
	}
	for name, mf := range g {
		if strings.HasPrefix(name, "shale_db_") && len(mf.GetMetric()) != names[name] {
			t.Errorf("%s has %d series, the test expects %d", name, len(mf.GetMetric()), names[name])
		}
	}
}

// liveFiles counts the tables and logs in the directory.
func liveFiles(t *testing.T, fs vfs.FS) (tables, logs int) {
	t.Helper()
	names, err := fs.List("/db")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		switch {
		case strings.HasSuffix(n, ".ldb"):
			tables++
		case strings.HasSuffix(n, ".log"):
			logs++
		}
	}
	return tables, logs
}

// A DB that flushes and compacts: the DB metrics equal its Metrics, and
// the event metrics count every flush and compaction it made.
func TestFlushesAndCompactions(t *testing.T) {
	fs := vfs.NewMem()
	c := shaleprom.New(shaleprom.Opts{})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	db := open(t, c, fs, shale.Options{WriteBufferSize: 64 << 10})

	write(t, db, 20000)
	for i := range 500 {
		if _, err := db.Get(fmt.Appendf(nil, "key%06d", i*3)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	tx := db.NewTransaction()
	if err := tx.Put([]byte("txn"), []byte("1")); err != nil {
		t.Fatal(err)
	}

	m, g := stableGather(t, db, reg)
	checkDBMetrics(t, g, m)
	if m.Flushes < 5 || m.Compactions.Manual < 1 || m.Compactions.Default < 1 || m.BlockCache.Hits+m.BlockCache.Misses == 0 {
		t.Fatalf("the workload did not do what the test needs:\n%s", m)
	}
	if err := tx.Commit(shale.NoSync); err != nil {
		t.Fatal(err)
	}

	final := db.Metrics()
	c.Detach()
	if err := db.Close(); err != nil { // every event delivered
		t.Fatal(err)
	}
	g = gather(t, reg)
	for name := range g {
		if strings.HasPrefix(name, "shale_db_") {
			t.Errorf("%s collected after Detach", name)
		}
	}

	flushes := g.sum("shale_flushes_total")
	if flushes < float64(final.Flushes) {
		t.Errorf("shale_flushes_total = %v, Metrics().Flushes = %d", flushes, final.Flushes)
	}
	if n := g.value(t, "shale_flush_duration_seconds"); n != flushes {
		t.Errorf("shale_flush_duration_seconds has %v samples, want %v (the flushes)", n, flushes)
	}
	if n := g.value(t, "shale_flush_written_bytes_total"); n < float64(final.FlushBytes) || n == 0 {
		t.Errorf("shale_flush_written_bytes_total = %v, Metrics().FlushBytes = %d", n, final.FlushBytes)
	}
	if n := g.value(t, "shale_flushes_total", "reason", "memtable full"); n < 5 {
		t.Errorf(`shale_flushes_total{reason="memtable full"} = %v, want at least 5`, n)
	}

	for reason, inMetrics := range map[string]int64{
		"default": final.Compactions.Default, "move": final.Compactions.Move,
		"tombstone": final.Compactions.Tombstone, "manual": final.Compactions.Manual,
	} {
		n := g.value(t, "shale_compactions_total", "reason", reason)
		if n < float64(inMetrics) {
			t.Errorf("shale_compactions_total{reason=%q} = %v, Metrics says %d", reason, n, inMetrics)
		}
		if h := g.value(t, "shale_compaction_duration_seconds", "reason", reason); h != n {
			t.Errorf("shale_compaction_duration_seconds{reason=%q} has %v samples, want %v", reason, h, n)
		}
	}
	if n := g.value(t, "shale_compaction_read_bytes_total"); n < float64(final.CompactionBytesIn) || n == 0 {
		t.Errorf("shale_compaction_read_bytes_total = %v, Metrics().CompactionBytesIn = %d", n, final.CompactionBytesIn)
	}
	if n := g.value(t, "shale_compaction_written_bytes_total"); n < float64(final.CompactionBytesOut) || n == 0 {
		t.Errorf("shale_compaction_written_bytes_total = %v, Metrics().CompactionBytesOut = %d", n, final.CompactionBytesOut)
	}
	for _, name := range []string{"shale_flushes_failed_total", "shale_compactions_failed_total", "shale_background_errors_total"} {
		if n := g.value(t, name); n != 0 {
			t.Errorf("%s = %v, want 0", name, n)
		}
	}
	for _, reason := range []string{"memtable count limit reached", "L0 file count limit exceeded"} {
		n := g.value(t, "shale_write_stalls_total", "reason", reason)
		if h := g.value(t, "shale_write_stall_duration_seconds", "reason", reason); h != n {
			t.Errorf("shale_write_stall_duration_seconds{reason=%q} has %v samples, want %v", reason, h, n)
		}
	}

	// Every file created and not deleted is still there.
	byFlush := g.value(t, "shale_tables_created_total", "reason", "flushing")
	if byFlush == 0 || byFlush > flushes {
		t.Errorf(`shale_tables_created_total{reason="flushing"} = %v with %v flushes`, byFlush, flushes)
	}
	if g.value(t, "shale_tables_created_total", "reason", "compacting") == 0 {
		t.Error(`shale_tables_created_total{reason="compacting"} = 0`)
	}
	tables, logs := liveFiles(t, fs)
	if created, deleted := g.sum("shale_tables_created_total"), g.value(t, "shale_tables_deleted_total"); created-deleted != float64(tables) {
		t.Errorf("%v tables created, %v deleted, %d in the directory", created, deleted, tables)
	}
	if created, deleted := g.value(t, "shale_wals_created_total"), g.value(t, "shale_wals_deleted_total"); created-deleted != float64(logs) || deleted == 0 {
		t.Errorf("%v logs created, %v deleted, %d in the directory", created, deleted, logs)
	}
}

// slowFS makes every sync take d.
type slowFS struct {
	vfs.FS
	d time.Duration
}

func (fs slowFS) Create(name string) (vfs.File, error) {
	f, err := fs.FS.Create(name)
	if err != nil {
		return nil, err
	}
	return slowFile{f, fs.d}, nil
}

func (fs slowFS) OpenDir(name string) (vfs.File, error) {
	f, err := fs.FS.OpenDir(name)
	if err != nil {
		return nil, err
	}
	return slowFile{f, fs.d}, nil
}

type slowFile struct {
	vfs.File
	d time.Duration
}

func (f slowFile) Sync() error {
	time.Sleep(f.d)
	return f.File.Sync()
}

// Slow syncs are counted, with their durations, and so are the write
// stalls that slow flushes cause.
func TestSlowSyncsAndStalls(t *testing.T) {
	c := shaleprom.New(shaleprom.Opts{})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	const threshold = 2 * time.Millisecond
	db := open(t, c, slowFS{vfs.NewMem(), 5 * time.Millisecond}, shale.Options{
		WriteBufferSize: 64 << 10, DiskSlowThreshold: threshold,
	})
	write(t, db, 5000)
	final := db.Metrics()
	c.Detach()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	g := gather(t, reg)

	slow := g.sum("shale_slow_syncs_total")
	if slow == 0 || g.value(t, "shale_slow_syncs_total", "op", "sync") == 0 {
		t.Fatalf("%v slow syncs", slow)
	}
	h := g.series("shale_slow_sync_duration_seconds")[0].GetHistogram()
	if float64(h.GetSampleCount()) != slow {
		t.Errorf("shale_slow_sync_duration_seconds has %d samples, want %v", h.GetSampleCount(), slow)
	}
	if h.GetSampleSum() < slow*threshold.Seconds() {
		t.Errorf("%v slow syncs took %v s in all, each at least %v", slow, h.GetSampleSum(), threshold)
	}

	stalls := g.sum("shale_write_stalls_total")
	if stalls == 0 || stalls > float64(final.Stalls.MemtableFull.Count+final.Stalls.L0Full.Count) {
		t.Errorf("%v write stalls; Metrics counts %d memtable full, %d level 0 full",
			stalls, final.Stalls.MemtableFull.Count, final.Stalls.L0Full.Count)
	}
	if n := g.sum("shale_write_stall_duration_seconds"); n != stalls {
		t.Errorf("shale_write_stall_duration_seconds has %v samples, want %v", n, stalls)
	}
}

// Before Attach the collector has the event metrics only; it passes
// promlint attached or not, and survives its DB's Close.
func TestCollectBeforeAttachAndLint(t *testing.T) {
	c := shaleprom.New(shaleprom.Opts{})
	lint := func() {
		t.Helper()
		problems, err := testutil.CollectAndLint(c)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range problems {
			t.Errorf("promlint: %s: %s", p.Metric, p.Text)
		}
	}
	dbSeries := func() int {
		t.Helper()
		n := 0
		for name := range gather(t, registry(t, c)) {
			if strings.HasPrefix(name, "shale_db_") {
				n += testutil.CollectAndCount(c, name)
			}
		}
		return n
	}

	events := testutil.CollectAndCount(c)
	if events == 0 || dbSeries() != 0 {
		t.Fatalf("before Attach: %d metrics, %d of the DB", events, dbSeries())
	}
	if n := testutil.CollectAndCount(c, "shale_flushes_total"); n != 3 {
		t.Errorf("%d series of shale_flushes_total before any flush, want 3 (a reason each)", n)
	}
	lint()

	db := open(t, c, vfs.NewMem(), shale.Options{})
	if n := testutil.CollectAndCount(c, "shale_db_level_tables"); n != shale.NumLevels {
		t.Errorf("%d series of shale_db_level_tables, want %d", n, shale.NumLevels)
	}
	if n := dbSeries(); n != len(dbWants(shale.Metrics{})) {
		t.Errorf("%d DB series, want %d", n, len(dbWants(shale.Metrics{})))
	}
	lint()

	c.Detach()
	if n := dbSeries(); n != 0 {
		t.Errorf("%d DB series after Detach", n)
	}
	if n := testutil.CollectAndCount(c); n != events {
		t.Errorf("%d metrics after Detach, %d before Attach", n, events)
	}

	c.Attach(db)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	testutil.CollectAndCount(c) // a closed DB, still attached
	lint()
}

// registry returns a pedantic registry with c alone.
func registry(t *testing.T, c prometheus.Collector) *prometheus.Registry {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	return reg
}

// Two collectors with their own labels register together; Namespace
// renames every metric.
func TestNamespaceAndConstLabels(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	for _, name := range []string{"a", "b"} {
		c := shaleprom.New(shaleprom.Opts{Namespace: "kv", ConstLabels: prometheus.Labels{"db": name}})
		if err := reg.Register(c); err != nil {
			t.Fatal(err)
		}
		db := open(t, c, vfs.NewMem(), shale.Options{})
		t.Cleanup(func() {
			c.Detach()
			db.Close()
		})
	}
	g := gather(t, reg)
	if len(g) == 0 {
		t.Fatal("nothing gathered")
	}
	var names []string
	for name, mf := range g {
		names = append(names, name)
		if !strings.HasPrefix(name, "kv_") {
			t.Errorf("%s lacks the namespace", name)
		}
		dbs := map[string]int{}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "db" {
					dbs[lp.GetValue()]++
				}
			}
		}
		if dbs["a"] == 0 || dbs["a"] != dbs["b"] || dbs["a"]+dbs["b"] != len(mf.GetMetric()) {
			t.Errorf("%s: series by db label: %v of %d", name, dbs, len(mf.GetMetric()))
		}
	}
	sort.Strings(names)
	if i := sort.SearchStrings(names, "kv_db_level_tables"); i == len(names) || names[i] != "kv_db_level_tables" {
		t.Errorf("no kv_db_level_tables in %q", names)
	}
}

// Scrapes while the DB writes, flushes, compacts and closes (without
// Detach): under -race, they must not race with the DB; none panics. The
// listener combines with another through TeeEventListener.
func TestScrapesDuringWritesAndClose(t *testing.T) {
	c := shaleprom.New(shaleprom.Opts{})
	reg := registry(t, c)
	var mine atomic.Int64
	l := shale.TeeEventListener(c.EventListener(), shale.EventListener{
		FlushEnd: func(shale.FlushInfo) { mine.Add(1) },
	})
	db, err := shale.Open("/db", &shale.Options{FS: vfs.NewMem(), EventListener: &l, WriteBufferSize: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	c.Attach(db)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				if _, err := reg.Gather(); err != nil {
					t.Error(err)
					return
				}
				select {
				case <-stop:
					return
				default:
				}
			}
		}()
	}
	write(t, db, 5000)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond) // scrapes of the closed DB
	close(stop)
	wg.Wait()

	g := gather(t, reg)
	if n := g.sum("shale_flushes_total"); n == 0 || n != float64(mine.Load()) {
		t.Errorf("shale_flushes_total = %v, the other listener heard of %d flushes", n, mine.Load())
	}
}
