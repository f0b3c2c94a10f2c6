package shale_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/shale-db/shale"
)

// TestWALCompression: with Options.WALCompression the WAL takes fewer
// bytes for compressible values, the directory is marked, a reopen
// replays the compressed WAL with every write, and a reopen without the
// option takes the mark off once the compressed WAL is flushed.
func TestWALCompression(t *testing.T) {
	val := bytes.Repeat([]byte("compressible "), 8)
	write := func(opts *shale.Options) (*shale.DB, string, int64) {
		db, dir := openDB(t, opts)
		for i := range 2000 {
			if err := db.Put(fmt.Appendf(nil, "k%05d", i), val, shale.NoSync); err != nil {
				t.Fatal(err)
			}
		}
		return db, dir, db.Metrics().WALSize
	}
	plain, _, plainSize := write(nil)
	plain.Close()
	db, dir, size := write(&shale.Options{WALCompression: true})
	t.Logf("WAL of 2,000 puts: %d bytes plain, %d compressed (%.2f)", plainSize, size, float64(size)/float64(plainSize))
	if size*2 > plainSize {
		t.Fatalf("compressed WAL of %d bytes, plain %d: not compressed", size, plainSize)
	}
	if !db.Metrics().Marked {
		t.Fatal("a directory with a compressed WAL is not marked")
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = reopen(t, dir, &shale.Options{WALCompression: true})
	if got := len(scanPrefix(t, db, "k")); got != 2000 {
		t.Fatalf("%d keys after replaying the compressed WAL", got)
	}
	db.Close()
	db = reopen(t, dir, nil)
	if got := len(scanPrefix(t, db, "k")); got != 2000 {
		t.Fatalf("%d keys after reopening without compression", got)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if db.Metrics().Marked {
		t.Fatal("still marked once the compressed WAL is flushed and no option asks for it")
	}
}
