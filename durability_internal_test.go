package shale

// Durability and lifecycle tests: power loss through vfs.MemFS.CrashClone, recovery after a
// crash inside Open, Close racing reads, and corruption reporting.

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
	"github.com/shale-db/shale/internal/filename"
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

// reviewPut writes keys 0 to n-1 with their values, NoSync.
func reviewPut(t testing.TB, db *DB, n int) {
	t.Helper()
	for i := range n {
		if err := db.Put(reviewKey(i), reviewValue(i), NoSync); err != nil {
			t.Fatal(err)
		}
	}
}

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
func memFile(t testing.TB, fsys vfs.FS, name string) []byte {
	t.Helper()
	f, err := fsys.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, st.Size())
	if _, err := f.ReadAt(b, 0); err != nil {
		t.Fatal(err)
	}
	return b
}

// memRewrite replaces a file's contents durably.
func memRewrite(t testing.TB, fsys vfs.FS, name string, b []byte) {
	t.Helper()
	f, err := fsys.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// onlyLog returns the path of the one WAL in reviewDir.
func onlyLog(t testing.TB, fsys vfs.FS) string {
	t.Helper()
	names, err := fsys.List(reviewDir)
	if err != nil {
		t.Fatal(err)
	}
	var logs []string
	for _, n := range names {
		if typ, _, ok := filename.Parse(n); ok && typ == filename.Log {
			logs = append(logs, n)
		}
	}
	if len(logs) != 1 {
		t.Fatalf("want one log, have %v", names)
	}
	return filepath.Join(reviewDir, logs[0])
}

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

// TestReviewLostLogSurvivesPowerLoss: a WAL with damage is moved to lost/
// "so the bytes can still be examined". The move must survive a power loss:
// the entry is removed from the (synced) database directory, so lost/ must
// be synced as well, or the damaged log is gone for good.
func TestReviewLostLogSurvivesPowerLoss(t *testing.T) {
	fsys := vfs.NewMem()
	db := reviewMustOpen(t, fsys, nil)
	for i := range 1000 {
		if err := db.Put(reviewKey(i), reviewValue(i), Sync); err != nil {
			t.Fatal(err)
		}
	}
	c1 := fsys.CrashClone()
	_ = db
	name := onlyLog(t, c1)
	b := memFile(t, c1, name)
	if len(b) < 3*wal.BlockSize {
		t.Fatalf("log too short: %d", len(b))
	}
	b[wal.BlockSize+100] ^= 0x55 // damage inside the second block
	memRewrite(t, c1, name, b)

	db1 := reviewMustOpen(t, c1, nil)
	rep := db1.Recovery()
	if len(rep.Logs) != 1 || rep.Logs[0].MovedTo == "" {
		t.Fatalf("recovery report %+v: want the damaged log moved aside", rep)
	}
	moved := rep.Logs[0].MovedTo
	if _, err := c1.Stat(moved); err != nil {
		t.Fatalf("moved log: %v", err)
	}
	c2 := c1.CrashClone()
	if _, err := c2.Stat(moved); err != nil {
		t.Errorf("after a power loss the damaged log moved to %s is gone: %v (lost/ was never synced)", moved, err)
	}
}

// hookFS calls after, once, at the first directory sync that follows the
// creation of a file of type typ (a WAL unless set).
type hookFS struct {
	*vfs.MemFS
	typ        filename.Type
	mu         sync.Mutex
	logCreated bool
	after      func()
}

func (h *hookFS) Create(name string) (vfs.File, error) {
	f, err := h.MemFS.Create(name)
	if err == nil {
		want := h.typ
		if want == 0 {
			want = filename.Log
		}
		if typ, _, ok := filename.Parse(filepath.Base(name)); ok && typ == want {
			h.mu.Lock()
			h.logCreated = true
			h.mu.Unlock()
		}
	}
	return f, err
}

func (h *hookFS) OpenDir(name string) (vfs.File, error) {
	f, err := h.MemFS.OpenDir(name)
	if err != nil {
		return nil, err
	}
	return &hookDir{File: f, h: h}, nil
}

type hookDir struct {
	vfs.File
	h *hookFS
}

func (d *hookDir) Sync() error {
	err := d.File.Sync()
	d.h.mu.Lock()
	fire := d.h.logCreated && d.h.after != nil
	after := d.h.after
	if fire {
		d.h.after = nil
	}
	d.h.mu.Unlock()
	if fire {
		after()
	}
	return err
}

// TestReviewStrictOpenAfterCrashDuringOpen: a crash (kill -9 or power loss)
// inside Open, after it created the new WAL and before the MANIFEST named
// it, leaves the replayed WAL, which legitimately ends in a torn write,
// followed by an empty newer WAL. Nothing was damaged: the next Open in
// Strict mode must succeed and SkipCorrupt must report no drop. Today the
// replayed WAL is judged "not the newest" and its torn tail is damage.
func TestReviewStrictOpenAfterCrashDuringOpen(t *testing.T) {
	fsys := vfs.NewMem()
	db := reviewMustOpen(t, fsys, nil)
	for i := range 20 {
		if err := db.Put(reviewKey(i), reviewValue(i), Sync); err != nil {
			t.Fatal(err)
		}
	}
	c1 := fsys.CrashClone() // power loss
	_ = db
	name := onlyLog(t, c1)
	b := memFile(t, c1, name)
	memRewrite(t, c1, name, b[:len(b)-30]) // the last write was torn

	// Sanity: on its own, the torn tail is fine in Strict mode.
	if db0, err := reviewOpen(t, c1.CrashClone(), &Options{Recovery: Strict}); err != nil {
		t.Fatalf("Strict open of a log with a torn tail: %v", err)
	} else {
		db0.Close()
	}

	var c2 *vfs.MemFS
	h := &hookFS{MemFS: c1}
	h.after = func() { c2 = c1.CrashClone() } // crash just after the new WAL is created
	db1, err := reviewOpen(t, h, &Options{Recovery: Strict})
	if err != nil {
		t.Fatalf("first Strict open: %v", err)
	}
	db1.Close()
	if c2 == nil {
		t.Fatal("hook did not fire")
	}

	db2, err := reviewOpen(t, c2.CrashClone(), &Options{Recovery: Strict})
	if err != nil {
		t.Errorf("Strict open after a crash inside Open fails: %v", err)
	} else {
		reviewCheck(t, db2, 19, "Strict reopen")
		db2.Close()
	}
	db3, err := reviewOpen(t, c2.CrashClone(), nil)
	if err != nil {
		t.Fatalf("SkipCorrupt open: %v", err)
	}
	defer db3.Close()
	for _, lr := range db3.Recovery().Logs {
		if lr.Damaged() {
			t.Errorf("SkipCorrupt reports damage that is not there: log %06d drops %v, moved to %q",
				lr.FileNum, lr.Drops, lr.MovedTo)
		}
	}
	reviewCheck(t, db3, 19, "SkipCorrupt reopen")
}

// TestReviewReadsRacingClose: a Get or NewIterator that races Close must
// return its answer or ErrClosed, not an internal error of the table cache.
func TestReviewReadsRacingClose(t *testing.T) {
	dir := t.TempDir()
	{
		db, err := Open(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 200 {
			if err := db.Put(reviewKey(i), reviewValue(i), NoSync); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
		db.Close()
	}
	var bad atomic.Value
	for round := 0; round < 30 && bad.Load() == nil; round++ {
		db, err := Open(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					var err error
					if g%2 == 0 {
						_, err = db.Get(reviewKey(i % 200))
					} else {
						it := db.NewIterator(nil)
						it.SeekGE(reviewKey(i % 200))
						err = it.Close()
					}
					if stderrors.Is(err, ErrClosed) {
						return
					}
					if err != nil {
						bad.CompareAndSwap(nil, err)
						return
					}
				}
			}()
		}
		time.Sleep(time.Millisecond)
		db.Close()
		wg.Wait()
	}
	if err := bad.Load(); err != nil {
		t.Errorf("read racing Close returned %q; want ErrClosed", err)
	}
}

// TestReviewConcurrentEverythingThenClose: writes, flushes, reads, iterators
// and snapshots racing Close (under -race) never panic, deadlock or return
// anything but success or ErrClosed.
func TestReviewConcurrentEverythingThenClose(t *testing.T) {
	for round := range 5 {
		db, err := Open(t.TempDir(), &Options{WriteBufferSize: 16 << 10})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make(chan error, 64)
		for g := range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					var err error
					k := reviewKey(g*100000 + i)
					switch g {
					case 0, 1:
						err = db.Put(k, reviewValue(i), Durability(i%2))
					case 2:
						var b Batch
						b.Put(k, reviewValue(i))
						b.Delete(reviewKey(i))
						err = db.Write(&b, NoSync)
					case 3:
						if i%20 == 0 {
							err = db.Flush()
						} else {
							_, err = db.Get(reviewKey(i % 500))
						}
					case 4:
						s := db.NewSnapshot()
						_, err = s.Get(reviewKey(i % 500))
						s.Close()
					case 5:
						it := db.NewIterator(nil)
						for ok, n := it.First(), 0; ok && n < 20; ok, n = it.Next(), n+1 {
						}
						err = it.Close()
					}
					if stderrors.Is(err, ErrClosed) {
						return
					}
					if err != nil && !stderrors.Is(err, ErrNotFound) {
						errs <- fmt.Errorf("round %d goroutine %d: %w", round, g, err)
						return
					}
				}
			}()
		}
		time.Sleep(20 * time.Millisecond)
		done := make(chan error)
		go func() { done <- db.Close() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Close: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Close hangs")
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	}
}

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

