package shale

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shale-db/shale/internal/vfs"
)

// TestTxnConflictLogBounded: with a transaction left open, the conflict
// log stays within Options.TxnConflictMemory however much is written; the
// old transaction then fails to commit with ErrConflict saying why, while
// transactions begun since commit. Once no transaction is open, the log is
// empty.
func TestTxnConflictLogBounded(t *testing.T) {
	const limit = 64 << 10
	o, err := (&Options{TxnConflictMemory: limit}).withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	db, err := open("db", o, vfs.NewMem())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	old := db.NewTransaction()
	if _, err := old.Get([]byte("untouched")); !errors.Is(err, ErrNotFound) {
		t.Fatal(err)
	}
	old.Put([]byte("x"), []byte("1"))
	var peak int64
	for i := range 5000 {
		tx := db.NewTransaction()
		k := fmt.Appendf(nil, "key%05d", i)
		tx.Get(k)
		tx.Put(k, []byte("v"))
		if err := tx.Commit(NoSync); err != nil {
			t.Fatal(err)
		}
		if b := db.Metrics().Transactions.TrackedBytes; b > peak {
			peak = b
		}
	}
	if peak > limit {
		t.Fatalf("the conflict log held %d bytes, over the limit of %d", peak, limit)
	}
	m := db.Metrics().Transactions
	if m.Trimmed == 0 || m.Open != 1 {
		t.Fatalf("metrics %+v: want keys forgotten past the limit and one transaction open", m)
	}
	err = old.Commit(NoSync)
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "TxnConflictMemory") {
		t.Fatalf("the old transaction's commit: %v; want ErrConflict naming TxnConflictMemory", err)
	}
	if m := db.Metrics().Transactions; m.Open != 0 || m.TrackedKeys != 0 || m.TrackedBytes != 0 {
		t.Fatalf("with no transaction open the log holds %+v", m)
	}
}

// TestTxnSoakMemory (SHALE_TXN_SOAK=1): 10,000 transactions a second for a
// minute, with one left open the whole time: the heap and the conflict log
// stay bounded. It logs both every 10 seconds.
func TestTxnSoakMemory(t *testing.T) {
	if os.Getenv("SHALE_TXN_SOAK") == "" {
		t.Skip("set SHALE_TXN_SOAK=1 to run the one-minute transaction soak")
	}
	dir := t.TempDir()
	db, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	old := db.NewTransaction()
	old.Get([]byte("k0"))
	old.Put([]byte("k0"), []byte("x"))
	const rate, seconds, workers = 10000, 60, 4
	var done atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				n := done.Load()
				elapsed := time.Since(start)
				if elapsed > seconds*time.Second {
					return
				}
				if float64(n) > elapsed.Seconds()*rate {
					time.Sleep(time.Millisecond)
					continue
				}
				tx := db.NewTransaction()
				k := fmt.Appendf(nil, "k%07d", (w*1_000_003+i*7919)%1_000_000)
				tx.Get(k)
				tx.Put(k, []byte("value-of-some-length"))
				if err := tx.Commit(NoSync); err != nil && !errors.Is(err, ErrConflict) {
					t.Error(err)
					return
				}
				done.Add(1)
			}
		}()
	}
	var peakHeap uint64
	var peakLog int64
	for tick := 0; tick < seconds/10; tick++ {
		time.Sleep(10 * time.Second)
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		m := db.Metrics().Transactions
		peakHeap, peakLog = max(peakHeap, ms.HeapInuse), max(peakLog, m.TrackedBytes)
		t.Logf("%3ds: %d transactions; heap in use %.1f MiB; conflict log %d keys, %.1f MiB; %d forgotten",
			(tick+1)*10, done.Load(), float64(ms.HeapInuse)/(1<<20), m.TrackedKeys,
			float64(m.TrackedBytes)/(1<<20), m.Trimmed)
	}
	wg.Wait()
	err = old.Commit(NoSync)
	t.Logf("%d transactions in %v; peak heap %.1f MiB, peak log %.1f MiB; the minute-old transaction: %v",
		done.Load(), time.Since(start).Round(time.Second), float64(peakHeap)/(1<<20), float64(peakLog)/(1<<20), err)
	if peakLog > DefaultTxnConflictMemory {
		t.Fatalf("the conflict log reached %d bytes", peakLog)
	}
}
