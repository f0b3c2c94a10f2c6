package shale

import (
	"bytes"
	"iter"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/google/btree"
	"github.com/shale-db/shale/internal/batchrepr"
)

// Transaction is a serializable, optimistic transaction. Its reads see the
// database as of NewTransaction, plus its own writes; its writes are
// buffered until Commit, which applies them as one batch, or refuses them
// with an error matching ErrConflict if a write committed after the
// transaction began touched anything it read: a key it read with Get
// (present or absent), or any key in a range its iterators passed over,
// including a key inserted there since (a phantom).
//
// A Transaction is used by one goroutine at a time. Commit or Discard it:
// an open transaction keeps the versions it reads from being compacted
// away, as a Snapshot does, and keeps the writes committed since it began
// recorded for conflict checks (up to Options.TxnConflictMemory).
type Transaction struct {
	db       *DB
	snap     *Snapshot
	start    uint64 // the sequence number it reads at
	readOnly bool
	done     bool // committed or discarded

	// writes holds the buffered writes by key; size is the encoded size
	// of the batch they make.
	writes *btree.BTreeG[txnWrite]
	size   int
	// reads holds the keys read with Get; spans the ranges iterators
	// passed over (see normalizeSpans).
	reads map[string]struct{}
	spans []keySpan
	// spansSorted is set when spans are sorted and disjoint.
	spansSorted bool
	iters       map[*txnIter]struct{}
}

// txnWrite is one buffered write: a value, or a deletion.
type txnWrite struct {
	key, value []byte
	del        bool
}

func txnWriteLess(a, b txnWrite) bool { return bytes.Compare(a.key, b.key) < 0 }

var (
	// ErrConflict is returned by Transaction.Commit (and matched by
	// DB.Update's error once its retries are spent) when a write committed
	// after the transaction began touched something it read.
	ErrConflict = errors.New("shale: transaction conflict")
	// ErrTxnDone is returned by the methods of a transaction that was
	// committed or discarded.
	ErrTxnDone = errors.New("shale: transaction already committed or discarded")
	// ErrTxnReadOnly is returned by Put and Delete in a transaction of
	// DB.View.
	ErrTxnReadOnly = errors.New("shale: read-only transaction")
)

// NewTransaction begins a transaction that reads the database as of now.
func (db *DB) NewTransaction() *Transaction {
	snap := db.txns.begin(db)
	return &Transaction{
		db:     db,
		snap:   snap,
		start:  snap.seq,
		writes: btree.NewWithFreeListG(16, txnWriteLess, txnNodes),
	}
}

// txnNodes is the free list of every transaction's write set: Discard
// gives a transaction's B-tree nodes back, and the next transaction takes
// them, where each used to allocate a free list and its nodes. (The
// read set and the iterator set are made at their first use.)
var txnNodes = btree.NewFreeListG[txnWrite](btree.DefaultFreeListSize)

// Get returns a copy of the value of key as the transaction sees it: its
// own latest write of key, or else the database as of its beginning. It
// returns an error matching ErrNotFound when key has no value (also when
// the transaction deleted it).
func (t *Transaction) Get(key []byte) ([]byte, error) {
	return t.get(nil, key)
}

// GetAppend is DB.GetAppend in the transaction: it reads as Get does, and
// records the read as Get does.
func (t *Transaction) GetAppend(dst, key []byte) ([]byte, error) {
	return t.get(dst, key)
}

// Has reports whether key has a value as the transaction sees it (its own
// writes included), without returning a copy. It is a read, as Get is.
func (t *Transaction) Has(key []byte) (bool, error) {
	return found(withValueBuf(func(buf []byte) ([]byte, error) { return t.get(buf, key) }))
}

func (t *Transaction) get(dst, key []byte) ([]byte, error) {
	if t.done {
		return dst, ErrTxnDone
	}
	if w, ok := t.writes.Get(txnWrite{key: key}); ok {
		if w.del {
			return dst, ErrNotFound
		}
		return appendValue(dst, w.value), nil
	}
	if t.reads == nil {
		t.reads = make(map[string]struct{})
	}
	t.reads[string(key)] = struct{}{}
	return t.snap.GetAppend(dst, key)
}

// Put buffers the setting of key to value; both are copied.
func (t *Transaction) Put(key, value []byte) error {
	return t.write(key, value, false)
}

