package shale

// Review tests: power loss through vfs.MemFS.CrashClone, and corruption
// reporting of tables and WAL records.

import (
	"bytes"
	stderrors "errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shale-db/shale/internal/batchrepr"
	"github.com/shale-db/shale/internal/ikey"
	"github.com/shale-db/shale/internal/vfs"
	"github.com/shale-db/shale/wal"
)

const reviewDir = "/db"

// reviewOpen opens the database in reviewDir on fsys.
func reviewOpen(t testing.TB, fsys vfs.FS, opts *Options) (*DB, error) {
	t.Helper()
	o, err := opts.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	return open(reviewDir, o, fsys)
}

func reviewMustOpen(t testing.TB, fsys vfs.FS, opts *Options) *DB {
	t.Helper()
	db, err := reviewOpen(t, fsys, opts)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func reviewKey(i int) []byte   { return []byte(fmt.Sprintf("key%06d", i)) }
func reviewValue(i int) []byte { return bytes.Repeat([]byte{byte('a' + i%26)}, 100+i%50) }

func reviewCheck(t testing.TB, db *DB, n int, where string) {
	t.Helper()
	for i := range n {
		v, err := db.Get(reviewKey(i))
		if err != nil || !bytes.Equal(v, reviewValue(i)) {
			t.Fatalf("%s: Get(%s) = %.20q, %v; want the acknowledged value", where, reviewKey(i), v, err)
		}
	}
}

// memFile reads a whole file of a MemFS.
// memRewrite replaces a file's contents durably.
// onlyLog returns the path of the one WAL in reviewDir.
// TestReviewPowerLossKeepsSyncWrites: every Sync write acknowledged before a
// power loss is there after it, while memtables switch, tables are flushed
// and old WALs are deleted in the background.
func TestReviewPowerLossKeepsSyncWrites(t *testing.T) {
	fsys := vfs.NewMem()
	db := reviewMustOpen(t, fsys, &Options{WriteBufferSize: 8 << 10})
	var acked atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 2500; i++ { // bounded: without compaction L0 only grows
			select {
			case <-stop:
				return
			default:
			}
			if err := db.Put(reviewKey(i), reviewValue(i), Sync); err != nil {
				t.Errorf("Put: %v", err)
				return
			}
			acked.Store(int64(i + 1))
			if i%97 == 0 {
				if err := db.Flush(); err != nil {
					t.Errorf("Flush: %v", err)
					return
				}
			}
		}
	}()
	for round := 0; round < 12; round++ {
		time.Sleep(2 * time.Millisecond)
		n := int(acked.Load())
		crashed := fsys.CrashClone()
		db2, err := reviewOpen(t, crashed, nil)
		if err != nil {
			close(stop)
			wg.Wait()
			t.Fatalf("round %d: open after power loss: %v", round, err)
		}
		reviewCheck(t, db2, n, fmt.Sprintf("round %d (%d acked)", round, n))
		db2.Close()
	}
	close(stop)
	wg.Wait()
}

