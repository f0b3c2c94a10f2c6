package shale_test

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shale-db/shale"
)

func mustGet(t *testing.T, tx *shale.Transaction, key string) (string, bool) {
	t.Helper()
	v, err := tx.Get([]byte(key))
	if errors.Is(err, shale.ErrNotFound) {
		return "", false
	}
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	return string(v), true
}

func txScan(t *testing.T, tx *shale.Transaction, o *shale.IterOptions) []string {
	t.Helper()
	var got []string
	for e, err := range tx.All(o) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(e.Key)+"="+string(e.Value))
	}
	return got
}

func TestTxnReadsOwnWrites(t *testing.T) {
	db, _ := openDB(t, nil)
	for _, k := range []string{"a", "c", "e"} {
		if err := db.Put([]byte(k), []byte("db"+k), shale.NoSync); err != nil {
			t.Fatal(err)
		}
	}
	tx := db.NewTransaction()
	defer tx.Discard()
	if err := tx.Put([]byte("b"), []byte("txb")); err != nil {
		t.Fatal(err)
	}
	if err := tx.Put([]byte("c"), []byte("txc")); err != nil {
		t.Fatal(err)
	}
	if err := tx.Delete([]byte("e")); err != nil {
		t.Fatal(err)
	}
	if v, ok := mustGet(t, tx, "c"); !ok || v != "txc" {
		t.Fatalf("Get(c) = %q, %v; want the transaction's own txc", v, ok)
	}
	if _, ok := mustGet(t, tx, "e"); ok {
		t.Fatal("Get(e) found the key the transaction deleted")
	}
	if v, _ := db.Get([]byte("c")); string(v) != "dbc" {
		t.Fatalf("the DB sees %q before Commit", v)
	}
	want := "[a=dba b=txb c=txc]"
	if got := fmt.Sprint(txScan(t, tx, nil)); got != want {
		t.Fatalf("forward scan %s, want %s", got, want)
	}
	var back []string
	for e, err := range tx.Backward(&shale.IterOptions{UpperBound: []byte("c")}) {
		if err != nil {
			t.Fatal(err)
		}
		back = append(back, string(e.Key))
	}
	if fmt.Sprint(back) != "[b a]" {
		t.Fatalf("backward scan below c: %v", back)
	}
	if err := tx.Commit(shale.Sync); err != nil {
		t.Fatal(err)
	}
	if v, _ := db.Get([]byte("c")); string(v) != "txc" {
		t.Fatalf("after Commit the DB has c=%q", v)
	}
	if _, err := db.Get([]byte("e")); !errors.Is(err, shale.ErrNotFound) {
		t.Fatalf("after Commit e: %v", err)
	}
	if err := tx.Commit(shale.Sync); !errors.Is(err, shale.ErrTxnDone) {
		t.Fatalf("second Commit: %v", err)
	}
	if err := tx.Put([]byte("x"), nil); !errors.Is(err, shale.ErrTxnDone) {
		t.Fatalf("Put after Commit: %v", err)
	}
	tx.Discard()
	tx.Discard()
}

// TestTxnSnapshot: a transaction reads the database as of its beginning.
func TestTxnSnapshot(t *testing.T) {
	db, _ := openDB(t, nil)
	db.Put([]byte("k"), []byte("1"), shale.NoSync)
	tx := db.NewTransaction()
	defer tx.Discard()
	db.Put([]byte("k"), []byte("2"), shale.NoSync)
	db.Put([]byte("new"), []byte("x"), shale.NoSync)
	if v, _ := mustGet(t, tx, "k"); v != "1" {
		t.Fatalf("tx sees k=%q, want 1", v)
	}
	if got := fmt.Sprint(txScan(t, tx, nil)); got != "[k=1]" {
		t.Fatalf("tx scan %s", got)
	}
}

