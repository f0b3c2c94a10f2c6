package worker

import (
	"bytes"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shale-db/shale/bench/internal/gen"
	"github.com/shale-db/shale/bench/internal/hist"
	"github.com/shale-db/shale/bench/internal/kv"
)

// Prepare says what runs, untimed, in a process of its own before the
// timed one.
type Prepare int

const (
	// NoPrepare: the timed process starts from an empty directory.
	NoPrepare Prepare = iota
	// FillRandom: n random puts, then Close.
	FillRandom
	// Crash: n/2 random puts, then the process is killed with SIGKILL.
	Crash
	// FillLog: n + n/10 puts in key order (a log), then Close.
	FillLog
)

// Workload is one of the benchmark's workloads.
type Workload struct {
	// Name is what -workloads and the report call it.
	Name string
	// Doc says what the timed process does.
	Doc string
	// Prepare is the untimed phase before the timed one.
	Prepare Prepare
	// Unit names what the throughput counts.
	Unit string
	// Latency: every operation of the (single) writer is timed.
	Latency bool
	// Writes: the timed phase writes, so write amplification applies.
	Writes bool
	// Reads: the timed phase looks keys up, so the share found applies.
	Reads bool
	// Sync: the store is opened for synced writes (Badger's SyncWrites).
	Sync bool
	// CacheQuarter: every block cache is set to a quarter of the user
	// bytes of the fill.
	CacheQuarter bool
	// TimesOpen: the timed span includes Open (and run opens the store).
	TimesOpen bool
	// Stores, if set, are the only stores that run the workload (the
	// transaction workloads: the stores with transactions).
	Stores []string
	run    func(e *env) error
}

// Seed streams, so that each phase draws its own keys.
const (
	streamFill = iota + 1
	streamRead
	streamOverwrite
	streamWriter
	streamSync // + writer index
)

// BatchSize is fillbatch's batch; SyncWriters and SeekNexts shape fillsync8
// and seekrandom.
const (
	BatchSize   = 1000
	SyncWriters = 8
	SeekNexts   = 10
	TxnWriters  = 8
)

