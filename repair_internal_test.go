package shale

import (
	"errors"
	"testing"

	"github.com/shale-db/shale/internal/filename"
	"github.com/shale-db/shale/internal/ikey"
	"github.com/shale-db/shale/internal/vfs"
	"github.com/shale-db/shale/sstable"
)

// writeRawTable writes table num in dir with the given entries (internal
// keys as "key#seq,KIND" strings, in order).
func writeRawTable(t *testing.T, fsys vfs.FS, dir string, num uint64, kvs ...string) {
	t.Helper()
	f, err := fsys.Create(filename.Make(dir, filename.Table, num))
	if err != nil {
		t.Fatal(err)
	}
	w := sstable.NewWriter(f, sstable.WriterOptions{BlockSize: 4096, BloomBitsPerKey: 10})
	for i := 0; i < len(kvs); i += 2 {
		if err := w.Add(ikey.ParseString(kvs[i]), []byte(kvs[i+1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestRepairOrdersBySequenceNotFileNumber: a compaction's output can carry
// a higher file number than a newer flush. Repair must take the newest
// entry by sequence number, whatever the file numbers say.
func TestRepairOrdersBySequenceNotFileNumber(t *testing.T) {
	fsys := vfs.NewMem()
	const dir = "/db"
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// Table 9 (the higher number) holds the older entries.
	writeRawTable(t, fsys, dir, 9, "a#2,PUT", "old-a", "d#3,PUT", "old-d", "k#5,PUT", "old-k")
	// Table 7 holds newer ones: a newer k, a deletion of d.
	writeRawTable(t, fsys, dir, 7, "b#6,PUT", "b", "d#8,DEL", "", "k#9,PUT", "new-k")
	o, _ := (*Options)(nil).withDefaults()
	rep, err := repair(dir, o, fsys)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Rewritten || rep.Lost() || rep.Keys != 3 {
		t.Fatalf("report: rewritten %v, lost %v, keys %d; want a loss-free merge of 3 keys\n%s",
			rep.Rewritten, rep.Lost(), rep.Keys, rep.String())
	}
	db, err := open(dir, o, fsys)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for k, want := range map[string]string{"a": "old-a", "b": "b", "k": "new-k"} {
		if v, err := db.Get([]byte(k)); err != nil || string(v) != want {
			t.Errorf("Get(%s) = %q, %v; want %q", k, v, err, want)
		}
	}
	if _, err := db.Get([]byte("d")); !errors.Is(err, ErrNotFound) {
		t.Errorf("d, deleted by a surviving deletion, came back: %v", err)
	}
	// A write after the repair gets a sequence number above every entry.
	if err := db.Put([]byte("k"), []byte("newest"), NoSync); err != nil {
		t.Fatal(err)
	}
	if v, _ := db.Get([]byte("k")); string(v) != "newest" {
		t.Errorf("a write after repair reads %q", v)
	}
}

// TestRepairUnreadableTable: a file that is not a table at all moves to
// lost/, whole, and is named in the report.
func TestRepairUnreadableTable(t *testing.T) {
	fsys := vfs.NewMem()
	const dir = "/db"
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeRawTable(t, fsys, dir, 3, "a#1,PUT", "a")
	f, err := fsys.Create(filename.Make(dir, filename.Table, 4))
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("not a table, and far too short to be one"))
	f.Close()
	o, _ := (*Options)(nil).withDefaults()
	rep, err := repair(dir, o, fsys)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Tables) != 2 || !rep.Tables[1].Unreadable || !rep.Lost() {
		t.Fatalf("report does not name the unreadable table:\n%s", rep.String())
	}
	if _, err := fsys.Stat(dir + "/lost/000004.ldb"); err != nil {
		t.Errorf("unreadable table not in lost/: %v", err)
	}
}

// TestRepairRefusesEmptyDir: a directory with nothing of a database is
// not turned into one.
func TestRepairRefusesEmptyDir(t *testing.T) {
	fsys := vfs.NewMem()
	if err := fsys.MkdirAll("/empty", 0o755); err != nil {
		t.Fatal(err)
	}
	o, _ := (*Options)(nil).withDefaults()
	if _, err := repair("/empty", o, fsys); err == nil {
		t.Fatal("Repair of an empty directory succeeded")
	}
	if _, err := fsys.Stat("/empty/CURRENT"); err == nil {
		t.Fatal("Repair of an empty directory wrote CURRENT")
	}
}