// TestReviewCrashDuringFirstOpen: a crash inside the very first Open, after
// MANIFEST-000001 is durable and before CURRENT names it, leaves a
// directory with a MANIFEST, no CURRENT, no table and no WAL: nothing was
// ever written to it. The next Open must create the database (LevelDB's
// NewDB simply starts again), not refuse it as corrupt forever.
func TestReviewCrashDuringFirstOpen(t *testing.T) {
	fsys := vfs.NewMem()
	var crashed *vfs.MemFS
	h := &hookFS{MemFS: fsys, typ: filename.Manifest}
	h.after = func() { crashed = fsys.CrashClone() }
	db, err := reviewOpen(t, h, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	if crashed == nil {
		t.Fatal("hook did not fire")
	}
	names, _ := crashed.List(reviewDir)
	db2, err := reviewOpen(t, crashed, nil)
	if err != nil {
		t.Fatalf("Open after a crash inside the first Open (files %v): %v", names, err)
	}
	defer db2.Close()
	if err := db2.Put([]byte("k"), []byte("v"), Sync); err != nil {
		t.Fatal(err)
	}
}

// TestReviewIteratorAfterClose: an iterator opened before Close and used
// after it must either keep returning the data it pins or stop with
// ErrClosed; an internal "tablecache: closed" is neither. (With level 0
// read through level iterators, tables open lazily, after Close.)
func TestReviewIteratorAfterClose(t *testing.T) {
	db, err := Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for f := range 4 { // four tables with disjoint key ranges
		for i := f * 50; i < (f+1)*50; i++ {
			db.Put(reviewKey(i), reviewValue(i), NoSync)
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	it := db.NewIterator(nil)
	if !it.First() {
		t.Fatal(it.Err())
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	n := 1
	for it.Next() {
		n++
	}
	err = it.Close()
	if err != nil && !stderrors.Is(err, ErrClosed) {
		t.Errorf("iterator used after DB.Close: %d keys, then %q; want all 200 keys or ErrClosed", n, err)
	} else if err == nil && n != 200 {
		t.Errorf("iterator used after DB.Close: %d keys and no error", n)
	}
}