// Workloads lists every workload in the order they run and print.
var Workloads = []Workload{
	{Name: "fillseq", Doc: "n puts in key order", Unit: "puts/s", Latency: true, Writes: true,
		run: func(e *env) error { return e.fill(e.n, func(i int) uint64 { return uint64(i) }, false, true) }},
	{Name: "fillrandom", Doc: "n puts of uniform random keys", Unit: "puts/s", Latency: true, Writes: true,
		run: func(e *env) error { return e.fill(e.n, e.keys(streamFill), false, true) }},
	{Name: "overwrite", Doc: "n random puts over a database filled by fillrandom", Prepare: FillRandom,
		Unit: "puts/s", Latency: true, Writes: true,
		run: func(e *env) error { return e.fill(e.n, e.keys(streamOverwrite), false, true) }},
	{Name: "fillbatch", Doc: "n puts in key order, in batches of 1,000 (latency per batch)", Unit: "puts/s",
		Latency: true, Writes: true, run: func(e *env) error { return e.fillBatches(false) }},
	{Name: "fillbatch-new", Doc: "fillbatch with a new batch for each 1,000 puts, as a program that makes one per write (shale: new(shale.Batch); Pebble: NewBatch, from its pool)",
		Unit: "puts/s", Latency: true, Writes: true, run: func(e *env) error { return e.fillBatches(true) }},
	{Name: "fillsync", Doc: "n/100 Sync puts of random keys, one writer", Unit: "puts/s", Latency: true,
		Writes: true, Sync: true,
		run: func(e *env) error { return e.fill(max(e.n/100, 1), e.keys(streamSync), true, true) }},
	{Name: "fillsync8", Doc: "8 writers, n/500 Sync puts each, random keys", Unit: "puts/s", Writes: true,
		Sync: true, run: (*env).fillSync8},
	{Name: "readrandom", Doc: "n random Gets after fillrandom", Prepare: FillRandom, Unit: "gets/s",
		Reads: true, run: (*env).readRandom},
	{Name: "readrandom-reopen", Doc: "fillrandom, Close and Open again in the same process (untimed), then readrandom",
		Unit: "gets/s", Reads: true, run: (*env).readRandomReopened},
	{Name: "readseq", Doc: "one full scan after fillrandom", Prepare: FillRandom, Unit: "entries/s",
		run: (*env).readSeq},
	{Name: "seekrandom", Doc: "n random SeekGE, each followed by 10 Next, after fillrandom",
		Prepare: FillRandom, Unit: "seeks/s", Reads: true, run: (*env).seekRandom},
	{Name: "readwhilewriting", Doc: "n random Gets while one writer puts random keys, after fillrandom",
		Prepare: FillRandom, Unit: "gets/s", Reads: true, Writes: true, run: (*env).readWhileWriting},
	{Name: "readrandom4x", Doc: "readrandom with every block cache a quarter of the data's user bytes",
		Prepare: FillRandom, Unit: "gets/s", Reads: true, CacheQuarter: true, run: (*env).readRandom},
	{Name: "txn-rmw", Doc: "n/5 transactions, one goroutine: Get two random keys, Put both, commit unsynced; after fillrandom",
		Prepare: FillRandom, Unit: "txns/s", Writes: true, Stores: []string{"shale", "badger"},
		run: func(e *env) error { return e.txnRMW(1, max(e.n/5, 1), false) }},
	{Name: "txn-rmw8", Doc: "txn-rmw from 8 goroutines, n/40 transactions each", Prepare: FillRandom,
		Unit: "txns/s", Writes: true, Stores: []string{"shale", "badger"},
		run: func(e *env) error { return e.txnRMW(TxnWriters, max(e.n/5/TxnWriters, 1), false) }},
	{Name: "txn-rmw-sync", Doc: "txn-rmw from 8 goroutines, n/500 transactions each, committed synced",
		Prepare: FillRandom, Unit: "txns/s", Writes: true, Sync: true, Stores: []string{"shale", "badger", "bbolt"},
		run: func(e *env) error { return e.txnRMW(TxnWriters, max(e.n/500, 1), true) }},
	{Name: "txn-view", Doc: "n/2 read-only transactions of two random Gets, one goroutine; after fillrandom",
		Prepare: FillRandom, Unit: "txns/s", Reads: true, Stores: []string{"shale", "badger", "bbolt"},
		run: (*env).txnView},
	{Name: "delrange-first", Doc: "after a log of n + n/10 keys whose first n are deleted by one DeleteRange in this process: n/10 new iterators' First",
		Prepare: FillLog, Unit: "firsts/s", Stores: []string{"shale", "pebble"},
		run: func(e *env) error { return e.afterRangeDeletion(delFirst) }},
	{Name: "delrange-seek", Doc: "the same deleted log: n/10 SeekGE to random deleted keys, each with a new iterator",
		Prepare: FillLog, Unit: "seeks/s", Stores: []string{"shale", "pebble"},
		run: func(e *env) error { return e.afterRangeDeletion(delSeek) }},
	{Name: "delrange-get", Doc: "the same deleted log: n/10 Gets of random deleted keys",
		Prepare: FillLog, Unit: "gets/s", Stores: []string{"shale", "pebble"},
		run: func(e *env) error { return e.afterRangeDeletion(delGet) }},
	{Name: "recovery", Doc: "Open and one Get after n/2 random puts ended by SIGKILL", Prepare: Crash,
		Unit: "opens/s", Reads: true, TimesOpen: true, run: (*env).recovery},
}

// Runs reports whether store runs workload w.
func (w Workload) Runs(store string) bool {
	return len(w.Stores) == 0 || slices.Contains(w.Stores, store)
}

// Lookup returns the named workload.
func Lookup(name string) (Workload, bool) {
	for _, w := range Workloads {
		if w.Name == name {
			return w, true
		}
	}
	return Workload{}, false
}

// env is what a workload's run works with; it fills res.
type env struct {
	dir   string
	store string
	cfg   kv.Config
	n     int
	reads int // lookups of readrandom and seekrandom; 0: n
	seed  uint64
	db    kv.Store // open unless the workload TimesOpen
	res   Result
	lat   hist.Histogram
}

// keys returns the key numbers of one seeded stream.
func (e *env) keys(stream uint64) func(int) uint64 {
	k := gen.NewKeys(e.n, e.seed, stream)
	return func(int) uint64 { return k.Next() }
}

