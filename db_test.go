package shale_test

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/shale-db/shale"
	"github.com/shale-db/shale/sstable"
)

// openDB opens a database in a new temporary directory and closes it when
// the test ends.
func openDB(t testing.TB, opts *shale.Options) (*shale.DB, string) {
	t.Helper()
	dir := t.TempDir()
	return reopen(t, dir, opts), dir
}

// reopen opens the database in dir and closes it when the test ends, unless
// the test closed it first.
func reopen(t testing.TB, dir string, opts *shale.Options) *shale.DB {
	t.Helper()
	db, err := shale.Open(dir, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func mustPut(t testing.TB, db *shale.DB, k, v string) {
	t.Helper()
	if err := db.Put([]byte(k), []byte(v), shale.NoSync); err != nil {
		t.Fatalf("Put(%q): %v", k, err)
	}
}

// wantGet checks that key has value want, or is absent if want is nil.
func wantGet(t testing.TB, db interface{ Get([]byte) ([]byte, error) }, key string, want []byte) {
	t.Helper()
	got, err := db.Get([]byte(key))
	switch {
	case want == nil && !errors.Is(err, shale.ErrNotFound):
		t.Fatalf("Get(%q) = %.40q, %v; want ErrNotFound", key, got, err)
	case want != nil && err != nil:
		t.Fatalf("Get(%q): %v; want %.40q", key, err, want)
	case want != nil && !bytes.Equal(got, want):
		t.Fatalf("Get(%q) = %.40q; want %.40q", key, got, want)
	}
}

func TestPutGetDeleteOverwrite(t *testing.T) {
	db, _ := openDB(t, nil)
	wantGet(t, db, "a", nil)
	mustPut(t, db, "a", "1")
	mustPut(t, db, "b", "2")
	wantGet(t, db, "a", []byte("1"))
	mustPut(t, db, "a", "3")
	wantGet(t, db, "a", []byte("3"))
	if err := db.Delete([]byte("a"), shale.Sync); err != nil {
		t.Fatal(err)
	}
	wantGet(t, db, "a", nil)
	wantGet(t, db, "b", []byte("2"))
	if err := db.Delete([]byte("never-written"), shale.NoSync); err != nil {
		t.Fatalf("Delete of an absent key: %v", err)
	}
}

func TestEmptyKeyAndValue(t *testing.T) {
	db, dir := openDB(t, nil)
	mustPut(t, db, "", "empty key")
	mustPut(t, db, "k", "")
	wantGet(t, db, "", []byte("empty key"))
	wantGet(t, db, "k", []byte{})
	db.Close()
	db = reopen(t, dir, nil)
	wantGet(t, db, "", []byte("empty key"))
	wantGet(t, db, "k", []byte{})
}

func TestLargeValues(t *testing.T) {
	db, dir := openDB(t, nil)
	r := rand.New(rand.NewPCG(1, 2))
	vals := map[string][]byte{}
	for i, n := range []int{1 << 20, 3<<20 + 17, 32 << 10, 7} {
		v := make([]byte, n)
		for j := range v {
			v[j] = byte(r.Uint32())
		}
		k := fmt.Sprintf("big%d", i)
		vals[k] = v
		if err := db.Put([]byte(k), v, shale.NoSync); err != nil {
			t.Fatal(err)
		}
	}
	check := func(db *shale.DB) {
		for k, v := range vals {
			wantGet(t, db, k, v)
		}
	}
	check(db)
	db.Close()
	db = reopen(t, dir, nil) // from the WAL (and the table recovery writes)
	check(db)
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	db.Close()
	check(reopen(t, dir, nil))
}

func TestCallerMayReuseBuffers(t *testing.T) {
	db, _ := openDB(t, nil)
	k, v := []byte("key"), []byte("value")
	if err := db.Put(k, v, shale.NoSync); err != nil {
		t.Fatal(err)
	}
	var b shale.Batch
	bk, bv := []byte("bkey"), []byte("bval")
	b.Put(bk, bv)
	copy(k, "xxx")
	copy(v, "yyyyy")
	copy(bk, "zzzz")
	copy(bv, "wwww")
	if err := db.Write(&b, shale.NoSync); err != nil {
		t.Fatal(err)
	}
	wantGet(t, db, "key", []byte("value"))
	wantGet(t, db, "bkey", []byte("bval"))
	got, _ := db.Get([]byte("key"))
	got[0] = 'X' // the caller owns what Get returns
	wantGet(t, db, "key", []byte("value"))
}

func TestBatch(t *testing.T) {
	var b shale.Batch
	if b.Len() != 0 {
		t.Fatalf("zero Batch has Len %d", b.Len())
	}
	b.Put([]byte("a"), []byte("1"))
	b.Put([]byte("b"), []byte("2"))
	b.Delete([]byte("a"))
	if b.Len() != 3 {
		t.Fatalf("Len = %d, want 3", b.Len())
	}
	db, _ := openDB(t, nil)
	mustPut(t, db, "c", "old")
	b.Delete([]byte("c"))
	if err := db.Write(&b, shale.Sync); err != nil {
		t.Fatal(err)
	}
	wantGet(t, db, "a", nil) // the later delete in the batch wins
	wantGet(t, db, "b", []byte("2"))
	wantGet(t, db, "c", nil)
	b.Reset()
	if b.Len() != 0 {
		t.Fatalf("Len after Reset = %d", b.Len())
	}
	b.Put([]byte("d"), []byte("4"))
	if err := db.Write(&b, shale.NoSync); err != nil {
		t.Fatal(err)
	}
	wantGet(t, db, "d", []byte("4"))
	wantGet(t, db, "b", []byte("2"))
	if err := db.Write(new(shale.Batch), shale.NoSync); err != nil {
		t.Fatalf("empty batch: %v", err)
	}
	if err := db.Write(&b, shale.Durability(7)); err == nil {
		t.Fatal("Write with an invalid durability succeeded")
	}
}

func TestReopenKeepsEverything(t *testing.T) {
	opts := &shale.Options{WriteBufferSize: 64 << 10}
	db, dir := openDB(t, opts)
	want := map[string]string{}
	for i := range 5000 {
		k, v := fmt.Sprintf("key%05d", i*7919%5000), strings.Repeat(fmt.Sprint(i), 20)
		mustPut(t, db, k, v)
		want[k] = v
		if i%3 == 0 {
			k := fmt.Sprintf("key%05d", i*31%5000)
			if err := db.Delete([]byte(k), shale.NoSync); err != nil {
				t.Fatal(err)
			}
			delete(want, k)
		}
	}
	if m := db.Metrics(); m.Flushes < 2 {
		t.Fatalf("a 64 KiB write buffer over ~1 MB of writes flushed %d times; want flushes", m.Flushes)
	}
	for round := range 3 {
		for i := range 5000 {
			k := fmt.Sprintf("key%05d", i)
			if v, ok := want[k]; ok {
				wantGet(t, db, k, []byte(v))
			} else {
				wantGet(t, db, k, nil)
			}
		}
		db.Close()
		db = reopen(t, dir, opts)
		_ = round
	}
	if tables, _ := filepath.Glob(filepath.Join(dir, "*.ldb")); len(tables) == 0 {
		t.Fatal("no table on disk after ~1 MB of writes with a 64 KiB write buffer")
	}
}

func TestClosed(t *testing.T) {
	db, _ := openDB(t, nil)
	mustPut(t, db, "a", "1")
	snap := db.NewSnapshot()
	it := db.NewIterator(nil)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"Put":    db.Put([]byte("a"), []byte("2"), shale.NoSync),
		"Delete": db.Delete([]byte("a"), shale.NoSync),
		"Write":  db.Write(new(shale.Batch), shale.NoSync),
		"Flush":  db.Flush(),
		"Close":  db.Close(),
	} {
		if !errors.Is(err, shale.ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
	if _, err := db.Get([]byte("a")); !errors.Is(err, shale.ErrClosed) {
		t.Errorf("Get after Close: %v", err)
	}
	if _, err := snap.Get([]byte("a")); !errors.Is(err, shale.ErrClosed) {
		t.Errorf("Snapshot.Get after Close: %v", err)
	}
	if it2 := db.NewIterator(nil); it2.First() || !errors.Is(it2.Err(), shale.ErrClosed) {
		t.Errorf("NewIterator after Close: Err = %v", it2.Err())
	}
	// An iterator open across Close still reads the memtable it holds.
	if !it.First() || string(it.Key()) != "a" || string(it.Value()) != "1" || it.Next() {
		t.Errorf("iterator open across Close: %q=%q, err %v; want a=1 alone", it.Key(), it.Value(), it.Err())
	}
	it.Close()
	it.Close()
}

// An iterator reads the memtables it was opened over for as long as it is
// open, though they are flushed meanwhile and later memtables reuse their
// memory (a memtable's bytes go back to a pool at its last reference).
func TestIteratorKeepsFlushedMemtables(t *testing.T) {
	db, _ := openDB(t, &shale.Options{WriteBufferSize: 64 << 10})
	value := func(i, round int) string { return fmt.Sprintf("%05d-round%d-%s", i, round, strings.Repeat("x", 80)) }
	const n = 2000 // about four memtables of 64 KiB
	for i := range n {
		mustPut(t, db, fmt.Sprintf("key%05d", i), value(i, 0))
	}
	it := db.NewIterator(nil)
	defer it.Close()
	for round := 1; round <= 3; round++ {
		for i := range n {
			mustPut(t, db, fmt.Sprintf("key%05d", i), value(i, round))
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	i := 0
	for ok := it.First(); ok; ok = it.Next() {
		if k, v := string(it.Key()), string(it.Value()); k != fmt.Sprintf("key%05d", i) || v != value(i, 0) {
			t.Fatalf("entry %d: %s=%.20q..., want key%05d=%.20q...", i, k, v, i, value(i, 0))
		}
		i++
	}
	if err := it.Err(); err != nil || i != n {
		t.Fatalf("iterated %d entries, err %v; want %d", i, err, n)
	}
	wantGet(t, db, "key00007", []byte(value(7, 3)))
}

// An iterator keeps its bounds as they were when it was made: the caller
// may reuse the slices at once. An empty UpperBound is a bound, not none:
// no key is below it; an empty LowerBound admits every key. Both hold for
// a new iterator stack (the pools emptied by two collections) and for one
// reused from an iterator closed before.
func TestIteratorBounds(t *testing.T) {
	db, _ := openDB(t, nil)
	for _, k := range []string{"", "a", "b", "c"} {
		mustPut(t, db, k, "v"+k)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	mustPut(t, db, "d", "vd") // in the memtable, beside the table
	scan := func(it *shale.Iterator) string {
		t.Helper()
		var fwd, bwd []string
		for ok := it.First(); ok; ok = it.Next() {
			fwd = append(fwd, fmt.Sprintf("%q", it.Key()))
		}
		for ok := it.Last(); ok; ok = it.Prev() {
			bwd = append([]string{fmt.Sprintf("%q", it.Key())}, bwd...)
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
		if f, b := strings.Join(fwd, " "), strings.Join(bwd, " "); f != b {
			t.Fatalf("forward %s, backward %s", f, b)
		}
		if ok := it.SeekGE(nil); ok != (len(fwd) > 0) {
			t.Fatalf("SeekGE(\"\") = %v with %d keys in bounds", ok, len(fwd))
		}
		return strings.Join(fwd, " ")
	}
	for round := range 2 {
		if round == 0 {
			runtime.GC() // a pooled object survives one collection
			runtime.GC()
		}
		its := make([]*shale.Iterator, 4) // more than one stack at once
		for i := range its {
			its[i] = db.NewIterator(&shale.IterOptions{UpperBound: []byte{}})
		}
		for i, it := range its {
			if got := scan(it); got != "" {
				t.Fatalf("round %d, iterator %d, UpperBound empty: %s; want nothing", round, i, got)
			}
			it.Close()
		}
		it := db.NewIterator(&shale.IterOptions{LowerBound: []byte{}})
		if got, want := scan(it), `"" "a" "b" "c" "d"`; got != want {
			t.Fatalf("round %d, LowerBound empty: %s; want %s", round, got, want)
		}
		it.Close()
		lo, hi := []byte("b"), []byte("d")
		it = db.NewIterator(&shale.IterOptions{LowerBound: lo, UpperBound: hi})
		lo[0], hi[0] = 'a', 'z' // the caller reuses its slices
		if got, want := scan(it), `"b" "c"`; got != want {
			t.Fatalf("round %d, bounds changed after NewIterator: %s; want %s", round, got, want)
		}
		it.Close()
	}
}

func TestSecondOpenIsLocked(t *testing.T) {
	db, dir := openDB(t, nil)
	_, err := shale.Open(dir, nil)
	if !errors.Is(err, shale.ErrLocked) {
		t.Fatalf("second Open: %v, want ErrLocked", err)
	}
	if !strings.Contains(err.Error(), dir) {
		t.Errorf("error %q does not name the directory", err)
	}
	if _, err := shale.Open(dir, &shale.Options{ReadOnly: true}); !errors.Is(err, shale.ErrLocked) {
		t.Fatalf("read-only Open beside a writer: %v, want ErrLocked", err)
	}
	db.Close()
	db2 := reopen(t, dir, nil)
	db2.Close()
}

func TestReadOnly(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nothing-here")
	if _, err := shale.Open(missing, &shale.Options{ReadOnly: true}); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("read-only Open of a missing directory: %v", err)
	}
	if _, err := os.Stat(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("read-only Open created the directory")
	}
	db, dir := openDB(t, nil)
	mustPut(t, db, "a", "1")
	db.Close() // leaves "a" in the WAL only
	before := dirListing(t, dir)

	ro1 := reopen(t, dir, &shale.Options{ReadOnly: true})
	ro2 := reopen(t, dir, &shale.Options{ReadOnly: true}) // shared lock
	wantGet(t, ro1, "a", []byte("1"))
	wantGet(t, ro2, "a", []byte("1"))
	if err := ro1.Put([]byte("b"), []byte("2"), shale.Sync); !errors.Is(err, shale.ErrReadOnly) {
		t.Fatalf("Put on a read-only DB: %v", err)
	}
	if err := ro1.Flush(); !errors.Is(err, shale.ErrReadOnly) {
		t.Fatalf("Flush on a read-only DB: %v", err)
	}
	if _, err := shale.Open(dir, nil); !errors.Is(err, shale.ErrLocked) {
		t.Fatalf("writable Open beside read-only ones: %v, want ErrLocked", err)
	}
	ro1.Close()
	ro2.Close()
	if after := dirListing(t, dir); after != before {
		t.Fatalf("read-only opens changed the directory:\nbefore %s\nafter  %s", before, after)
	}
}

// dirListing returns the names, sizes and modification times of dir's
// files, to show that nothing changed.
func dirListing(t testing.TB, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range ents {
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s:%d:%d ", e.Name(), info.Size(), info.ModTime().UnixNano())
	}
	return b.String()
}

func TestInvalidOptions(t *testing.T) {
	dir := t.TempDir()
	for _, o := range []*shale.Options{
		{WriteBufferSize: -1},
		{Recovery: shale.RecoveryMode(9)},
		{Compression: shale.Compression(5)},
		{CacheSize: -5},
		// A filter this large overflowed its size: the first flush
		// panicked in the background and killed the process.
		{BloomBitsPerKey: 1 << 61},
		{BloomBitsPerKey: sstable.MaxBloomBitsPerKey + 1},
		{MaxImmutableMemtables: 3},
		{MaxImmutableMemtables: -1},
		{BlockRestartInterval: -1},
	} {
		if _, err := shale.Open(dir, o); err == nil {
			t.Errorf("Open with %+v succeeded", *o)
		}
	}
	// The most is allowed, and its filters work.
	db, err := shale.Open(dir, &shale.Options{BloomBitsPerKey: sstable.MaxBloomBitsPerKey})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Put([]byte("k"), []byte("v"), shale.NoSync); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if v, err := db.Get([]byte("k")); err != nil || string(v) != "v" {
		t.Fatalf("Get = %q, %v", v, err)
	}
	if _, err := db.Get([]byte("absent")); !errors.Is(err, shale.ErrNotFound) {
		t.Fatalf("Get(absent) = %v", err)
	}
}

// TestBlockRestartInterval: the option reaches the tables. With a restart
// point at every key, no key shares its prefix with the one before, and
// the same writes take more bytes than at the default; both read back.
func TestBlockRestartInterval(t *testing.T) {
	size := func(ri int) int64 {
		t.Helper()
		dir := t.TempDir()
		db, err := shale.Open(dir, &shale.Options{BlockRestartInterval: ri, Compression: shale.NoCompression})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		for i := 0; i < 2000; i++ {
			if err := db.Put([]byte(fmt.Sprintf("restart-interval-key-%06d", i)), []byte("v"), shale.NoSync); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
		for _, i := range []int{0, 777, 1999} {
			if v, err := db.Get([]byte(fmt.Sprintf("restart-interval-key-%06d", i))); err != nil || string(v) != "v" {
				t.Fatalf("interval %d: Get(%d) = %q, %v", ri, i, v, err)
			}
		}
		tables, err := filepath.Glob(filepath.Join(dir, "*.ldb"))
		if err != nil || len(tables) == 0 {
			t.Fatalf("no tables: %v", err)
		}
		var n int64
		for _, f := range tables {
			info, err := os.Stat(f)
			if err != nil {
				t.Fatal(err)
			}
			n += info.Size()
		}
		return n
	}
	every, def := size(1), size(0)
	if every < def+2000*15 {
		t.Fatalf("tables take %d bytes with a restart point at every key, %d at the default: want 15 bytes a key more (each key whole, and its restart point)", every, def)
	}
}

// TestTablesWithoutFilters: a negative BloomBitsPerKey writes tables with
// no filter block, which read like any other, beside tables with filters.
func TestTablesWithoutFilters(t *testing.T) {
	dir := t.TempDir()
	write := func(opts *shale.Options, from, to int) (filtered, unfiltered int) {
		t.Helper()
		db, err := shale.Open(dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		for i := from; i < to; i++ {
			if err := db.Put([]byte(fmt.Sprintf("k%06d", i)), []byte(fmt.Sprintf("v%d", i)), shale.NoSync); err != nil {
				t.Fatal(err)
			}
		}
		// A flush, not a compaction: the tables written before stay as
		// they were written.
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < to+100; i++ {
			v, err := db.Get([]byte(fmt.Sprintf("k%06d", i)))
			switch {
			case i < to && (err != nil || string(v) != fmt.Sprintf("v%d", i)):
				t.Fatalf("Get(k%06d) = %q, %v", i, v, err)
			case i >= to && !errors.Is(err, shale.ErrNotFound):
				t.Fatalf("Get(k%06d) of an absent key = %q, %v", i, v, err)
			}
		}
		names, _ := filepath.Glob(filepath.Join(dir, "*.ldb"))
		for _, name := range names {
			f, err := os.Open(name)
			if err != nil {
				t.Fatal(err)
			}
			st, _ := f.Stat()
			r, err := sstable.Open(f, st.Size(), sstable.ReaderOptions{FileName: name})
			if err != nil {
				t.Fatal(err)
			}
			if r.HasFilter() {
				filtered++
			} else {
				unfiltered++
			}
			f.Close()
		}
		return filtered, unfiltered
	}
	if f, u := write(&shale.Options{BloomBitsPerKey: -1}, 0, 3000); f != 0 || u != 1 {
		t.Fatalf("with BloomBitsPerKey -1: %d tables with a filter and %d without; want 0 and 1", f, u)
	}
	if f, u := write(nil, 3000, 5000); f != 1 || u != 1 {
		t.Fatalf("reopened with the default: %d tables with a filter and %d without; want 1 and 1", f, u)
	}
}

func TestConcurrentWritersAndReaders(t *testing.T) {
	db, dir := openDB(t, &shale.Options{WriteBufferSize: 32 << 10})
	const writers, perWriter = 8, 400
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var b shale.Batch
			for i := range perWriter {
				k := fmt.Sprintf("w%d-%04d", w, i)
				if i%4 == 0 {
					b.Reset()
					b.Put([]byte(k), []byte(k))
					b.Put([]byte(k+"-twin"), []byte(k))
					if err := db.Write(&b, shale.Durability(i%2)); err != nil {
						t.Error(err)
						return
					}
					continue
				}
				if err := db.Put([]byte(k), []byte(k), shale.Durability(i%2)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	var readers sync.WaitGroup
	for r := range 4 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				k := fmt.Sprintf("w%d-%04d", (r+n)%writers, (n*4)%perWriter)
				v, err := db.Get([]byte(k))
				if err == nil {
					// A batch is visible whole or not at all.
					if tv, err := db.Get([]byte(k + "-twin")); err != nil || !bytes.Equal(v, tv) {
						t.Errorf("saw %s without its batch twin: %q, %v", k, tv, err)
						return
					}
				} else if !errors.Is(err, shale.ErrNotFound) {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	readers.Wait()
	check := func(db *shale.DB) {
		for w := range writers {
			for i := range perWriter {
				k := fmt.Sprintf("w%d-%04d", w, i)
				wantGet(t, db, k, []byte(k))
			}
		}
	}
	check(db)
	db.Close()
	check(reopen(t, dir, nil))
}

// Sequence numbers must keep growing across reopens, including one that
// has nothing to replay: a newer write must shadow a flushed older one, for
// Get and for iterators alike.
func TestSequenceGrowsAcrossReopen(t *testing.T) {
	db, dir := openDB(t, nil)
	check := func(want string) {
		t.Helper()
		wantGet(t, db, "k", []byte(want))
		got := scanPrefix(t, db, "k")
		if len(got) != 1 || got["k"] != want {
			t.Fatalf("scan sees %v, want k=%s", got, want)
		}
	}
	for round := range 4 {
		var v string
		for i := range 10 * (round + 1) {
			v = fmt.Sprint("v", round, ".", i)
			mustPut(t, db, "k", v)
		}
		if round%2 == 0 {
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		check(v)
		db.Close()
		db = reopen(t, dir, nil)
		check(v)
	}
}

// A read-only Open of a directory without LOCK (a copied database) creates
// nothing, not even LOCK.
func TestReadOnlyCreatesNoLock(t *testing.T) {
	db, dir := openDB(t, nil)
	mustPut(t, db, "a", "1")
	db.Close()
	if err := os.Remove(filepath.Join(dir, "LOCK")); err != nil {
		t.Fatal(err)
	}
	before := dirListing(t, dir)
	ro := reopen(t, dir, &shale.Options{ReadOnly: true})
	wantGet(t, ro, "a", []byte("1"))
	ro.Close()
	if after := dirListing(t, dir); after != before {
		t.Fatalf("read-only Open changed the directory:\nbefore %s\nafter  %s", before, after)
	}
}
