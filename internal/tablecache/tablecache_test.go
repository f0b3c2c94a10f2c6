package tablecache

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shale-db/shale/internal/cache"
	"github.com/shale-db/shale/internal/filename"
	"github.com/shale-db/shale/internal/ikey"
	"github.com/shale-db/shale/internal/vfs"
	"github.com/shale-db/shale/sstable"
)

// countingFS counts the files open through it.
type countingFS struct {
	vfs.FS
	opens atomic.Int64 // Open calls that succeeded
	open  atomic.Int64 // files open now
}

type countingFile struct {
	vfs.File
	fs     *countingFS
	closed atomic.Bool
}

func (f *countingFS) Open(name string) (vfs.File, error) {
	file, err := f.FS.Open(name)
	if err != nil {
		return nil, err
	}
	f.opens.Add(1)
	f.open.Add(1)
	return &countingFile{File: file, fs: f}, nil
}

func (f *countingFile) Close() error {
	if f.closed.Swap(true) {
		return errors.New("closed twice")
	}
	f.fs.open.Add(-1)
	return f.File.Close()
}

const dir = "db"

func value(num uint64, i int) []byte { return []byte(fmt.Sprintf("table %d value %d", num, i)) }

// writeTable writes table num with 200 entries and returns its size.
func writeTable(t testing.TB, fs vfs.FS, name string, num uint64) int64 {
	t.Helper()
	f, err := fs.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	w := sstable.NewWriter(f, sstable.WriterOptions{BlockSize: 512})
	for i := 0; i < 200; i++ {
		if err := w.Add(ikey.Make([]byte(fmt.Sprintf("k%04d", i)), 1, ikey.KindSet), value(num, i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return int64(w.Meta().Size)
}

// setup writes tables 1..n and returns the file system and their sizes.
func setup(t testing.TB, n int) (*countingFS, map[uint64]int64) {
	t.Helper()
	fs := &countingFS{FS: vfs.NewMem()}
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	sizes := map[uint64]int64{}
	for num := uint64(1); num <= uint64(n); num++ {
		sizes[num] = writeTable(t, fs, filename.Make(dir, filename.Table, num), num)
	}
	return fs, sizes
}

func checkGet(t testing.TB, r *sstable.Reader, num uint64, i int) {
	t.Helper()
	v, _, found, err := r.Get([]byte(fmt.Sprintf("k%04d", i)), 1, nil)
	if err != nil || !found || !bytes.Equal(v, value(num, i)) {
		t.Fatalf("table %d key %d: %q %v %v", num, i, v, found, err)
	}
}

func TestGetSharesOpenTable(t *testing.T) {
	fs, sizes := setup(t, 1)
	c := New(fs, dir, nil, 10)
	r1, rel1, err := c.Get(1, sizes[1])
	if err != nil {
		t.Fatal(err)
	}
	r2, rel2, err := c.Get(1, sizes[1])
	if err != nil {
		t.Fatal(err)
	}
	if r1 != r2 || fs.opens.Load() != 1 {
		t.Fatalf("second Get opened the file again (%d opens)", fs.opens.Load())
	}
	checkGet(t, r1, 1, 7)
	rel1()
	rel1() // a second call does nothing
	rel2()
	if fs.open.Load() != 1 {
		t.Fatal("released table closed while the cache still holds it")
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if fs.open.Load() != 0 {
		t.Fatalf("%d files open after Close", fs.open.Load())
	}
	if _, _, err := c.Get(1, sizes[1]); !errors.Is(err, ErrClosed) {
		t.Fatalf("Get after Close: %v", err)
	}
}

func TestBoundAndInUse(t *testing.T) {
	fs, sizes := setup(t, 3)
	c := New(fs, dir, nil, 2)
	r1, rel1, err := c.Get(1, sizes[1])
	if err != nil {
		t.Fatal(err)
	}
	for _, num := range []uint64{2, 3} {
		_, rel, err := c.Get(num, sizes[num])
		if err != nil {
			t.Fatal(err)
		}
		rel()
	}
	// Table 1 left the cache when table 3 came in: its file is closed
	// although it is in use, and its reads open the file for each read.
	if fs.open.Load() != 2 {
		t.Fatalf("%d files open, want 2 (the bound; table 1 in use but evicted)", fs.open.Load())
	}
	checkGet(t, r1, 1, 150)
	if fs.opens.Load() != 4 || fs.open.Load() != 2 {
		t.Fatalf("after a read of the evicted table: opens %d, open %d; want 4 and 2", fs.opens.Load(), fs.open.Load())
	}
	rel1()
	if fs.open.Load() != 2 {
		t.Fatalf("%d files open after release, want 2", fs.open.Load())
	}
	// Table 1 is opened again on demand.
	_, rel, err := c.Get(1, sizes[1])
	if err != nil {
		t.Fatal(err)
	}
	rel()
	if fs.opens.Load() != 5 || fs.open.Load() != 2 {
		t.Fatalf("opens %d, open %d; want 5 and 2", fs.opens.Load(), fs.open.Load())
	}
	c.Close()
}

// An iterator over more tables than the bound (a scan of a level 0 that
// an older version left long) never needs more files than the bound.
func TestIteratorsOverMoreTablesThanTheBound(t *testing.T) {
	const n, bound = 40, 8
	fs, sizes := setup(t, n)
	c := New(fs, dir, nil, bound)
	defer c.Close()
	var iters []interface {
		First() bool
		Next() bool
		Close() error
	}
	for num := uint64(1); num <= n; num++ {
		it, err := c.NewIter(num, sizes[num])
		if err != nil {
			t.Fatal(err)
		}
		iters = append(iters, it)
	}
	most := fs.open.Load()
	for _, it := range iters {
		if !it.First() {
			t.Fatal("empty table")
		}
	}
	for range 199 { // every block of every table, all iterators open
		for _, it := range iters {
			if !it.Next() {
				t.Fatal("table ended early")
			}
			most = max(most, fs.open.Load())
		}
	}
	if most > bound {
		t.Fatalf("%d files open at once for %d iterators, over the bound of %d", most, n, bound)
	}
	for _, it := range iters {
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestSSTNameAndErrors(t *testing.T) {
	fs, sizes := setup(t, 1)
	sstSize := writeTable(t, fs, dir+"/000002.sst", 2)
	c := New(fs, dir, nil, 10)
	defer c.Close()
	r, rel, err := c.Get(2, sstSize)
	if err != nil {
		t.Fatalf(".sst table: %v", err)
	}
	checkGet(t, r, 2, 3)
	rel()
	if _, _, err := c.Get(3, 1000); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing table: %v", err)
	}
	// The failure is not remembered: once the file exists, Get works.
	size3 := writeTable(t, fs, filename.Make(dir, filename.Table, 3), 3)
	if _, rel, err := c.Get(3, size3); err != nil {
		t.Fatalf("after creating the table: %v", err)
	} else {
		rel()
	}
	// A wrong size reads a footer that is not one.
	if _, _, err := c.Get(1, sizes[1]-1); !errors.Is(err, sstable.ErrCorrupt) {
		t.Fatalf("wrong size: %v", err)
	}
	if fs.open.Load() != 3-1 {
		t.Fatalf("%d files open; the failed open must close its file", fs.open.Load())
	}
}

func TestEvict(t *testing.T) {
	fs, sizes := setup(t, 2)
	bc := cache.New(1 << 20)
	c := New(fs, dir, bc, 10)
	defer c.Close()
	scan := func(num uint64) {
		it, err := c.NewIter(num, sizes[num])
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for ok := it.First(); ok; ok = it.Next() {
			n++
		}
		if n != 200 {
			t.Fatalf("table %d: %d entries", num, n)
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
	}
	scan(1)
	scan(2)
	before := bc.Metrics().Count
	// Evict table 1 while an iterator uses it: it stays readable.
	it, err := c.NewIter(1, sizes[1])
	if err != nil {
		t.Fatal(err)
	}
	c.Evict(1)
	if got := bc.Metrics().Count; got >= before || got == 0 {
		t.Fatalf("block cache holds %d blocks after evicting one of two tables (had %d)", got, before)
	}
	if fs.open.Load() != 2 {
		t.Fatal("evicted table closed while an iterator uses it")
	}
	if !it.Last() || string(it.Value()) != string(value(1, 199)) {
		t.Fatalf("iterator over evicted table: %v", it.Err())
	}
	it.Close()
	if fs.open.Load() != 1 {
		t.Fatalf("%d files open after the last user of the evicted table left", fs.open.Load())
	}
	after := bc.Metrics().Count
	scan(2)
	if bc.Metrics().Count != after {
		t.Fatal("blocks of the evicted table are still cached")
	}
}

func TestConcurrent(t *testing.T) {
	fs, sizes := setup(t, 8)
	c := New(fs, dir, cache.New(64<<10), 3)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 150; i++ {
				num := uint64((g+i)%8 + 1)
				switch i % 5 {
				case 0:
					c.Evict(num)
				case 1:
					it, err := c.NewIter(num, sizes[num])
					if err != nil {
						t.Error(err)
						return
					}
					if !it.SeekGE(ikey.SeekKey([]byte("k0100"), 1)) || string(it.Value()) != string(value(num, 100)) {
						t.Errorf("table %d: seek: %v", num, it.Err())
					}
					it.Close()
				default:
					r, rel, err := c.Get(num, sizes[num])
					if err != nil {
						t.Error(err)
						return
					}
					k := (i * 7) % 200
					v, _, found, err := r.Get([]byte(fmt.Sprintf("k%04d", k)), 1, nil)
					if err != nil || !found || !bytes.Equal(v, value(num, k)) {
						t.Errorf("table %d key %d: %q %v %v", num, k, v, found, err)
					}
					rel()
				}
			}
		}(g)
	}
	wg.Wait()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if fs.open.Load() != 0 {
		t.Fatalf("%d files open after Close", fs.open.Load())
	}
}

// TestOpenTableWithoutLock checks Acquire's lock-free way: a Get of an
// open table takes no lock (it is served while another goroutine holds
// mu), and the LRU gives a table used that way a second chance where a
// move to the front used to keep it.
func TestOpenTableWithoutLock(t *testing.T) {
	fs, sizes := setup(t, 3)
	c := New(fs, dir, nil, 2)
	get := func(num uint64) {
		t.Helper()
		r, rel, err := c.Get(num, sizes[num])
		if err != nil {
			t.Fatal(err)
		}
		checkGet(t, r, num, 7)
		rel()
	}
	get(1)
	get(2) // the LRU: 2, then 1
	c.mu.Lock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		get(1) // open: served without mu, and marked used
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		c.mu.Unlock()
		<-done
		t.Fatal("a Get of an open table waited for the cache's lock")
	}
	c.mu.Unlock()
	get(3) // over the bound: 1 had its second chance, 2 goes
	if _, ok := c.opened.Load(uint64(2)); ok {
		t.Fatal("table 2 is still open: the LRU passed over it")
	}
	if _, ok := c.opened.Load(uint64(1)); !ok {
		t.Fatal("table 1, used since the LRU last passed it, was evicted")
	}
	if fs.opens.Load() != 3 || fs.open.Load() != 2 {
		t.Fatalf("opens %d, open %d; want 3 and 2", fs.opens.Load(), fs.open.Load())
	}
	c.Evict(1)
	if _, ok := c.opened.Load(uint64(1)); ok {
		t.Fatal("an evicted table is still found without the lock")
	}
	get(1) // opened again
	if fs.opens.Load() != 4 {
		t.Fatalf("opens %d, want 4", fs.opens.Load())
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if fs.open.Load() != 0 {
		t.Fatalf("%d files open after Close", fs.open.Load())
	}
}
