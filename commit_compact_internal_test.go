package shale

// Second review: group commit (commit.go) and manual compaction (compact.go,
// compaction/). Tests run on vfs.MemFS through the unexported open.

import (
	"bytes"
	stderrors "errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shale-db/shale/internal/filename"
	"github.com/shale-db/shale/internal/manifest"
	"github.com/shale-db/shale/internal/vfs"
)

// r2Key and r2Val name the test's keys and values.
func r2Key(i int) []byte        { return []byte(fmt.Sprintf("k%05d", i)) }
func r2Val(i, round int) []byte { return []byte(fmt.Sprintf("v%05d-%06d", i, round)) }

// firstError keeps the first error set.
type firstError struct {
	mu  sync.Mutex
	err error
}

func (f *firstError) set(err error) {
	f.mu.Lock()
	if f.err == nil {
		f.err = err
	}
	f.mu.Unlock()
}

func (f *firstError) get() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// TestReview2GetRacingCompaction: a key that always has a value must never
// read as missing. Get loads visibleSeq and only then takes its read state;
// if an overwrite, its flush and a Compact land in between, the compaction
// (whose smallest snapshot is the newer visibleSeq) drops the version Get's
// older sequence number could see, and the newer one is invisible to it.
// NewIterator and NewSnapshot have the same gap.
func TestReview2GetRacingCompaction(t *testing.T) {
	const keys = 5
	fsys := vfs.NewMem()
	db := reviewMustOpen(t, fsys, &Options{WriteBufferSize: 64 << 10})
	for i := range keys {
		if err := db.Put(r2Key(i), r2Val(i, 0), NoSync); err != nil {
			t.Fatal(err)
		}
	}
	var stop atomic.Bool
	var bad firstError
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				k := (g + i) % keys
				switch g % 4 {
				case 0, 1:
					if _, err := db.Get(r2Key(k)); err != nil {
						bad.set(fmt.Errorf("Get(%s): %w", r2Key(k), err))
						return
					}
				case 2:
					s := db.NewSnapshot()
					_, err := s.Get(r2Key(k))
					s.Close()
					if err != nil {
						bad.set(fmt.Errorf("Snapshot.Get(%s): %w", r2Key(k), err))
						return
					}
				case 3:
					it := db.NewIterator(nil)
					n := 0
					for ok := it.First(); ok; ok = it.Next() {
						n++
					}
					if err := it.Close(); err != nil || n != keys {
						bad.set(fmt.Errorf("iterator saw %d of %d keys (%v)", n, keys, err))
						return
					}
				}
			}
		}()
	}
	deadline := time.Now().Add(2 * time.Second)
	for round := 1; time.Now().Before(deadline) && bad.get() == nil; round++ {
		for i := range keys {
			if err := db.Put(r2Key(i), r2Val(i, round), NoSync); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Compact(nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	wg.Wait()
	if err := bad.get(); err != nil {
		t.Fatalf("a key that always had a value read as missing while Compact ran: %v", err)
	}
}

// faultFS wraps a MemFS; fail, when set, is asked before each operation on
// a file (op "create", "write", "sync") of the given base name and fails it
// with errInjected when it returns true.
type faultFS struct {
	*vfs.MemFS
	mu   sync.Mutex
	fail func(op, name string) bool
}

var errInjected = stderrors.New("injected fault")

func (f *faultFS) setFail(fn func(op, name string) bool) {
	f.mu.Lock()
	f.fail = fn
	f.mu.Unlock()
}

func (f *faultFS) should(op, name string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fail != nil && f.fail(op, filepath.Base(name))
}

func (f *faultFS) Create(name string) (vfs.File, error) {
	if f.should("create", name) {
		return nil, errInjected
	}
	file, err := f.MemFS.Create(name)
	if err != nil {
		return nil, err
	}
	return &faultFile{File: file, fs: f, name: name}, nil
}

type faultFile struct {
	vfs.File
	fs   *faultFS
	name string
}

func (f *faultFile) Write(p []byte) (int, error) {
	if f.fs.should("write", f.name) {
		return 0, errInjected
	}
	return f.File.Write(p)
}

func (f *faultFile) Sync() error {
	if f.fs.should("sync", f.name) {
		return errInjected
	}
	return f.File.Sync()
}

func isType(name string, want filename.Type) bool {
	typ, _, ok := filename.Parse(name)
	return ok && typ == want
}

// TestReview2GroupCommitAtomicOrderedVisible: under group commit (Sync and
// NoSync writers, flush requests, memtable switches), a reader never sees
// part of a batch, never sees a writer's batches out of order, and sees a
// write as soon as Write has returned.
func TestReview2GroupCommitAtomicOrderedVisible(t *testing.T) {
	const writers, perWriter = 6, 300
	db := reviewMustOpen(t, vfs.NewMem(), &Options{WriteBufferSize: 16 << 10})
	var done atomic.Bool
	var wg, rwg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x, y := []byte(fmt.Sprintf("x%d", g)), []byte(fmt.Sprintf("y%d", g))
			pad := bytes.Repeat([]byte{'p'}, 200)
			for i := 1; i <= perWriter; i++ {
				var b Batch
				v := []byte(fmt.Sprintf("%06d", i))
				b.Put(x, v)
				b.Put([]byte(fmt.Sprintf("pad%d-%d", g, i%7)), pad)
				b.Put(y, v)
				if err := db.Write(&b, Durability((g+i)%2)); err != nil {
					errs <- err
					return
				}
				if got, err := db.Get(y); err != nil || string(got) < string(v) {
					errs <- fmt.Errorf("writer %d: Get(%s) after Write = %q, %v; want >= %s", g, y, got, err, v)
					return
				}
				if g == 0 && i%50 == 0 {
					if err := db.Flush(); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	for range 2 {
		rwg.Add(1)
		go func() {
			defer rwg.Done()
			last := make([]string, writers)
			for !done.Load() {
				s := db.NewSnapshot()
				for g := range writers {
					xv, xerr := s.Get([]byte(fmt.Sprintf("x%d", g)))
					yv, yerr := s.Get([]byte(fmt.Sprintf("y%d", g)))
					if (xerr == nil) != (yerr == nil) || string(xv) != string(yv) {
						errs <- fmt.Errorf("partial batch visible: x%d=%q (%v) y%d=%q (%v)", g, xv, xerr, g, yv, yerr)
					}
					if string(xv) < last[g] {
						errs <- fmt.Errorf("writer %d went back from %s to %s", g, last[g], xv)
					}
					last[g] = string(xv)
				}
				s.Close()
			}
		}()
	}
	wg.Wait()
	done.Store(true)
	rwg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got, want := db.visibleSeq.Load(), uint64(writers*perWriter*3); got != want {
		t.Fatalf("visibleSeq = %d after %d entries", got, want)
	}
}

// TestReview2SyncAckSurvivesPowerLoss: every Sync write acknowledged before
// a power loss is in the crash image, whichever group (or group extension)
// carried it.
func TestReview2SyncAckSurvivesPowerLoss(t *testing.T) {
	fsys := vfs.NewMem()
	db := reviewMustOpen(t, fsys, &Options{WriteBufferSize: 32 << 10})
	var mu sync.Mutex
	var acked [][]byte
	var wg sync.WaitGroup
	var stop atomic.Bool
	for g := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				k := []byte(fmt.Sprintf("g%d-%06d", g, i))
				d := Sync
				if g%3 == 2 {
					d = NoSync // NoSync writers share groups with Sync ones
				}
				if err := db.Put(k, k, d); err != nil {
					t.Error(err)
					return
				}
				if d == Sync {
					mu.Lock()
					acked = append(acked, k)
					mu.Unlock()
				}
			}
		}()
	}
	var images []*vfs.MemFS
	var want []int
	for range 5 {
		time.Sleep(20 * time.Millisecond)
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		images = append(images, fsys.CrashClone())
		want = append(want, n)
	}
	stop.Store(true)
	wg.Wait()
	for i, img := range images {
		db2, err := reviewOpen(t, img, nil)
		if err != nil {
			t.Fatalf("image %d: %v", i, err)
		}
		for _, k := range acked[:want[i]] {
			if _, err := db2.Get(k); err != nil {
				t.Errorf("image %d: acknowledged Sync write %s lost: %v", i, k, err)
				break
			}
		}
		db2.Close()
	}
}

// TestReview2FailedLogSyncFailsEveryWaiter: when the WAL sync of a group
// fails, no Sync writer is told it succeeded unless its write is durable,
// the failed writes stay invisible, and later writes are refused.
func TestReview2FailedLogSyncFailsEveryWaiter(t *testing.T) {
	fsys := &faultFS{MemFS: vfs.NewMem()}
	db := reviewMustOpen(t, fsys, nil)
	if err := db.Put([]byte("before"), []byte("1"), Sync); err != nil {
		t.Fatal(err)
	}
	var syncs atomic.Int32
	fsys.setFail(func(op, name string) bool {
		return op == "sync" && isType(name, filename.Log) && syncs.Add(1) > 3
	})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var okKeys, failedKeys [][]byte
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				k := []byte(fmt.Sprintf("g%d-%03d", g, i))
				err := db.Put(k, k, Sync)
				mu.Lock()
				if err == nil {
					okKeys = append(okKeys, k)
				} else {
					failedKeys = append(failedKeys, k)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(failedKeys) == 0 {
		t.Fatal("no write failed")
	}
	for _, k := range failedKeys {
		if _, err := db.Get(k); !stderrors.Is(err, ErrNotFound) {
			t.Errorf("write %s failed but is visible (%v)", k, err)
			break
		}
	}
	img := fsys.CrashClone()
	db2, err := reviewOpen(t, img, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	for _, k := range okKeys {
		if _, err := db2.Get(k); err != nil {
			t.Errorf("Sync write %s succeeded but did not survive: %v", k, err)
		}
	}
}

// r2Scan reads every entry of it into a map and closes it.
func r2Scan(t *testing.T, it *Iterator) map[string]string {
	t.Helper()
	m := map[string]string{}
	for ok := it.First(); ok; ok = it.Next() {
		m[string(it.Key())] = string(it.Value())
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	return m
}

func r2Equal(t *testing.T, got, want map[string]string, where string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d keys, want %d", where, len(got), len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("%s: %s = %q, want %q", where, k, got[k], v)
		}
	}
}

// r2CheckVersion checks the current version's invariants and returns it
// as a string for messages.
func r2CheckVersion(t *testing.T, db *DB) {
	t.Helper()
	v := db.vs.Current()
	defer v.Unref()
	if err := v.Check(); err != nil {
		t.Fatalf("version invariants broken: %v\n%s", err, v)
	}
}

// TestReview2CompactRacingWritesFlushesSnapshots: Compact on random ranges
// runs while one writer overwrites and deletes keys, with a write buffer
// small enough that flushes land new level-0 tables over the range during
// the compaction. Snapshots taken along the way, an iterator opened before,
// the live view and a reopened database all match the model.
func TestReview2CompactRacingWritesFlushesSnapshots(t *testing.T) {
	fsys := vfs.NewMem()
	opts := &Options{WriteBufferSize: 8 << 10}
	db := reviewMustOpen(t, fsys, opts)
	model := map[string]string{}
	type snap struct {
		s    *Snapshot
		want map[string]string
	}
	var snaps []snap
	var oldIter *Iterator
	var oldWant map[string]string
	stop := make(chan struct{})
	compactErr := make(chan error, 1)
	go func() {
		defer close(compactErr)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			a, b := (i*37)%400, (i*37)%400+60
			var start, end []byte
			if i%4 != 0 {
				start, end = r2Key(a), r2Key(b)
			}
			if err := db.Compact(start, end); err != nil {
				compactErr <- err
				return
			}
		}
	}()
	for i := range 6000 {
		k := (i * 7919) % 500
		if i%5 == 0 {
			if err := db.Delete(r2Key(k), NoSync); err != nil {
				t.Fatal(err)
			}
			delete(model, string(r2Key(k)))
		} else {
			if err := db.Put(r2Key(k), r2Val(k, i), NoSync); err != nil {
				t.Fatal(err)
			}
			model[string(r2Key(k))] = string(r2Val(k, i))
		}
		if i%700 == 0 {
			snaps = append(snaps, snap{db.NewSnapshot(), maps2Clone(model)})
		}
		if i == 1500 {
			oldIter, oldWant = db.NewIterator(nil), maps2Clone(model)
		}
	}
	close(stop)
	if err := <-compactErr; err != nil {
		t.Fatal(err)
	}
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	r2CheckVersion(t, db)
	r2Equal(t, r2Scan(t, oldIter), oldWant, "iterator opened mid-way")
	for i, s := range snaps {
		r2Equal(t, r2Scan(t, s.s.NewIterator(nil)), s.want, fmt.Sprintf("snapshot %d", i))
		for k, v := range s.want {
			if got, err := s.s.Get([]byte(k)); err != nil || string(got) != v {
				t.Fatalf("snapshot %d: Get(%s) = %q, %v; want %q", i, k, got, err, v)
			}
		}
		s.s.Close()
	}
	r2Equal(t, r2Scan(t, db.NewIterator(nil)), model, "live")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db2 := reviewMustOpen(t, fsys, opts)
	r2Equal(t, r2Scan(t, db2.NewIterator(nil)), model, "reopened")
	r2CheckVersion(t, db2)
}

func maps2Clone(m map[string]string) map[string]string {
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// r2Fill writes n keys with incompressible values of size bytes and
// flushes them, so that a full compaction writes several output tables.
func r2Fill(t *testing.T, db *DB, n, size int) map[string]string {
	t.Helper()
	model := map[string]string{}
	var x uint64 = 88172645463325252
	for i := range n {
		v := make([]byte, size)
		for j := range v {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			v[j] = byte(x)
		}
		if err := db.Put(r2Key(i), v, NoSync); err != nil {
			t.Fatal(err)
		}
		model[string(r2Key(i))] = string(v)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	return model
}

// r2TableFiles returns the numbers of the table files in reviewDir and of
// the live tables.
func r2TableFiles(t *testing.T, db *DB, fsys vfs.FS) (onDisk, live []uint64) {
	t.Helper()
	names, err := fsys.List(reviewDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if typ, num, ok := filename.Parse(n); ok && typ == filename.Table {
			onDisk = append(onDisk, num)
		}
	}
	st, err := db.Stats()
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range st.Tables {
		live = append(live, tb.FileNum)
	}
	return onDisk, live
}

// TestReview2FailedCompactionOutput: when creating, writing or syncing an
// output table fails (the first or a later one), Compact returns the error,
// leaves no table file behind and keeps every key readable; the error is
// sticky (writes fail with it, Close returns it), and a reopen recovers
// every key and compacts.
func TestReview2FailedCompactionOutput(t *testing.T) {
	for _, tc := range []struct {
		op string
		at int32 // fail the at-th operation op on a table file
	}{{"create", 1}, {"create", 2}, {"sync", 2}, {"write", 40}} {
		t.Run(fmt.Sprintf("%s%d", tc.op, tc.at), func(t *testing.T) {
			fsys := &faultFS{MemFS: vfs.NewMem()}
			db := reviewMustOpen(t, fsys, &Options{Compression: NoCompression})
			model := r2Fill(t, db, 2200, 1500) // ~3.3 MB: two outputs
			var n atomic.Int32
			fsys.setFail(func(op, name string) bool {
				return op == tc.op && isType(name, filename.Table) && n.Add(1) == tc.at
			})
			err := db.Compact(nil, nil)
			fsys.setFail(nil)
			if !stderrors.Is(err, errInjected) {
				t.Fatalf("Compact = %v, want the injected fault", err)
			}
			onDisk, live := r2TableFiles(t, db, fsys)
			if len(onDisk) != len(live) {
				t.Errorf("after a failed compaction: tables on disk %v, live %v", onDisk, live)
			}
			r2Equal(t, r2Scan(t, db.NewIterator(nil)), model, "after the failure")
			if err := db.Put([]byte("after"), []byte("x"), Sync); !stderrors.Is(err, errInjected) {
				t.Fatalf("Put after a failed compaction = %v, want the sticky injected fault", err)
			}
			if err := db.Close(); !stderrors.Is(err, errInjected) {
				t.Fatalf("Close after a failed compaction = %v, want the injected fault", err)
			}
			db = reviewMustOpen(t, fsys, &Options{Compression: NoCompression})
			r2Equal(t, r2Scan(t, db.NewIterator(nil)), model, "after reopening")
			if err := db.Put([]byte("after"), []byte("x"), Sync); err != nil {
				t.Fatalf("Put after reopening: %v", err)
			}
			if err := db.Compact(nil, nil); err != nil {
				t.Fatal(err)
			}
			model["after"] = "x"
			r2Equal(t, r2Scan(t, db.NewIterator(nil)), model, "after a second Compact")
			r2CheckVersion(t, db)
		})
	}
}

// TestReview2FailedCompactionManifest: when the MANIFEST write of the
// compaction's edit fails, Compact reports it, writes stop (whether the
// edit is on disk is unknown), the output tables are not deleted (they may
// be live), and a reopen finds every key and no stray table.
func TestReview2FailedCompactionManifest(t *testing.T) {
	fsys := &faultFS{MemFS: vfs.NewMem()}
	db := reviewMustOpen(t, fsys, &Options{Compression: NoCompression})
	model := r2Fill(t, db, 2000, 1500)
	fsys.setFail(func(op, name string) bool { return op == "write" && isType(name, filename.Manifest) })
	if err := db.Compact(nil, nil); !stderrors.Is(err, errInjected) {
		t.Fatalf("Compact = %v, want the injected fault", err)
	}
	if err := db.Put([]byte("after"), []byte("x"), NoSync); err == nil {
		t.Fatal("writes go on after a MANIFEST write failed")
	}
	r2Equal(t, r2Scan(t, db.NewIterator(nil)), model, "after the failure")
	db.Close()
	fsys.setFail(nil)
	for _, img := range []vfs.FS{fsys.CrashClone(), fsys} {
		db2, err := reviewOpen(t, img, nil)
		if err != nil {
			t.Fatal(err)
		}
		r2Equal(t, r2Scan(t, db2.NewIterator(nil)), model, "reopened")
		onDisk, live := r2TableFiles(t, db2, img)
		if len(onDisk) != len(live) {
			t.Errorf("after reopen: tables on disk %v, live %v", onDisk, live)
		}
		db2.Close()
	}
}

// TestReview2CompactRacingClose: Compact calls racing Close return nil or
// ErrClosed, Close does not hang, and the database reopens whole.
func TestReview2CompactRacingClose(t *testing.T) {
	fsys := vfs.NewMem()
	opts := &Options{WriteBufferSize: 8 << 10}
	for round := range 10 {
		db, err := reviewOpen(t, fsys, opts)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for g := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					var err error
					if g == 0 {
						err = db.Compact(nil, nil)
					} else {
						err = db.Put(r2Key(i%300), r2Val(i, round), NoSync)
					}
					if stderrors.Is(err, ErrClosed) {
						return
					}
					if err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		time.Sleep(time.Duration(round%4) * 3 * time.Millisecond)
		closed := make(chan error)
		go func() { closed <- db.Close() }()
		select {
		case err := <-closed:
			if err != nil {
				t.Fatalf("round %d: Close: %v", round, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Close hangs with Compact running")
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("round %d: %v", round, err)
		}
	}
	db := reviewMustOpen(t, fsys, opts)
	r2CheckVersion(t, db)
	if n := len(r2Scan(t, db.NewIterator(nil))); n == 0 {
		t.Fatal("database empty after the rounds")
	}
}

// r2MoveTable moves table num from level from to level to with an edit,
// as a database written by LevelDB could have it.
func r2MoveTable(t *testing.T, db *DB, num uint64, from, to int) {
	t.Helper()
	v := db.vs.Current()
	defer v.Unref()
	for _, f := range v.Levels[from] {
		if f.Num == num {
			e := &manifest.VersionEdit{}
			e.DeleteFile(from, num)
			e.AddFile(to, f)
			if err := db.vs.LogAndApply(e); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("table %06d not in level %d", num, from)
}

func r2Level(t *testing.T, db *DB, level int) []TableInfo {
	t.Helper()
	st, err := db.Stats()
	if err != nil {
		t.Fatal(err)
	}
	var out []TableInfo
	for _, tb := range st.Tables {
		if tb.Level == level {
			out = append(out, tb)
		}
	}
	return out
}

// TestReview2CompactIntoDeepLevel: a narrow range that meets a level-0
// table and a wide table in level 3 widens to the level-3 table's range,
// takes the level-1 tables inside it, writes into the last level, drops the
// shadowed versions and the deletion, and leaves tables outside alone.
func TestReview2CompactIntoDeepLevel(t *testing.T) {
	fsys := vfs.NewMem()
	db := reviewMustOpen(t, fsys, &Options{disableAutoCompactions: true}) // the levels are laid by hand
	put := func(i int, v string) {
		if err := db.Put(r2Key(i), []byte(v), NoSync); err != nil {
			t.Fatal(err)
		}
	}
	flushOne := func() uint64 {
		t.Helper()
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
		return r2Level(t, db, 0)[0].FileNum
	}
	for i := 0; i < 100; i++ {
		put(i, "deep")
	}
	r2MoveTable(t, db, flushOne(), 0, 3) // L3: k00000..k00099
	put(200, "far")
	put(250, "far")
	r2MoveTable(t, db, flushOne(), 0, 3) // L3: k00200..k00250
	put(10, "mid")
	put(20, "mid")
	r2MoveTable(t, db, flushOne(), 0, 1) // L1: k00010..k00020
	put(120, "outside")
	r2MoveTable(t, db, flushOne(), 0, 1) // L1: k00120, outside the range
	put(50, "top")
	if err := db.Delete(r2Key(60), NoSync); err != nil {
		t.Fatal(err)
	}
	flushOne() // L0: k00050..k00060
	if err := db.Compact(r2Key(55), r2Key(56)); err != nil {
		t.Fatal(err)
	}
	r2CheckVersion(t, db)
	if l0, l1 := r2Level(t, db, 0), r2Level(t, db, 1); len(l0) != 0 || len(l1) != 1 || string(l1[0].Smallest) != string(r2Key(120)) {
		t.Fatalf("after Compact: level 0 %v, level 1 %v; want level 0 empty and only k00120 in level 1", l0, l1)
	}
	l3, l6 := r2Level(t, db, 3), r2Level(t, db, NumLevels-1)
	if len(l3) != 1 || string(l3[0].Smallest) != string(r2Key(200)) {
		t.Fatalf("level 3 = %+v; want only the table of k00200..k00250, outside the range", l3)
	}
	if len(l6) != 1 || string(l6[0].Smallest) != string(r2Key(0)) || string(l6[0].Largest) != string(r2Key(99)) {
		t.Fatalf("last level = %+v; want one table of k00000..k00099", l6)
	}
	want := map[string]string{}
	for i := 0; i < 100; i++ {
		want[string(r2Key(i))] = "deep"
	}
	want[string(r2Key(10))], want[string(r2Key(20))], want[string(r2Key(50))] = "mid", "mid", "top"
	delete(want, string(r2Key(60)))
	want[string(r2Key(120))] = "outside"
	want[string(r2Key(200))], want[string(r2Key(250))] = "far", "far"
	r2Equal(t, r2Scan(t, db.NewIterator(nil)), want, "after Compact")
	for k, v := range want {
		if got, err := db.Get([]byte(k)); err != nil || string(got) != v {
			t.Fatalf("Get(%s) = %q, %v; want %q", k, got, err, v)
		}
	}
	if _, err := db.Get(r2Key(60)); !stderrors.Is(err, ErrNotFound) {
		t.Fatalf("deleted key: %v", err)
	}
}