// fill puts count keys, timing each Put if latency is set.
func (e *env) fill(count int, key func(int) uint64, sync, latency bool) error {
	vals, kb := gen.NewValues(), make([]byte, gen.KeySize)
	start := time.Now()
	for i := range count {
		k, v := gen.FormatKey(kb, key(i)), vals.Next()
		t0 := time.Now()
		if err := e.db.Put(k, v, sync); err != nil {
			return err
		}
		if latency {
			e.lat.Record(time.Since(t0))
		}
	}
	e.res.Seconds = time.Since(start).Seconds()
	e.res.Ops, e.res.Writes = int64(count), int64(count)
	return nil
}

// fillBatches is fillbatch; fresh makes a new batch for each one, where
// fillbatch reuses one.
func (e *env) fillBatches(fresh bool) error {
	vals, kb := gen.NewValues(), make([]byte, gen.KeySize)
	b := e.db.NewBatch()
	start := time.Now()
	for i := 0; i < e.n; i += BatchSize {
		if fresh && i > 0 {
			b = e.db.NewBatch()
		}
		for j := i; j < min(i+BatchSize, e.n); j++ {
			b.Put(gen.FormatKey(kb, uint64(j)), vals.Next())
		}
		t0 := time.Now()
		if err := b.Commit(); err != nil {
			return err
		}
		e.lat.Record(time.Since(t0))
	}
	e.res.Seconds = time.Since(start).Seconds()
	e.res.Ops, e.res.Writes = int64(e.n), int64(e.n)
	return nil
}