// TestReviewPowerLossAfterClose: NoSync writes followed by Close survive a
// power loss (Close syncs the WAL), and so do they after the recovery of
// the next Open retired that WAL.
func TestReviewPowerLossAfterClose(t *testing.T) {
	fsys := vfs.NewMem()
	db := reviewMustOpen(t, fsys, nil)
	for i := range 300 {
		if err := db.Put(reviewKey(i), reviewValue(i), NoSync); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	c1 := fsys.CrashClone()
	db1 := reviewMustOpen(t, c1, nil) // replays, writes a table, deletes the WAL
	reviewCheck(t, db1, 300, "after Close and power loss")
	c2 := c1.CrashClone()
	db2 := reviewMustOpen(t, c2, nil)
	reviewCheck(t, db2, 300, "after recovery and power loss")
}

// "so the bytes can still be examined". The move must survive a power loss:
// the entry is removed from the (synced) database directory, so lost/ must
// be synced as well, or the damaged log is gone for good.
// hookFS calls after, once, at the first directory sync that follows the
// creation of a file of type typ (a WAL unless set).
// inside Open, after it created the new WAL and before the MANIFEST named
// it, leaves the replayed WAL, which legitimately ends in a torn write,
// followed by an empty newer WAL. Nothing was damaged: the next Open in
// Strict mode must succeed and SkipCorrupt must report no drop. Today the
// replayed WAL is judged "not the newest" and its torn tail is damage.
// return its answer or ErrClosed, not an internal error of the table cache.
// and snapshots racing Close (under -race) never panic, deadlock or return
// anything but success or ErrClosed.
// TestReviewTableDamageIsCorruption: a flipped byte in a table, and a
// table cut short, are errors that match ErrCorruption and name the file.
func TestReviewTableDamageIsCorruption(t *testing.T) {
	for _, how := range []string{"flip", "truncate"} {
		t.Run(how, func(t *testing.T) {
			dir := t.TempDir()
			db, err := Open(dir, &Options{Compression: NoCompression})
			if err != nil {
				t.Fatal(err)
			}
			for i := range 200 {
				db.Put(reviewKey(i), reviewValue(i), NoSync)
			}
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
			st, _ := db.Stats()
			db.Close()
			if len(st.Tables) != 1 {
				t.Fatalf("tables: %+v", st.Tables)
			}
			name := filepath.Join(dir, fmt.Sprintf("%06d.ldb", st.Tables[0].FileNum))
			b, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			if how == "flip" {
				b[100] ^= 0xff
			} else {
				b = b[:len(b)/2]
			}
			if err := os.WriteFile(name, b, 0o644); err != nil {
				t.Fatal(err)
			}
			db, err = Open(dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			_, err = db.Get(reviewKey(0))
			if !stderrors.Is(err, ErrCorruption) || !strings.Contains(err.Error(), filepath.Base(name)) {
				t.Errorf("Get from a damaged table: %v; want ErrCorruption naming %s", err, filepath.Base(name))
			}
			it := db.NewIterator(nil)
			for it.First(); it.Next(); {
			}
			if err := it.Close(); !stderrors.Is(err, ErrCorruption) {
				t.Errorf("scan of a damaged table: %v; want ErrCorruption", err)
			}
		})
	}
}

// TestReviewWALSequenceOverflow: a WAL record whose checksum holds but
// whose sequence numbers pass ikey.MaxSeq is malformed data. SkipCorrupt
// skips and reports it like any malformed batch, and keeps the records
// before it.
func TestReviewWALSequenceOverflow(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Put([]byte("good"), []byte("1"), NoSync); err != nil {
		t.Fatal(err)
	}
	st, _ := db.Stats()
	db.Close()

	f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("%06d.log", st.LogNum)), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The first write went to block 0 at offset 0; append a whole new
	// record after it, in the same block.
	var buf bytes.Buffer
	w := wal.NewWriter(&buf)
	pad := batchrepr.AppendPut(nil, []byte("good"), []byte("1"))
	batchrepr.SetSeq(pad, 1)
	w.WriteRecord(pad) // stands for the existing record
	bad := batchrepr.AppendPut(nil, []byte("bad"), []byte("x"))
	bad = batchrepr.AppendPut(bad, []byte("bad2"), []byte("y"))
	batchrepr.SetSeq(bad, ikey.MaxSeq)
	w.WriteRecord(bad)
	w.Flush()
	existing := len(pad) + wal.HeaderSize
	if _, err := f.Write(buf.Bytes()[existing:]); err != nil {
		t.Fatal(err)
	}
	f.Close()

	db, err = Open(dir, nil)
	if err != nil {
		if !stderrors.Is(err, ErrCorruption) {
			t.Fatalf("SkipCorrupt Open of a WAL with an out-of-range sequence number: %v (not even ErrCorruption)", err)
		}
		t.Fatalf("SkipCorrupt Open fails on one malformed record instead of skipping it: %v", err)
	}
	defer db.Close()
	if logs := db.Recovery().Logs; len(logs) != 1 || len(logs[0].Drops) != 1 || logs[0].Records != 1 {
		t.Errorf("recovery report %+v: want one record replayed and one drop", logs)
	}
	if v, err := db.Get([]byte("good")); err != nil || string(v) != "1" {
		t.Errorf("Get(good) = %q, %v", v, err)
	}
}

// MANIFEST-000001 is durable and before CURRENT names it, leaves a
// directory with a MANIFEST, no CURRENT, no table and no WAL: nothing was
// ever written to it. The next Open must create the database (LevelDB's
// NewDB simply starts again), not refuse it as corrupt forever.
