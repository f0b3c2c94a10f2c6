package vfs_test

import (
	"bytes"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/shale-db/shale/internal/vfs"
	"github.com/shale-db/shale/wal"
)

// TestAppenderWritesLog: a wal.Writer over an Appender (a FragmentWriter)
// writes, across several reserved runs, exactly the log a Writer over a
// plain buffer writes, and the file, read while still preallocated (and
// zeroed ahead after a Sync), holds every record and nothing a reader
// calls damage. Large records and small ones mix; one variant ends with a
// large one.
func TestAppenderWritesLog(t *testing.T) {
	for _, endLarge := range []bool{false, true} {
		for seed := uint64(1); seed <= 3; seed++ {
			testAppenderWritesLog(t, seed, endLarge)
		}
	}
}

func testAppenderWritesLog(t *testing.T, seed uint64, endLarge bool) {
	name := filepath.Join(t.TempDir(), "000001.log")
	f, err := vfs.OS().Create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a, err := vfs.AppendTo(f)
	if err != nil {
		t.Fatal(err)
	}
	if a == nil {
		t.Skip("no Appender on this platform")
	}
	var _ wal.FragmentWriter = a
	var plain bytes.Buffer
	pw, mw := wal.NewWriter(&plain), wal.NewWriter(a)
	rng := rand.New(rand.NewPCG(seed, 2))
	var recs [][]byte
	for plain.Len() < 3<<20 || (endLarge && len(recs[len(recs)-1]) < 40_000) { // three reserved runs
		n := rng.IntN(300)
		if rng.IntN(20) == 0 || (endLarge && plain.Len() >= 3<<20) {
			n = rng.IntN(100_000)
		}
		r := make([]byte, n)
		for i := range r {
			r[i] = byte(rng.Uint32())
		}
		recs = append(recs, r)
		if err := pw.WriteRecord(r); err != nil {
			t.Fatal(err)
		}
		if err := mw.WriteRecord(r); err != nil {
			t.Fatal(err)
		}
		if err := pw.Flush(); err != nil {
			t.Fatal(err)
		}
		if rng.IntN(2000) == 0 {
			if err := mw.Flush(); err != nil {
				t.Fatal(err)
			}
			if err := a.Sync(); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Before Finish: the file holds the log and runs on in zeros, which
	// a reader skips.
	live, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if len(live) < plain.Len() || !bytes.Equal(live[:plain.Len()], plain.Bytes()) || len(bytes.Trim(live[plain.Len():], "\x00")) != 0 {
		t.Fatalf("appended log of %d bytes; want the plain log's %d bytes and only zeros after", len(live), plain.Len())
	}
	var drops []wal.Drop
	r := wal.NewReader(bytes.NewReader(live), wal.Strict(), wal.OnDrop(func(d wal.Drop) { drops = append(drops, d) }))
	for i := 0; ; i++ {
		rec, err := r.Next()
		if err == io.EOF {
			if i != len(recs) {
				t.Fatalf("read %d records, wrote %d", i, len(recs))
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(rec, recs[i]) {
			t.Fatalf("record %d differs", i)
		}
	}
	if len(drops) != 0 {
		t.Fatalf("drops %v reading a whole log", drops)
	}
	if err := a.Finish(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, plain.Bytes()) {
		t.Fatalf("after Finish the file is %d bytes, the plain log %d", len(got), plain.Len())
	}
}
