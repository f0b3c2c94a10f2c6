package shale

// The workload of the fault and crash sweeps (fault_sweep_internal_test.go,
// crash_sweep_internal_test.go): puts, deletes, overwrites and batches, Sync
// and NoSync, flushes, a compaction, a snapshot, an iterator and Close, with
// a model of what each write's outcome allows the database to hold after a
// reopen.

import (
	"bytes"
	"context"
	stderrors "errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
)

// sweepWrite is one write of the workload: a Put, a Delete or a Batch.
type sweepWrite struct {
	keys  []string
	vals  []string // "" for a delete; values are never empty
	sync  bool
	batch bool
	acked bool // the call returned nil
}

// sweepRun is one run of the workload and what it saw.
type sweepRun struct {
	db     *DB
	writes []sweepWrite
	// done counts the writes that have returned; durable says that every
	// acknowledged write in writes[:durable] survives a power loss (a Sync
	// write, a Flush, a Compact or Close made it so). Both are read by
	// crash hooks on other goroutines.
	done, durable atomic.Int64
	// latest is the in-process view: each key's last acknowledged value
	// ("" if deleted). Reads in this process must return it.
	latest map[string]string
	errs   []error // every error an API call returned, in order, and Close's
	// failedAt is the number of the first write-path call (Put, Delete,
	// Write, Flush, Compact) that failed, -1 if none; ackedAfter counts
	// those that succeeded after it.
	failedAt, ackedAfter int
	calls                int // write-path calls made
	closeErr             error
	problems             []string // wrong answers seen in this process
	putKeys              []string // keys written by Put, for deletes and overwrites
	rng                  *rand.Rand
}

// sweepOps is the number of writes the workload makes.
const sweepOps = 160

// sweepOptions are the options of the sweep's database: small memtables and
// tables, so that the workload flushes and compacts on its own too, and
// switches to a new MANIFEST whenever its MANIFEST doubles.
func sweepOptions(logger *slog.Logger) *Options {
	return &Options{
		WriteBufferSize:     6 << 10,
		TargetFileSize:      8 << 10,
		BlockSize:           1 << 10,
		Compression:         NoCompression, // more blocks, more calls to fail
		MaxManifestFileSize: 1,
		Logger:              logger,
	}
}

func newSweepRun(db *DB) *sweepRun {
	return &sweepRun{
		db: db, latest: map[string]string{}, failedAt: -1,
		rng: rand.New(rand.NewPCG(1, 2)), // the same workload every run
	}
}

// sweepValue is the value write i puts at key: it names both, so a value
// read back says which write it came from.
func sweepValue(i int, key string) string {
	return fmt.Sprintf("w%04d:%s:%s", i, key, strings.Repeat("v", 60+i%90))
}

// writerOf returns the index of the write that put v.
func writerOf(v string) int {
	var i int
	if _, err := fmt.Sscanf(v, "w%04d:", &i); err != nil {
		return -1
	}
	return i
}

// run runs the whole workload, then Close.
func (w *sweepRun) run() {
	var snap *Snapshot
	var snapView map[string]string
	for i := range sweepOps {
		w.write(i)
		switch i {
		case 40, 80, 130:
			w.apiCall(w.db.Flush(), callFlush)
		case 60:
			snap, snapView = w.db.NewSnapshot(), cloneView(w.latest)
		case 90:
			w.checkIterator(w.db.NewIterator(nil), w.latest, "iterator")
		case 110:
			w.apiCall(w.db.Compact(nil, nil), callFlush)
		case 140:
			w.checkSnapshot(snap, snapView)
			w.apiCall(snap.Close(), callOther)
		}
		if i%25 == 24 {
			w.checkGets(w.latest, w.db.Get, "Get")
		}
	}
	w.closeErr = w.db.Close()
	if w.closeErr == nil {
		w.durable.Store(int64(len(w.writes)))
	} else {
		w.errs = append(w.errs, w.closeErr)
	}
}

