package shale

import (
	"bytes"
	"fmt"
	"testing"
)

// The block cache's memory lives outside the Go heap and is handed back by
// reference counts: every Get, iterator and compaction must release what it
// took. Once reads are done the only blocks out are the cached ones; an
// iterator left open across Close keeps reading intact blocks, and the
// memory is unmapped when it closes.
func TestBlockCacheReferencesReleased(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, &Options{WriteBufferSize: 64 << 10, CacheSize: 64 << 10, BlockSize: 1024})
	if err != nil {
		t.Fatal(err)
	}
	val := func(i int) []byte { return bytes.Repeat([]byte{byte('a' + i%26)}, 100+i%50) }
	const n = 5000
	for i := 0; i < n; i++ {
		if err := db.Put([]byte(fmt.Sprintf("k%06d", i)), val(i), NoSync); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i += 7 {
		v, err := db.Get([]byte(fmt.Sprintf("k%06d", i)))
		if err != nil || !bytes.Equal(v, val(i)) {
			t.Fatalf("Get k%06d = %.20q, %v", i, v, err)
		}
	}
	scan := func(it *Iterator, from, count int) {
		t.Helper()
		i := from
		for ok := it.SeekGE([]byte(fmt.Sprintf("k%06d", from))); ok && i < from+count; ok = it.Next() {
			if want := fmt.Sprintf("k%06d", i); string(it.Key()) != want || !bytes.Equal(it.Value(), val(i)) {
				t.Fatalf("at %s: %q = %.20q", want, it.Key(), it.Value())
			}
			i++
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
	}
	it := db.NewIterator(nil)
	scan(it, 0, 2000)
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	m := db.blockCache.Metrics()
	if m.Buffers != m.Count || m.Mapped == 0 {
		t.Fatalf("after reads: %d blocks out of the maps, %d cached, %d bytes mapped", m.Buffers, m.Count, m.Mapped)
	}

	open := db.NewIterator(nil)
	scan(open, 1000, 20) // a short read: its blocks come through the cache
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if m := db.blockCache.Metrics(); m.Mapped == 0 || m.Buffers == 0 {
		t.Fatalf("an open iterator's blocks were unmapped at Close: %+v", m)
	}
	scan(open, 3000, 2000) // reads on past Close, as documented
	if err := open.Close(); err != nil {
		t.Fatal(err)
	}
	if m := db.blockCache.Metrics(); m.Mapped != 0 || m.Buffers != 0 {
		t.Fatalf("after the last iterator closed: %+v", m)
	}
}
