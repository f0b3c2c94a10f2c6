//go:build leveldb_cgo

package leveldbc

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The binding's calls do what LevelDB's do: a missing database is an
// error without CreateIfMissing, reads see writes, batches apply in order,
// iterators walk both ways, CompactRange moves the memtable into a table,
// and everything survives a reopen.
func TestRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	if _, err := Open(dir, Options{}); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("Open of a missing database: %v, want LevelDB's does-not-exist error", err)
	}
	db, err := Open(dir, Options{CreateIfMissing: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		if err := db.Put(fmt.Appendf(nil, "k%03d", i), fmt.Appendf(nil, "v%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	var b Batch
	b.Put([]byte("k005"), []byte("batch"))
	b.Delete([]byte("k005")) // later in the batch: wins
	b.Put([]byte("k006"), nil)
	if err := db.Write(&b); err != nil {
		t.Fatal(err)
	}
	if err := db.Delete([]byte("k007")); err != nil {
		t.Fatal(err)
	}
	checkRoundTrip(t, db)
	if err := db.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	if files, ok := db.Property("leveldb.num-files-at-level0"); !ok || files != "0" {
		t.Fatalf("after CompactRange, level 0 holds %q tables (%v)", files, ok)
	}
	checkRoundTrip(t, db)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Close: %v", err)
	}
	if db, err = Open(dir, Options{}); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	checkRoundTrip(t, db)
	if _, ok := db.Property("leveldb.no-such-property"); ok {
		t.Fatal("an unknown property has a value")
	}
}

// checkRoundTrip checks what TestRoundTrip wrote: gets, both scans, a seek.
func checkRoundTrip(t *testing.T, db *DB) {
	t.Helper()
	for key, want := range map[string]string{"k004": "v4", "k006": "", "k099": "v99"} {
		if v, err := db.Get([]byte(key)); err != nil || string(v) != want {
			t.Fatalf("Get(%s) = %q, %v; want %q", key, v, err, want)
		}
	}
	for _, key := range []string{"k005", "k007", "k100", ""} {
		if v, err := db.Get([]byte(key)); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Get(%q) = %q, %v; want ErrNotFound", key, v, err)
		}
	}
	it := db.NewIterator()
	var keys []string
	for ok := it.First(); ok; ok = it.Next() {
		keys = append(keys, string(it.Key()))
	}
	if len(keys) != 98 || keys[5] != "k006" || keys[6] != "k008" {
		t.Fatalf("forward scan: %d keys, %q", len(keys), keys[:min(8, len(keys))])
	}
	n := 0
	for ok := it.Last(); ok; ok = it.Prev() {
		if string(it.Key()) != keys[len(keys)-1-n] {
			t.Fatalf("backward scan step %d: %q", n, it.Key())
		}
		n++
	}
	if !it.SeekGE([]byte("k0055")) || !bytes.Equal(it.Key(), []byte("k006")) || len(it.Value()) != 0 {
		t.Fatalf("SeekGE(k0055): %q=%q", it.Key(), it.Value())
	}
	if err := errors.Join(it.Close(), it.Close()); err != nil || n != len(keys) {
		t.Fatalf("backward scan gave %d keys; Close: %v", n, err)
	}
}

// While the background thread is held, a compaction that Open schedules
// waits: four level-0 tables (LevelDB's trigger) stay until release.
func TestHoldBackgroundWork(t *testing.T) {
	dir := t.TempDir()
	release := HoldBackgroundWork()
	t.Cleanup(release)
	var db *DB
	for i := range 5 {
		var err error
		// Each Open turns the previous WAL into a level-0 table, in Open
		// itself: no background work until there are four.
		if db, err = Open(dir, Options{CreateIfMissing: true}); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"a", "m", "z"} {
			if err := db.Put([]byte(k), fmt.Appendf(nil, "%d", i)); err != nil {
				t.Fatal(err)
			}
		}
		if i < 4 {
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
	level0 := func() string {
		n, _ := db.Property("leveldb.num-files-at-level0")
		return n
	}
	time.Sleep(100 * time.Millisecond)
	if n := level0(); n != "4" {
		t.Fatalf("held: level 0 holds %s tables, want 4", n)
	}
	release()
	for deadline := time.Now().Add(10 * time.Second); level0() != "0"; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("released: level 0 still holds %s tables", level0())
		}
	}
	if v, err := db.Get([]byte("m")); err != nil || string(v) != "4" {
		t.Fatalf("Get(m) = %q, %v", v, err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}