func (e *env) fillSync8() error {
	per := max(e.n/500, 1)
	errs := make([]error, SyncWriters)
	// Each writer's generators are made before the timed span, as fill's
	// are: a Values costs about 2.5 ms of CPU (1 MiB of Park-Miller output).
	vals := make([]*gen.Values, SyncWriters)
	for w := range vals {
		vals[w] = gen.NewValues()
	}
	var wg sync.WaitGroup
	start := time.Now()
	for w := range SyncWriters {
		wg.Go(func() {
			keys := gen.NewKeys(e.n, e.seed, streamSync+uint64(w))
			vals, kb := vals[w], make([]byte, gen.KeySize)
			for range per {
				if errs[w] = e.db.Put(gen.FormatKey(kb, keys.Next()), vals.Next(), true); errs[w] != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	e.res.Seconds = time.Since(start).Seconds()
	e.res.Ops, e.res.Writes = int64(per*SyncWriters), int64(per*SyncWriters)
	return firstError(errs)
}

func firstError(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// gets looks up n random keys and returns how many were found.
func (e *env) gets(n int) (found int64, err error) {
	keys, kb := gen.NewKeys(e.n, e.seed, streamRead), make([]byte, gen.KeySize)
	for range n {
		_, ok, err := e.db.Get(gen.FormatKey(kb, keys.Next()))
		if err != nil {
			return found, err
		}
		if ok {
			found++
		}
	}
	return found, nil
}

// lookups is how many Gets or seeks readrandom, seekrandom and
// readwhilewriting make.
func (e *env) lookups() int {
	if e.reads > 0 {
		return e.reads
	}
	return e.n
}

func (e *env) readRandom() error {
	start := time.Now()
	found, err := e.gets(e.lookups())
	e.res.Seconds = time.Since(start).Seconds()
	e.res.Ops, e.res.Found = int64(e.lookups()), found
	return err
}

// readRandomReopened is readrandom on a database filled, closed and opened
// again by this process, as a program that fills and then reads would.
func (e *env) readRandomReopened() error {
	if err := e.fill(e.n, e.keys(streamFill), false, false); err != nil {
		return err
	}
	if err := e.db.Close(); err != nil {
		return err
	}
	e.db = nil
	db, err := kv.Open(e.store, e.dir, e.cfg)
	if err != nil {
		return err
	}
	e.db = db
	return e.readRandom()
}

func (e *env) readSeq() error {
	start := time.Now()
	it, err := e.db.NewIter()
	if err != nil {
		return err
	}
	var n, bytes int64
	for ok := it.First(); ok; ok = it.Next() {
		n++
		bytes += int64(len(it.Key()) + len(it.Value()))
	}
	err = it.Close()
	e.res.Seconds = time.Since(start).Seconds()
	e.res.Ops = n
	if err == nil && bytes != n*gen.UserBytes {
		return errorf("readseq: %d entries hold %d bytes, want %d each", n, bytes, gen.UserBytes)
	}
	return err
}

func (e *env) seekRandom() error {
	keys, kb := gen.NewKeys(e.n, e.seed, streamRead), make([]byte, gen.KeySize)
	var found int64
	start := time.Now()
	for range e.lookups() {
		it, err := e.db.NewIter()
		if err != nil {
			return err
		}
		k := gen.FormatKey(kb, keys.Next())
		ok := it.SeekGE(k)
		// Found as db_bench counts it: the seek landed on the key sought
		// (SeekGE almost always lands on some key).
		if ok && bytes.Equal(it.Key(), k) {
			found++
		}
		for j := 0; ok && j < SeekNexts; j++ {
			_, _ = it.Key(), it.Value()
			ok = it.Next()
		}
		if err := it.Close(); err != nil {
			return err
		}
	}
	e.res.Seconds = time.Since(start).Seconds()
	e.res.Ops, e.res.Found = int64(e.lookups()), found
	return nil
}

// readWhileWriting times lookups() random Gets (n unless -reads says) while
// one goroutine puts random keys, unsynced, until the reads end. The reads
// start once the writer's first put has returned.
func (e *env) readWhileWriting() error {
	var stop atomic.Bool
	var writes int64
	var werr error
	var wg sync.WaitGroup
	started := make(chan struct{})
	wg.Go(func() {
		defer func() {
			if writes == 0 {
				close(started)
			}
		}()
		keys := gen.NewKeys(e.n, e.seed, streamWriter)
		vals, kb := gen.NewValues(), make([]byte, gen.KeySize)
		for !stop.Load() {
			if werr = e.db.Put(gen.FormatKey(kb, keys.Next()), vals.Next(), false); werr != nil {
				return
			}
			if writes++; writes == 1 {
				close(started)
			}
		}
	})
	<-started
	start := time.Now()
	found, err := e.gets(e.lookups())
	e.res.Seconds = time.Since(start).Seconds()
	stop.Store(true)
	wg.Wait()
	e.res.Ops, e.res.Found, e.res.Writes = int64(e.lookups()), found, writes
	if err != nil {
		return err
	}
	return werr
}

// recovery opens the store a killed process left and reads the last key that
// process put: Found says whether that acknowledged write survived.
func (e *env) recovery() error {
	last := lastCrashKey(e.n, e.seed)
	kb := make([]byte, gen.KeySize)
	start := time.Now()
	db, err := kv.Open(e.store, e.dir, e.cfg)
	if err != nil {
		return err
	}
	_, found, err := db.Get(gen.FormatKey(kb, last))
	e.res.Seconds = time.Since(start).Seconds()
	e.db = db
	e.res.Ops = 1
	if found {
		e.res.Found = 1
	}
	if err != nil {
		return err
	}
	e.res.Acked = int64(crashKeys(e.n, e.seed))
	e.res.Kept, err = countKeys(db)
	return err
}

// crashKeys is how many distinct keys the killed process of the recovery
// workload put. It counts them in a bitmap of n bits (125 KB at the default
// n), not a map: a map of 500,000 keys took about 10 MB of heap in the
// timed process, which its peak RSS counted against the store.
func crashKeys(n int, seed uint64) int {
	keys := gen.NewKeys(n, seed, streamFill)
	seen := make([]uint64, (n+63)/64)
	distinct := 0
	for range crashPuts(n) {
		k := keys.Next()
		if bit := uint64(1) << (k % 64); seen[k/64]&bit == 0 {
			seen[k/64] |= bit
			distinct++
		}
	}
	return distinct
}

// countKeys counts the keys of db with one scan.
func countKeys(db kv.Store) (int64, error) {
	it, err := db.NewIter()
	if err != nil {
		return 0, err
	}
	var n int64
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	return n, it.Close()
}

// crashPuts is how many puts the killed process of the recovery workload
// makes.
func crashPuts(n int) int { return max(n/2, 1) }

// lastCrashKey is the key number of the killed process's last put.
func lastCrashKey(n int, seed uint64) uint64 {
	keys := gen.NewKeys(n, seed, streamFill)
	var k uint64
	for range crashPuts(n) {
		k = keys.Next()
	}
	return k
}

// txnRMW runs per read-modify-write transactions on each of writers
// goroutines: two random keys read, both written, committed (synced if
// sync). Ops counts the commits; Conflicts the commits refused.
func (e *env) txnRMW(writers, per int, synced bool) error {
	tx, ok := e.db.(kv.Txner)
	if !ok {
		return errorf("%s has no transactions", e.store)
	}
	vals := make([]*gen.Values, writers)
	for w := range vals {
		vals[w] = gen.NewValues()
	}
	errs := make([]error, writers)
	var commits, conflicts atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for w := range writers {
		wg.Go(func() {
			keys := gen.NewKeys(e.n, e.seed, streamSync+uint64(w))
			ka, kb := make([]byte, gen.KeySize), make([]byte, gen.KeySize)
			for range per {
				a, b := gen.FormatKey(ka, keys.Next()), gen.FormatKey(kb, keys.Next())
				conflict, err := tx.ReadModifyWrite(a, b, vals[w].Next(), vals[w].Next(), synced)
				if err != nil {
					errs[w] = err
					return
				}
				if conflict {
					conflicts.Add(1)
				} else {
					commits.Add(1)
				}
			}
		})
	}
	wg.Wait()
	e.res.Seconds = time.Since(start).Seconds()
	e.res.Ops, e.res.Conflicts = commits.Load(), conflicts.Load()
	e.res.Writes = 2 * e.res.Ops
	return firstError(errs)
}

// txnView runs n/2 read-only transactions of two random Gets each.
func (e *env) txnView() error {
	tx, ok := e.db.(kv.Txner)
	if !ok {
		return errorf("%s has no transactions", e.store)
	}
	keys := gen.NewKeys(e.n, e.seed, streamRead)
	ka, kb := make([]byte, gen.KeySize), make([]byte, gen.KeySize)
	count := max(e.n/2, 1)
	var found int64
	start := time.Now()
	for range count {
		n, err := tx.View(gen.FormatKey(ka, keys.Next()), gen.FormatKey(kb, keys.Next()))
		if err != nil {
			return err
		}
		found += int64(n)
	}
	e.res.Seconds = time.Since(start).Seconds()
	// Found is per Get, as readrandom's: two a transaction.
	e.res.Ops, e.res.Found = int64(count), found/2
	return nil
}

// The reads of the range-deletion workloads.
const (
	delFirst = iota
	delSeek
	delGet
)

// afterRangeDeletion deletes the first n keys of a FillLog database with
// one range deletion, then times n/10 reads of the kind given, each of
// which must land past the deleted range (or find nothing). The time the
// DeleteRange call itself took is in Latency's max.
func (e *env) afterRangeDeletion(kind int) error {
	rd, ok := e.db.(kv.RangeDeleter)
	if !ok {
		return errorf("%s has no range deletion", e.store)
	}
	kb := make([]byte, gen.KeySize)
	t0 := time.Now()
	if err := rd.DeleteRange(gen.FormatKey(make([]byte, gen.KeySize), 0), gen.FormatKey(kb, uint64(e.n))); err != nil {
		return err
	}
	e.lat.Record(time.Since(t0))
	firstLive := string(gen.FormatKey(kb, uint64(e.n)))
	keys := gen.NewKeys(e.n, e.seed, streamRead)
	count := max(e.n/10, 1)
	start := time.Now()
	for range count {
		switch kind {
		case delGet:
			_, found, err := e.db.Get(gen.FormatKey(kb, keys.Next()))
			if err != nil {
				return err
			}
			if found {
				return errorf("a deleted key was found")
			}
		default:
			it, err := e.db.NewIter()
			if err != nil {
				return err
			}
			var ok bool
			if kind == delFirst {
				ok = it.First()
			} else {
				ok = it.SeekGE(gen.FormatKey(kb, keys.Next()))
			}
			if !ok || string(it.Key()) != firstLive {
				it.Close()
				return errorf("the read did not land on the first live key %s", firstLive)
			}
			if err := it.Close(); err != nil {
				return err
			}
		}
	}
	e.res.Seconds = time.Since(start).Seconds()
	e.res.Ops = int64(count)
	return nil
}
