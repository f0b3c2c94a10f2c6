package sstable

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/shale-db/shale/internal/cache"
	"github.com/shale-db/shale/internal/ikey"
)

// Benchmarks of this package alone; interop/sstable_bench_test.go runs the
// same shapes against goleveldb's table package for ratios.

func benchEntries(n int) ([]kv, int64) {
	var out []kv
	var raw int64
	for i := 0; i < n; i++ {
		val := bytes.Repeat([]byte{byte(i), byte(i >> 8), 'x', 'y'}, 25)
		k := ikey.Make([]byte(fmt.Sprintf("key%012d", i)), uint64(i+1), ikey.KindSet)
		out = append(out, kv{k, val})
		raw += int64(len(k) + len(val))
	}
	return out, raw
}

func BenchmarkWrite(b *testing.B) {
	entries, raw := benchEntries(50_000)
	var buf bytes.Buffer
	b.SetBytes(raw)
	for i := 0; i < b.N; i++ {
		buf.Reset()
		w := NewWriter(&buf, WriterOptions{})
		for _, e := range entries {
			if err := w.Add(e.key, e.val); err != nil {
				b.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGet(b *testing.B) {
	const n = 50_000
	entries, _ := benchEntries(n)
	tbl := writeTable(b, entries, WriterOptions{})
	for _, c := range []*cache.Cache{nil, cache.New(32 << 20)} {
		r := openTable(b, tbl, ReaderOptions{FileNum: 1, Cache: c})
		b.Run(fmt.Sprintf("cache=%v", c != nil), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				u := ikey.UserKey(entries[(i*7919)%n].key)
				if _, _, found, err := r.Get(u, ikey.MaxSeq, nil); !found || err != nil {
					b.Fatal(found, err)
				}
			}
		})
	}
}

// BenchmarkGetCached is Get from a table whose blocks are all in the block
// cache but, at about 100 MB decoded, mostly not in the processor's caches:
// a database whose working set fits its block cache. It measures how a Get
// waits for memory inside a block (see blockIter.touchAhead).
func BenchmarkGetCached(b *testing.B) {
	const n = 800_000
	entries, _ := benchEntries(n)
	r := openTable(b, writeTable(b, entries, WriterOptions{}), ReaderOptions{FileNum: 1, Cache: cache.New(512 << 20)})
	get := func(i int) {
		u := ikey.UserKey(entries[i].key)
		if _, _, found, err := r.Get(u, ikey.MaxSeq, nil); !found || err != nil {
			b.Fatal(found, err)
		}
	}
	for i := range n {
		get(i)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		get((i * 104729) % n)
	}
}

func BenchmarkScan(b *testing.B) {
	entries, raw := benchEntries(50_000)
	r := openTable(b, writeTable(b, entries, WriterOptions{}), ReaderOptions{})
	b.SetBytes(raw)
	for i := 0; i < b.N; i++ {
		it := r.NewIter()
		for ok := it.First(); ok; ok = it.Next() {
		}
		if err := it.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkScanBackward is BenchmarkScan from the last entry to the first,
// for the default restart interval and for one restart point a block.
func BenchmarkScanBackward(b *testing.B) {
	entries, raw := benchEntries(50_000)
	for _, ri := range []int{DefaultRestartInterval, 128} {
		b.Run(fmt.Sprintf("restart=%d", ri), func(b *testing.B) {
			r := openTable(b, writeTable(b, entries, WriterOptions{RestartInterval: ri}), ReaderOptions{})
			b.SetBytes(raw)
			for i := 0; i < b.N; i++ {
				it := r.NewIter()
				for ok := it.Last(); ok; ok = it.Prev() {
				}
				if err := it.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