// Delete buffers the deletion of key.
func (t *Transaction) Delete(key []byte) error {
	return t.write(key, nil, true)
}

func (t *Transaction) write(key, value []byte, del bool) error {
	switch {
	case t.done:
		return ErrTxnDone
	case t.readOnly:
		return ErrTxnReadOnly
	}
	n := batchrepr.PutLen(len(key), len(value))
	if del {
		n = batchrepr.DeleteLen(len(key))
	}
	w := txnWrite{key: bytes.Clone(key), del: del}
	if !del {
		w.value = bytes.Clone(value)
		if w.value == nil {
			w.value = []byte{}
		}
	}
	old, replaced := t.writes.Get(w)
	size := t.size + n
	if replaced {
		size -= t.entryLen(old)
	}
	if uint64(size+batchrepr.HeaderLen) > MaxBatchSize {
		return errors.Newf("shale: the transaction's writes would take %d bytes as a batch, over the limit of %d",
			size+batchrepr.HeaderLen, MaxBatchSize)
	}
	t.writes.ReplaceOrInsert(w)
	t.size = size
	return nil
}

func (t *Transaction) entryLen(w txnWrite) int {
	if w.del {
		return batchrepr.DeleteLen(len(w.key))
	}
	return batchrepr.PutLen(len(w.key), len(w.value))
}

// NewIterator returns an iterator over the transaction's view within the
// bounds of o: the database as of the transaction's beginning, with the
// transaction's own writes (as of this call) merged in. It follows the
// contract of DB.NewIterator. The ranges it passes over join what the
// transaction read. Close it before Commit or Discard: Commit refuses to
// run while one is open, and after Discard an open iterator returns
// errors (it must still be closed).
func (t *Transaction) NewIterator(o *IterOptions) *Iterator {
	if t.done {
		return &Iterator{err: ErrTxnDone, closed: true}
	}
	it := t.db.newIterator(o, t.snap)
	if it.err != nil {
		return it
	}
	lower, upper := it.it.Bounds()
	ti := newTxnIter(t, it.it, lower, upper)
	it.tx = ti
	if t.iters == nil {
		t.iters = make(map[*txnIter]struct{})
	}
	t.iters[ti] = struct{}{}
	return it
}

// All is DB.All over the transaction's view; the range it passes over
// joins what the transaction read.
func (t *Transaction) All(o *IterOptions) iter.Seq2[Entry, error] {
	return seqOf(func() *Iterator { return t.NewIterator(o) }, false)
}

// Backward is All in descending key order.
func (t *Transaction) Backward(o *IterOptions) iter.Seq2[Entry, error] {
	return seqOf(func() *Iterator { return t.NewIterator(o) }, true)
}

// Commit applies the transaction's writes as one batch, with durability d,
// unless a write committed after the transaction began touched what it
// read: then it writes nothing and returns an error matching ErrConflict.
// A transaction that wrote nothing commits without a check. Commit ends
// the transaction whatever it returns, except when an iterator of the
// transaction is still open: then it returns an error, commits nothing and
// leaves the transaction as it was.
func (t *Transaction) Commit(d Durability) error {
	if t.done {
		return ErrTxnDone
	}
	if d != Sync && d != NoSync {
		return errors.Newf("shale: invalid durability %d", int(d))
	}
	if n := len(t.iters); n > 0 {
		return errors.Newf("shale: Commit with %d iterator(s) of the transaction still open: close them first", n)
	}
	defer t.Discard()
	if t.writes.Len() == 0 {
		return t.db.checkOpen()
	}
	if t.db.opts.ReadOnly {
		return t.db.readOnlyError()
	}
	repr := make([]byte, batchrepr.HeaderLen, batchrepr.HeaderLen+t.size)
	t.writes.Ascend(func(w txnWrite) bool {
		if w.del {
			repr = batchrepr.AppendDelete(repr, w.key)
		} else {
			repr = batchrepr.AppendPut(repr, w.key, w.value)
		}
		return true
	})
	return t.db.commit.submit(t.db, &writerArgs{repr: repr, sync: d == Sync, txn: t})
}

