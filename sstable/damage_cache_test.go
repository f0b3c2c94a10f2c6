package sstable

import (
	"bytes"
	"errors"
	"math/rand"
	"testing"

	"github.com/shale-db/shale/internal/cache"
	"github.com/shale-db/shale/internal/ikey"
)

// TestDamagedTablesThroughCache: tables with 1 to 4 flipped bits, read
// through a block cache (index, filter and data blocks in the cache's
// memory, the filter loaded at the first Get; the fuzz targets read
// without a cache), with and without checksums, give only ErrCorrupt or
// ErrUnsupported, no panic, and no more entries than bytes.
func TestDamagedTablesThroughCache(t *testing.T) {
	seeds := seedTables(t)
	r := rand.New(rand.NewSource(14))
	c := cache.New(1 << 20)
	defer c.Close()
	for iter := 0; iter < 3000; iter++ {
		b := bytes.Clone(seeds[r.Intn(len(seeds))])
		for n := r.Intn(4); n >= 0 && len(b) > 0; n-- {
			b[r.Intn(len(b))] ^= byte(1 << r.Intn(8))
		}
		for _, verify := range []bool{true, false} {
			rd, err := open(bytes.NewReader(b), int64(len(b)), ReaderOptions{FileName: "m.ldb", FileNum: uint64(iter*2 + 1), Cache: c}, verify)
			if err != nil {
				if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnsupported) {
					t.Fatal(err)
				}
				continue
			}
			it := rd.NewIter()
			n := 0
			for ok := it.First(); ok && n <= len(b); ok = it.Next() {
				_, _, _, gerr := rd.Get(ikey.UserKey(it.Key()), ikey.Seq(it.Key()), nil)
				if gerr != nil && !errors.Is(gerr, ErrCorrupt) && !errors.Is(gerr, ErrUnsupported) {
					t.Fatal(gerr)
				}
				n++
			}
			if err := it.Close(); err != nil && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnsupported) {
				t.Fatal(err)
			}
			if n > len(b) {
				t.Fatalf("%d entries from %d bytes", n, len(b))
			}
			rd.Close()
		}
	}
}