func TestTxnConflicts(t *testing.T) {
	type step func(t *testing.T, db *shale.DB, tx *shale.Transaction)
	get := func(k string) step {
		return func(t *testing.T, _ *shale.DB, tx *shale.Transaction) { mustGet(t, tx, k) }
	}
	scan := func(lo, hi string) step {
		return func(t *testing.T, _ *shale.DB, tx *shale.Transaction) {
			o := &shale.IterOptions{}
			if lo != "" {
				o.LowerBound = []byte(lo)
			}
			if hi != "" {
				o.UpperBound = []byte(hi)
			}
			txScan(t, tx, o)
		}
	}
	seekOne := func(k string) step { // reads [k, first key >= k]
		return func(t *testing.T, _ *shale.DB, tx *shale.Transaction) {
			it := tx.NewIterator(nil)
			it.SeekGE([]byte(k))
			if err := it.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
	put := func(k string) func(db *shale.DB) error {
		return func(db *shale.DB) error { return db.Put([]byte(k), []byte("w"), shale.NoSync) }
	}
	del := func(k string) func(db *shale.DB) error {
		return func(db *shale.DB) error { return db.Delete([]byte(k), shale.NoSync) }
	}
	delRange := func(lo, hi string) func(db *shale.DB) error {
		return func(db *shale.DB) error {
			var l, h []byte
			if lo != "" {
				l = []byte(lo)
			}
			if hi != "" {
				h = []byte(hi)
			}
			return db.DeleteRange(l, h, shale.NoSync)
		}
	}
	for _, c := range []struct {
		name     string
		read     step
		write    func(db *shale.DB) error
		conflict bool
	}{
		{"get then a range deletion over it", get("b"), delRange("a", "c"), true},
		{"get absent then a range deletion over it", get("bb"), delRange("b", "c"), true},
		{"get then a range deletion beside it", get("b"), delRange("c", "d"), false},
		{"get then an open-ended range deletion", get("zz"), delRange("y", ""), false}, // zz absent, past every key: the end stops before it
		{"scan then a range deletion overlapping it", scan("a", "c"), delRange("bb", "e"), true},
		{"scan then a range deletion after it", scan("a", "c"), delRange("c", "e"), false},
		{"scan then a range deletion with no start", scan("c", "d"), delRange("", "c\x00"), true},
		{"get then write same key", get("b"), put("b"), true},
		{"get absent then insert", get("zz"), put("zz"), true},
		{"get then delete", get("b"), del("b"), true},
		{"get then write other key", get("b"), put("c"), false},
		{"scan then insert inside (phantom)", scan("a", "d"), put("bb"), true},
		{"scan then insert at lower bound", scan("b", "d"), put("b"), true},
		{"scan then insert at upper bound", scan("a", "d"), put("d"), false},
		{"scan then insert below", scan("b", "d"), put("a"), false},
		{"unbounded scan then insert anywhere", scan("", ""), put("zzz"), true},
		{"seek then insert before the key found", seekOne("ab"), put("ab\x00"), true},
		{"seek lands on the key sought, insert just after", seekOne("b"), put("b\x00"), false},
		{"seek then insert after the key found", seekOne("b"), put("bb"), false},
		{"seek then insert after the key found (at c)", seekOne("bb"), put("c\x00"), false},
		{"seek then write the key found", seekOne("bb"), put("c"), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			db, _ := openDB(t, nil)
			for _, k := range []string{"a", "b", "c", "e"} {
				db.Put([]byte(k), []byte("0"), shale.NoSync)
			}
			tx := db.NewTransaction()
			defer tx.Discard()
			c.read(t, db, tx)
			tx.Put([]byte("out"), []byte("1"))
			if err := c.write(db); err != nil {
				t.Fatal(err)
			}
			err := tx.Commit(shale.NoSync)
			if c.conflict != errors.Is(err, shale.ErrConflict) {
				t.Fatalf("Commit: %v; want conflict=%v", err, c.conflict)
			}
			if !c.conflict && err != nil {
				t.Fatal(err)
			}
			_, gerr := db.Get([]byte("out"))
			if c.conflict != errors.Is(gerr, shale.ErrNotFound) {
				t.Fatalf("after Commit (conflict=%v), the write is there: %v", c.conflict, gerr)
			}
		})
	}
}

// TestTxnReadOnlyAlwaysCommits: a transaction that wrote nothing commits
// whatever was written since it began.
func TestTxnReadOnlyAlwaysCommits(t *testing.T) {
	db, _ := openDB(t, nil)
	tx := db.NewTransaction()
	mustGet(t, tx, "a")
	db.Put([]byte("a"), []byte("1"), shale.NoSync)
	if err := tx.Commit(shale.Sync); err != nil {
		t.Fatal(err)
	}
}

// TestTxnWriteSkew: two on-call doctors each go off call if the other is
// on call. Snapshot isolation lets both commit; serializable refuses one.
func TestTxnWriteSkew(t *testing.T) {
	db, _ := openDB(t, nil)
	db.Put([]byte("alice"), []byte("on"), shale.Sync)
	db.Put([]byte("bob"), []byte("on"), shale.Sync)
	goOff := func(me, other string) *shale.Transaction {
		tx := db.NewTransaction()
		if v, _ := mustGet(t, tx, other); v == "on" {
			tx.Put([]byte(me), []byte("off"))
		}
		return tx
	}
	t1, t2 := goOff("alice", "bob"), goOff("bob", "alice")
	e1, e2 := t1.Commit(shale.Sync), t2.Commit(shale.Sync)
	if e1 != nil {
		t.Fatalf("the first commit failed: %v", e1)
	}
	if !errors.Is(e2, shale.ErrConflict) {
		t.Fatalf("the second commit: %v; want ErrConflict (write skew)", e2)
	}
	a, _ := db.Get([]byte("alice"))
	b, _ := db.Get([]byte("bob"))
	if string(a) != "off" || string(b) != "on" {
		t.Fatalf("alice=%s bob=%s", a, b)
	}
}

// TestTxnPhantom: insert a key under a prefix only if fewer than N exist.
// Two transactions each count N-1 and insert; one must fail.
func TestTxnPhantom(t *testing.T) {
	db, _ := openDB(t, nil)
	const limit = 3
	for i := range limit - 1 {
		db.Put(fmt.Appendf(nil, "seat/%d", i), []byte("x"), shale.Sync)
	}
	book := func(who string) *shale.Transaction {
		tx := db.NewTransaction()
		n := len(txScan(t, tx, shale.PrefixOptions([]byte("seat/"))))
		if n < limit {
			tx.Put([]byte("seat/"+who), []byte("x"))
		}
		return tx
	}
	t1, t2 := book("p"), book("q")
	if err := t1.Commit(shale.Sync); err != nil {
		t.Fatal(err)
	}
	if err := t2.Commit(shale.Sync); !errors.Is(err, shale.ErrConflict) {
		t.Fatalf("second booking: %v; want ErrConflict (phantom)", err)
	}
	if n := len(scanPrefix(t, db, "seat/")); n != limit {
		t.Fatalf("%d seats booked, limit %d", n, limit)
	}
}

// TestTxnLostUpdate: concurrent increments through Update lose none.
func TestTxnLostUpdate(t *testing.T) {
	db, _ := openDB(t, nil)
	const workers, each = 8, 50
	var wg sync.WaitGroup
	var retries atomic.Int64
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				tries := 0
				err := db.Update(func(tx *shale.Transaction) error {
					tries++
					n := 0
					if v, err := tx.Get([]byte("counter")); err == nil {
						fmt.Sscan(string(v), &n)
					} else if !errors.Is(err, shale.ErrNotFound) {
						return err
					}
					return tx.Put([]byte("counter"), fmt.Append(nil, n+1))
				})
				retries.Add(int64(tries - 1))
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	v, _ := db.Get([]byte("counter"))
	if string(v) != fmt.Sprint(workers*each) {
		t.Fatalf("counter = %s, want %d", v, workers*each)
	}
	t.Logf("%d increments, %d retries", workers*each, retries.Load())
}

// TestTxnIteratorOpenAtCommit: Commit refuses while an iterator is open;
// after Discard, an open iterator fails and must still be closed.
func TestTxnIteratorOpenAtCommit(t *testing.T) {
	db, _ := openDB(t, nil)
	db.Put([]byte("a"), []byte("1"), shale.NoSync)
	tx := db.NewTransaction()
	tx.Put([]byte("b"), []byte("2"))
	it := tx.NewIterator(nil)
	if !it.First() {
		t.Fatal(it.Err())
	}
	if err := tx.Commit(shale.Sync); err == nil || errors.Is(err, shale.ErrConflict) {
		t.Fatalf("Commit with an open iterator: %v", err)
	}
	if _, err := db.Get([]byte("b")); !errors.Is(err, shale.ErrNotFound) {
		t.Fatal("the refused Commit wrote")
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(shale.Sync); err != nil {
		t.Fatalf("Commit after closing the iterator: %v", err)
	}

	tx = db.NewTransaction()
	it = tx.NewIterator(nil)
	it.First()
	tx.Discard()
	if it.Next() || it.First() {
		t.Fatal("an iterator of a discarded transaction moved")
	}
	if err := it.Err(); !errors.Is(err, shale.ErrTxnDone) {
		t.Fatalf("Err after Discard: %v", err)
	}
	if err := it.Close(); !errors.Is(err, shale.ErrTxnDone) && err != nil {
		t.Fatalf("Close after Discard: %v", err)
	}
}

func TestUpdateAndView(t *testing.T) {
	db, _ := openDB(t, nil)
	mine := errors.New("mine")
	if err := db.Update(func(tx *shale.Transaction) error {
		tx.Put([]byte("x"), []byte("1"))
		return mine
	}); err != mine {
		t.Fatalf("Update returned %v, want fn's own error unchanged", err)
	}
	if _, err := db.Get([]byte("x")); !errors.Is(err, shale.ErrNotFound) {
		t.Fatal("Update committed after fn failed")
	}
	// A transaction that always conflicts: each try reads k, and another
	// write to k lands before its commit.
	tries := 0
	err := db.Update(func(tx *shale.Transaction) error {
		tries++
		mustGet(t, tx, "k")
		tx.Put([]byte("y"), []byte("1"))
		return db.Put([]byte("k"), fmt.Append(nil, tries), shale.NoSync)
	})
	if !errors.Is(err, shale.ErrConflict) || tries != 11 {
		t.Fatalf("Update: %v after %d tries; want ErrConflict after 11 (10 retries)", err, tries)
	}
	err = db.View(func(tx *shale.Transaction) error {
		if err := tx.Put([]byte("z"), nil); !errors.Is(err, shale.ErrTxnReadOnly) {
			t.Fatalf("Put in View: %v", err)
		}
		if err := tx.Delete([]byte("z")); !errors.Is(err, shale.ErrTxnReadOnly) {
			t.Fatalf("Delete in View: %v", err)
		}
		_, err := tx.Get([]byte("k"))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestTxnBank: accounts with concurrent transfers and read-only sums; the
// total never changes, in any sum and at the end.
func TestTxnBank(t *testing.T) {
	db, _ := openDB(t, nil)
	const accounts, initial = 20, 100
	for i := range accounts {
		db.Put(bankKey(i), fmt.Append(nil, initial), shale.Sync)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var sums, transfers atomic.Int64
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				from, to := (w*7+i)%accounts, (w*13+i*3+1)%accounts
				if from == to {
					continue
				}
				if err := db.Update(func(tx *shale.Transaction) error { return bankTransfer(tx, from, to, 1+i%5) }); err != nil {
					t.Error(err)
					return
				}
				transfers.Add(1)
			}
		}()
	}
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				err := db.View(func(tx *shale.Transaction) error {
					total, err := bankTotal(tx)
					if err == nil && total != accounts*initial {
						t.Errorf("a read-only sum saw %d, want %d", total, accounts*initial)
					}
					return err
				})
				if err != nil {
					t.Error(err)
					return
				}
				sums.Add(1)
			}
		}()
	}
	for sums.Load() < 400 && !t.Failed() {
		runtimeGosched()
	}
	close(stop)
	wg.Wait()
	tx := db.NewTransaction()
	defer tx.Discard()
	if total, err := bankTotal(tx); err != nil || total != accounts*initial {
		t.Fatalf("final total %d (%v), want %d", total, err, accounts*initial)
	}
	t.Logf("%d transfers, %d sums", transfers.Load(), sums.Load())
}

func bankKey(i int) []byte { return fmt.Appendf(nil, "acct/%03d", i) }

func bankTransfer(tx *shale.Transaction, from, to, amount int) error {
	var bal [2]int
	for j, k := range []int{from, to} {
		v, err := tx.Get(bankKey(k))
		if err != nil {
			return err
		}
		if _, err := fmt.Sscan(string(v), &bal[j]); err != nil {
			return err
		}
	}
	if bal[0] < amount {
		return nil
	}
	if err := tx.Put(bankKey(from), fmt.Append(nil, bal[0]-amount)); err != nil {
		return err
	}
	return tx.Put(bankKey(to), fmt.Append(nil, bal[1]+amount))
}

func bankTotal(tx *shale.Transaction) (int, error) {
	total := 0
	for e, err := range tx.All(shale.PrefixOptions([]byte("acct/"))) {
		if err != nil {
			return 0, err
		}
		n := 0
		if _, err := fmt.Sscan(string(e.Value), &n); err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

func runtimeGosched() { time.Sleep(time.Millisecond) }
