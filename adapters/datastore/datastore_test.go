package datastore_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	ds "github.com/ipfs/go-datastore"
	dsq "github.com/ipfs/go-datastore/query"
	"github.com/shale-db/shale"
	"github.com/shale-db/shale/adapters/datastore"
	"github.com/shale-db/shale/vfs"
)

// value returns a value of n bytes that snappy does not shrink much.
func value(i, n int) []byte {
	v := make([]byte, n)
	x := uint32(i)*2654435761 + 1
	for j := range v {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		v[j] = byte(x)
	}
	return v
}

// putMany puts n keys /k/00000... with 100-byte values and flushes them
// to a table.
func putMany(t *testing.T, d *datastore.Datastore, n int) {
	t.Helper()
	b, err := d.Batch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := b.Put(context.Background(), ds.NewKey(fmt.Sprintf("/k/%05d", i)), value(i, 100)); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := d.DB().Flush(); err != nil {
		t.Fatal(err)
	}
}

func TestReopen(t *testing.T) {
	dir := t.TempDir()
	d, err := datastore.New(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	mustPut(t, d, "/a", "1")
	mustPut(t, d, "/b", "2")
	if err := d.Delete(context.Background(), ds.NewKey("/b")); err != nil {
		t.Fatal(err)
	}
	if err := d.Sync(context.Background(), ds.NewKey("/")); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d, err = datastore.New(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if got := mustGet(t, d, "/a"); string(got) != "1" {
		t.Fatalf("/a = %q", got)
	}
	mustBeAbsent(t, d, "/b")
}

// TestSyncInvisible: what Sync writes is no key anyone reads.
func TestSyncInvisible(t *testing.T) {
	ctx := context.Background()
	d := newStore(t, nil)
	for range 3 {
		if err := d.Sync(ctx, ds.NewKey("/x")); err != nil {
			t.Fatal(err)
		}
	}
	if es := queryAll(t, d, dsq.Query{}); len(es) != 0 {
		t.Fatalf("after Sync a query returns %+v", es)
	}
	if err := d.Check(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestDiskUsage(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	d, err := datastore.New(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	before, err := d.DiskUsage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	putMany(t, d, 5000)
	after, err := d.DiskUsage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after < before+5000*100/2 {
		t.Fatalf("disk usage %d before 500 KB of values, %d after", before, after)
	}
	// It is the bytes of the directory's files. The flush's background
	// work (the retired log cut and deleted) may change them between two
	// looks: compare when DiskUsage reads the same before and after the
	// walk.
	walk := func() uint64 {
		var sum uint64
		_ = filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
			if err == nil && e.Type().IsRegular() {
				if info, err := e.Info(); err == nil {
					sum += uint64(info.Size())
				}
			}
			return nil
		})
		return sum
	}
	for attempt := 0; ; attempt++ {
		sum := walk()
		again, err := d.DiskUsage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if again == after && sum == after {
			break
		}
		if again == after || attempt == 100 {
			t.Fatalf("DiskUsage %d, the files add up to %d", after, sum)
		}
		after = again // the files changed meanwhile: look again
		time.Sleep(10 * time.Millisecond)
	}
	if n, err := ds.DiskUsage(ctx, d); err != nil || n != after {
		t.Fatalf("ds.DiskUsage = %d, %v", n, err)
	}
}

func TestCheckScrub(t *testing.T) {
	ctx := context.Background()
	d := newStore(t, nil)
	putMany(t, d, 3000)
	mustPut(t, d, "/in/the/memtable", "x")
	if err := d.Check(ctx); err != nil {
		t.Fatal(err)
	}
	if err := d.Scrub(ctx); err != nil {
		t.Fatal(err)
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if err := d.Check(canceled); !errors.Is(err, context.Canceled) {
		t.Fatalf("check with a canceled context: %v", err)
	}
}

// TestCheckDamage: a flipped byte in a table's data block fails Check and
// Scrub with an error matching shale.ErrCorruption.
func TestCheckDamage(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	d, err := datastore.New(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	putMany(t, d, 3000)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	tables, _ := filepath.Glob(filepath.Join(dir, "*.ldb"))
	if len(tables) == 0 {
		t.Fatal("no table written")
	}
	f, err := os.OpenFile(tables[0], os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, 100); err != nil { // inside the first data block
		t.Fatal(err)
	}
	b[0] ^= 0x55
	if _, err := f.WriteAt(b, 100); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()

	d, err = datastore.New(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Check(ctx); !errors.Is(err, shale.ErrCorruption) {
		t.Fatalf("check of a damaged table: %v, want shale.ErrCorruption", err)
	}
	if err := d.Scrub(ctx); !errors.Is(err, shale.ErrCorruption) {
		t.Fatalf("scrub of a damaged table: %v, want shale.ErrCorruption", err)
	}
}

// TestCheckDamageWhileOpen: damage that reaches the files of an open
// datastore after its blocks were read is found, in a table (whose blocks
// sit in the block cache) and in the log taking writes: Check reads the
// files, not the caches.
func TestCheckDamageWhileOpen(t *testing.T) {
	ctx := context.Background()
	for _, kind := range []string{"ldb", "log"} {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			d, err := datastore.New(dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			putMany(t, d, 3000)
			for i := range 100 { // in the log only
				if err := d.Put(ctx, ds.NewKey(fmt.Sprintf("/w/%05d", i)), value(i, 100)); err != nil {
					t.Fatal(err)
				}
			}
			if err := d.Check(ctx); err != nil { // reads every block into the cache
				t.Fatal(err)
			}
			files, _ := filepath.Glob(filepath.Join(dir, "*."+kind))
			if len(files) == 0 {
				t.Fatalf("no .%s file", kind)
			}
			f, err := os.OpenFile(files[len(files)-1], os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			b := make([]byte, 1)
			if _, err := f.ReadAt(b, 100); err != nil {
				t.Fatal(err)
			}
			b[0] ^= 0x55
			if _, err := f.WriteAt(b, 100); err != nil {
				t.Fatal(err)
			}
			_ = f.Close()
			err = d.Check(ctx)
			var ve *shale.VerifyError
			if !errors.Is(err, shale.ErrCorruption) || !errors.As(err, &ve) || ve.Damage[0].File != filepath.Base(files[len(files)-1]) {
				t.Fatalf("check after damage to %s: %v", filepath.Base(files[len(files)-1]), err)
			}
		})
	}
}

func TestClosed(t *testing.T) {
	ctx := context.Background()
	d, err := datastore.New(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	k := ds.NewKey("/a")
	for name, err := range map[string]error{
		"close":  d.Close(),
		"put":    d.Put(ctx, k, nil),
		"delete": d.Delete(ctx, k),
		"sync":   d.Sync(ctx, k),
		"check":  d.Check(ctx),
	} {
		if !errors.Is(err, shale.ErrClosed) {
			t.Errorf("%s after close: %v, want shale.ErrClosed", name, err)
		}
	}
	if _, err := d.Get(ctx, k); !errors.Is(err, shale.ErrClosed) {
		t.Errorf("get after close: %v", err)
	}
	if _, err := d.Has(ctx, k); !errors.Is(err, shale.ErrClosed) {
		t.Errorf("has after close: %v", err)
	}
	b, err := d.Batch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_ = b.Put(ctx, k, nil)
	if err := b.Commit(ctx); !errors.Is(err, shale.ErrClosed) {
		t.Errorf("batch commit after close: %v", err)
	}
}

func TestReadOnly(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	d, err := datastore.New(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	mustPut(t, d, "/a", "1")
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d, err = datastore.New(dir, &shale.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if got := mustGet(t, d, "/a"); string(got) != "1" {
		t.Fatalf("/a = %q", got)
	}
	if err := d.Put(ctx, ds.NewKey("/b"), nil); !errors.Is(err, shale.ErrReadOnly) {
		t.Fatalf("put on a read-only datastore: %v", err)
	}
	if err := d.Sync(ctx, ds.NewKey("/")); err != nil {
		t.Fatalf("sync on a read-only datastore: %v", err)
	}
	if err := d.Check(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestBatchCommitted(t *testing.T) {
	ctx := context.Background()
	d := newStore(t, nil)
	b, err := d.Batch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mustPut(t, b, "/a", "1")
	if err := b.Delete(ctx, ds.NewKey("/a")); err != nil {
		t.Fatal(err)
	}
	mustPut(t, b, "/a", "2") // the last write of a key wins
	if err := b.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, d, "/a"); string(got) != "2" {
		t.Fatalf("/a = %q", got)
	}
	for name, err := range map[string]error{
		"put":    b.Put(ctx, ds.NewKey("/b"), nil),
		"delete": b.Delete(ctx, ds.NewKey("/b")),
		"commit": b.Commit(ctx),
	} {
		if !errors.Is(err, datastore.ErrBatchCommitted) {
			t.Errorf("%s after commit: %v, want ErrBatchCommitted", name, err)
		}
	}
}

func TestNewError(t *testing.T) {
	f := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := datastore.New(f, nil); err == nil {
		t.Fatal("New on a regular file succeeded")
	}
	if _, err := datastore.New(t.TempDir(), &shale.Options{ErrorIfNotExists: true}); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("New with ErrorIfNotExists on an empty directory: %v", err)
	}
}

// TestInMemory: New("") is a database in memory of its own, as in
// go-ds-leveldb.
func TestInMemory(t *testing.T) {
	ctx := context.Background()
	a, err := datastore.New("", nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := datastore.New("", nil)
	if err != nil {
		t.Fatal(err)
	}
	mustPut(t, a, "/x", "in a")
	mustBeAbsent(t, b, "/x")
	if got := queryKeys(t, a, dsq.Query{}); !equalStrings(got, []string{"/x"}) {
		t.Fatalf("query: %q", got)
	}
	if n, err := a.DiskUsage(ctx); err != nil || n == 0 {
		t.Fatalf("DiskUsage of a store in memory holding a write: %d, %v", n, err)
	}
	for _, d := range []*datastore.Datastore{a, b} {
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestMemFS: with Options.FS the database lives in that file system, and
// DiskUsage counts its files there.
func TestMemFS(t *testing.T) {
	ctx := context.Background()
	mem := vfs.NewMem()
	d, err := datastore.New("/db", &shale.Options{FS: mem})
	if err != nil {
		t.Fatal(err)
	}
	putMany(t, d, 2000)
	n, err := d.DiskUsage(ctx)
	if err != nil || n < 2000*100/2 {
		t.Fatalf("DiskUsage = %d, %v", n, err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d, err = datastore.New("/db", &shale.Options{FS: mem})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if n := len(queryKeys(t, d, dsq.Query{Prefix: "/k"})); n != 2000 {
		t.Fatalf("reopened: %d keys", n)
	}
}