// write makes write i: a batch, a delete, an overwrite or a fresh put.
func (w *sweepRun) write(i int) {
	wr := sweepWrite{sync: i%4 == 0}
	key := fmt.Sprintf("p%04d", i)
	switch {
	case i%10 == 9:
		wr.batch = true
		for j := range 4 {
			k := fmt.Sprintf("b%04d-%d", i, j)
			wr.keys, wr.vals = append(wr.keys, k), append(wr.vals, sweepValue(i, k))
		}
	case i%17 == 16 && len(w.putKeys) > 0:
		wr.keys, wr.vals = []string{w.putKeys[w.rng.IntN(len(w.putKeys))]}, []string{""}
	case i%13 == 12 && len(w.putKeys) > 0:
		k := w.putKeys[w.rng.IntN(len(w.putKeys))]
		wr.keys, wr.vals = []string{k}, []string{sweepValue(i, k)}
	default:
		wr.keys, wr.vals = []string{key}, []string{sweepValue(i, key)}
		w.putKeys = append(w.putKeys, key)
	}
	w.writes = append(w.writes, wr)
	err := w.apply(&wr)
	w.writes[i].acked = err == nil
	if err == nil {
		for j, k := range wr.keys {
			w.latest[k] = wr.vals[j]
		}
		if wr.sync {
			w.durable.Store(int64(i + 1))
		}
	}
	w.done.Store(int64(i + 1))
	w.apiCall(err, callWrite)
}

func (w *sweepRun) apply(wr *sweepWrite) error {
	d := NoSync
	if wr.sync {
		d = Sync
	}
	switch {
	case wr.batch:
		var b Batch
		for j, k := range wr.keys {
			b.Put([]byte(k), []byte(wr.vals[j]))
		}
		return w.db.Write(&b, d)
	case wr.vals[0] == "":
		return w.db.Delete([]byte(wr.keys[0]), d)
	}
	return w.db.Put([]byte(wr.keys[0]), []byte(wr.vals[0]), d)
}

// callKind says what an API call was, for apiCall.
type callKind uint8

const (
	callWrite callKind = iota // Put, Delete, Write
	callFlush                 // Flush, Compact: success makes what came before durable
	callOther                 // reads, snapshots
)

// apiCall notes the result of a call. A failed write, Flush or Compact
// must stop every later one (the failure is sticky until a reopen); one
// that succeeds after such a failure is counted in ackedAfter.
func (w *sweepRun) apiCall(err error, kind callKind) {
	if err != nil {
		w.errs = append(w.errs, err)
	}
	if kind == callOther {
		return
	}
	w.calls++
	switch {
	case err != nil && w.failedAt < 0:
		w.failedAt = w.calls
	case err == nil && w.failedAt >= 0:
		w.ackedAfter++
	}
	if err == nil && kind == callFlush {
		w.durable.Store(w.done.Load())
	}
}

func cloneView(m map[string]string) map[string]string {
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// checkGets reads every key of the workload so far: each read returns the
// key's last acknowledged value, or an error; never anything else.
func (w *sweepRun) checkGets(view map[string]string, get func([]byte) ([]byte, error), what string) {
	for _, k := range w.keysSoFar() {
		v, err := get([]byte(k))
		switch {
		case stderrors.Is(err, ErrNotFound):
			if view[k] != "" {
				w.problem("%s(%s): not found; want %.12q", what, k, view[k])
			}
		case err != nil:
			w.errs = append(w.errs, err)
			return // a read fault: the rest would fail alike
		case string(v) != view[k]:
			w.problem("%s(%s) = %.12q; want %.12q", what, k, v, view[k])
		}
	}
}

// checkIterator scans it: it yields exactly the keys of view that have a
// value, with that value, or fails with an error.
func (w *sweepRun) checkIterator(it *Iterator, view map[string]string, what string) {
	seen := 0
	for ok := it.First(); ok; ok = it.Next() {
		k, v := string(it.Key()), string(it.Value())
		if view[k] != v || v == "" {
			w.problem("%s: %s = %.12q; want %.12q", what, k, v, view[k])
		}
		seen++
	}
	if err := it.Close(); err != nil {
		w.errs = append(w.errs, err)
		return
	}
	want := 0
	for _, v := range view {
		if v != "" {
			want++
		}
	}
	if seen != want {
		w.problem("%s: %d keys; want %d", what, seen, want)
	}
}

func (w *sweepRun) checkSnapshot(s *Snapshot, view map[string]string) {
	if s == nil {
		return
	}
	w.checkGets(view, s.Get, "snapshot Get")
	w.checkIterator(s.NewIterator(nil), view, "snapshot iterator")
}

// keysSoFar returns every key written so far, in order of first write.
func (w *sweepRun) keysSoFar() []string {
	var keys []string
	seen := map[string]bool{}
	for _, wr := range w.writes {
		for _, k := range wr.keys {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	return keys
}

func (w *sweepRun) problem(format string, args ...any) {
	w.problems = append(w.problems, fmt.Sprintf(format, args...))
}

// errLog is a slog handler that keeps the error attributes of what the
// database logs, so that a sweep can tell an error that was logged (as the
// removal of an obsolete file is) from one that vanished.
type errLog struct {
	mu   sync.Mutex
	errs []error
}

func (l *errLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *errLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *errLog) WithGroup(string) slog.Handler            { return l }

func (l *errLog) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if err, ok := a.Value.Any().(error); ok {
			l.mu.Lock()
			l.errs = append(l.errs, err)
			l.mu.Unlock()
		}
		return true
	})
	return nil
}

