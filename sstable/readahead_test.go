package sstable

import (
	"bytes"
	"errors"
	"math/rand"
	"testing"

	"github.com/shale-db/shale/internal/cache"
	"github.com/shale-db/shale/internal/ikey"
)

// TestScanReadsAhead: a full scan of a table of hundreds of blocks reads
// the file in a few large reads, not one per block, yields every entry, in
// both compressions; and once it has read enough in order it stops adding
// blocks to the cache, so that one scan does not flush the cache, decoding
// into buffers of its own that keep the last value intact one step on.
func TestScanReadsAhead(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	entries := randomEntries(rng, 20000, 200)
	for _, comp := range []Compression{DefaultCompression, NoCompression} {
		file := writeTable(t, entries, WriterOptions{Compression: comp})
		f := &countingReaderAt{r: bytes.NewReader(file)}
		c := cache.New(64 << 20)
		r, err := Open(f, int64(len(file)), ReaderOptions{FileNum: 1, Cache: c})
		if err != nil {
			t.Fatal(err)
		}
		blocks := 0
		var idx blockIter
		r.indexIter(&idx, r.loadedIndex(t))
		for ok := idx.First(); ok; ok = idx.Next() {
			blocks++
		}
		opened := f.n
		it := r.NewIter()
		i := 0
		var prevVal []byte // the last entry's value, not a copy
		for ok := it.First(); ok; ok = it.Next() {
			if !bytes.Equal(it.Key(), entries[i].key) || !bytes.Equal(it.Value(), entries[i].val) {
				t.Fatalf("entry %d: %s, want %s", i, ikey.String(it.Key()), ikey.String(entries[i].key))
			}
			// Blocks past the first 64 are decoded into two buffers in
			// turn: a value (which, unlike a key, lies in its block)
			// stays intact a step after.
			if i > 0 && !bytes.Equal(prevVal, entries[i-1].val) {
				t.Fatalf("entry %d's value changed under its slice once the iterator stepped past it", i-1)
			}
			prevVal = it.Value()
			i++
		}
		if out, _ := readaheadPool.Stats(); out != 1 {
			t.Fatalf("%d readahead buffers out during the scan, want 1", out)
		}
		if err := it.Close(); err != nil || i != len(entries) {
			t.Fatalf("scan gave %d of %d entries, %v", i, len(entries), err)
		}
		if out, _ := readaheadPool.Stats(); out != 0 {
			t.Fatalf("%d readahead buffers out after Close", out)
		}
		reads := f.n - opened
		if blocks < 200 || reads > readaheadAfter+len(file)/readaheadSize+2 {
			t.Fatalf("compression %d: the scan of %d blocks (%d bytes) made %d reads", comp, blocks, len(file), reads)
		}
		if n := c.Metrics().Count; n > noFillAfter+1 || n == 0 {
			t.Fatalf("compression %d: the scan left %d of %d blocks in the cache, want the first %d or so", comp, n, blocks, noFillAfter)
		}
	}
}

// TestReadaheadDamage: a damaged block read through readahead is reported
// as that block, at its offset, as when it is read alone.
func TestReadaheadDamage(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	entries := randomEntries(rng, 20000, 200)
	file := writeTable(t, entries, WriterOptions{})
	r := openTable(t, file, ReaderOptions{})
	var handles []BlockHandle
	var idx blockIter
	r.indexIter(&idx, r.loadedIndex(t))
	for ok := idx.First(); ok; ok = idx.Next() {
		h, err := r.blockHandle(idx.val)
		if err != nil {
			t.Fatal(err)
		}
		handles = append(handles, h)
	}
	bad := handles[len(handles)/2]
	file = bytes.Clone(file)
	file[bad.Offset+bad.Length/2] ^= 0x40
	r = openTable(t, file, ReaderOptions{FileName: "000009.ldb"})
	it := r.NewIter()
	for ok := it.First(); ok; ok = it.Next() {
	}
	err := it.Close()
	var te *TableError
	if !errors.As(err, &te) || te.Offset != int64(bad.Offset) || te.File != "000009.ldb" || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("scan over a damaged block at %d: %v", bad.Offset, err)
	}
}