// Discard ends the transaction without writing anything. It is safe after
// Commit and safe to call more than once. An iterator of the transaction
// still open returns errors from then on, and must still be closed.
func (t *Transaction) Discard() {
	if t.done {
		return
	}
	t.done = true
	for ti := range t.iters {
		ti.discarded = true
	}
	t.snap.Close()
	t.db.txns.end(t.start)
	t.writes.Clear(true) // its nodes go back to txnNodes
	t.writes, t.reads, t.spans = nil, nil, nil
}

// addSpan joins s to what the transaction read.
func (t *Transaction) addSpan(s keySpan) {
	if s.empty() {
		return
	}
	t.spans = append(t.spans, s)
	t.spansSorted = false
	if len(t.spans) >= 2*t.spanMark() {
		t.normalizeSpans()
	}
}

// spanMark is the span count past which addSpan merges them: twice what
// the last merge left, so that merging costs O(1) a span amortized.
func (t *Transaction) spanMark() int { return max(64, cap(t.spans)/4) }

// normalizeSpans sorts the spans and merges those that overlap or touch:
// the union stays exactly what the iterators passed over.
func (t *Transaction) normalizeSpans() {
	if t.spansSorted || len(t.spans) == 0 {
		return
	}
	slices.SortFunc(t.spans, func(a, b keySpan) int { return bytes.Compare(a.lo, b.lo) })
	out := t.spans[:1]
	for _, s := range t.spans[1:] {
		last := &out[len(out)-1]
		if !last.hiInf && bytes.Compare(s.lo, last.hi) > 0 {
			out = append(out, s)
			continue
		}
		if s.hiInf || !last.hiInf && bytes.Compare(s.hi, last.hi) > 0 {
			last.hi, last.hiInf = s.hi, s.hiInf
		}
	}
	clear(t.spans[len(out):])
	t.spans = out
	t.spansSorted = true
}

// spansCover reports whether key lies in one of the spans, which
// normalizeSpans has sorted and merged.
func (t *Transaction) spansCover(key string) bool {
	// The last span starting at or before key is the only one that can
	// hold it.
	i, _ := slices.BinarySearchFunc(t.spans, key, func(s keySpan, k string) int {
		if string(s.lo) <= k {
			return -1
		}
		return 1
	})
	if i == 0 {
		return false
	}
	s := t.spans[i-1]
	return s.hiInf || key < string(s.hi)
}

// readIn reports whether the transaction read anything in [lo, hi): a
// key with Get, or a span that overlaps it.
func (t *Transaction) readIn(lo, hi string) bool {
	for k := range t.reads {
		if lo <= k && k < hi {
			return true
		}
	}
	// The spans are sorted and disjoint: the first that ends after lo is
	// the only one that can start before hi.
	i, _ := slices.BinarySearchFunc(t.spans, lo, func(s keySpan, k string) int {
		if !s.hiInf && string(s.hi) <= k {
			return -1
		}
		return 1
	})
	return i < len(t.spans) && string(t.spans[i].lo) < hi
}

// iterClosed is called by an iterator of the transaction as it closes.
func (t *Transaction) iterClosed(ti *txnIter) {
	delete(t.iters, ti)
}

// Update runs fn in a new transaction and commits it with Sync. If the
// commit fails with ErrConflict, it runs fn again in a new transaction, at
// most 10 times, backing off between tries (about a second in all); then it
// returns an error matching ErrConflict. An error from fn is returned
// unchanged, and nothing is committed.
func (db *DB) Update(fn func(tx *Transaction) error) error {
	const retries = 10
	backoff := time.Millisecond
	for attempt := 0; ; attempt++ {
		tx := db.NewTransaction()
		err := fn(tx)
		if err != nil {
			tx.Discard()
			return err
		}
		err = tx.Commit(Sync)
		if err == nil || !errors.Is(err, ErrConflict) {
			return err
		}
		if attempt == retries {
			return errors.Wrapf(err, "shale: Update gave up after %d tries", attempt+1)
		}
		// Jittered, doubling: 1 ms to about 0.5 s, about a second over
		// the ten waits.
		time.Sleep(backoff/2 + rand.N(backoff))
		backoff *= 2
	}
}

// View runs fn in a new read-only transaction: Put and Delete in it return
// ErrTxnReadOnly. It returns fn's error.
func (db *DB) View(fn func(tx *Transaction) error) error {
	tx := db.NewTransaction()
	tx.readOnly = true
	defer tx.Discard()
	return fn(tx)
}