func (l *errLog) logged(target error) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, err := range l.errs {
		if stderrors.Is(err, target) {
			return true
		}
	}
	return false
}

// valueCheck says what a reopened database may hold for the writes of a
// run, given how far the run had gone: writes[:acked] had returned (their
// acked flags say how), writes[started:] had not begun, and every
// acknowledged write in writes[:required] must be there.
type valueCheck struct {
	writes            []sweepWrite
	acked, started    int
	required          int
	checked, problems int
}

// check reads every key the writes touch from db and reports what the
// model forbids: a required write missing or overwritten by an older one,
// a value no started write put, a batch in part.
func (c *valueCheck) check(db *DB) []string {
	var out []string
	byKey := map[string][]int{} // the writes touching each key, in order
	for i, wr := range c.writes {
		for _, k := range wr.keys {
			byKey[k] = append(byKey[k], i)
		}
	}
	got := map[string]int{} // the write whose value each key holds; -1 none
	for k, idx := range byKey {
		v, err := db.Get([]byte(k))
		switch {
		case stderrors.Is(err, ErrNotFound):
			got[k] = -1
		case err != nil:
			return append(out, fmt.Sprintf("Get(%s): %v", k, err))
		default:
			got[k] = writerOf(string(v))
			if got[k] < 0 || !bytes.Equal(v, []byte(sweepValue(got[k], k))) {
				out = append(out, fmt.Sprintf("%s = %.20q: not a value the workload wrote there", k, v))
				continue
			}
		}
		c.checked++
		if msg := c.allowed(k, idx, got[k]); msg != "" {
			out = append(out, msg)
		}
	}
	return append(out, c.batchesWhole(got)...)
}

// allowed says why key k, touched by writes idx, may not hold what write
// w put (w = -1: no value); "" if it may.
func (c *valueCheck) allowed(k string, idx []int, w int) string {
	req := -1 // the last required write on k
	for _, i := range idx {
		if i < c.required && i < c.acked && c.writes[i].acked {
			req = i
		}
	}
	ok := false
	for _, i := range idx {
		if i < req || i >= c.started {
			continue
		}
		j := slicesIndex(c.writes[i].keys, k)
		deleted := c.writes[i].vals[j] == ""
		ok = ok || (w < 0 && deleted) || i == w
	}
	ok = ok || (w < 0 && req < 0)
	if ok {
		return ""
	}
	return fmt.Sprintf("%s holds the value of write %d (-1: none); required write %d, writes %v; %d of %d writes had returned",
		k, w, req, idx, c.acked, len(c.writes))
}

// batchesWhole checks that every batch is there whole or not at all.
func (c *valueCheck) batchesWhole(got map[string]int) []string {
	var out []string
	for i, wr := range c.writes {
		if !wr.batch {
			continue
		}
		n := 0
		for _, k := range wr.keys {
			if got[k] == i {
				n++
			}
		}
		if n != 0 && n != len(wr.keys) {
			out = append(out, fmt.Sprintf("batch %d: %d of its %d keys survived", i, n, len(wr.keys)))
		}
	}
	return out
}

func slicesIndex(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}
