package sstable

import (
	"bytes"
	"math/rand"
	"testing"

	"github.com/shale-db/shale/internal/ikey"
)

// TestIndexTableGet: Get through the index table answers exactly as Get
// through the index block's iterator, for present, absent and older keys,
// and the table lists every index entry.
func TestIndexTableGet(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	entries := randomEntries(rng, 5000, 300)
	table := writeTable(t, entries, WriterOptions{})
	r := openTable(t, table, ReaderOptions{})
	ib := r.loadedIndex(t)
	if ib.tab == nil {
		t.Fatal("no index table for a table shale wrote")
	}
	var idx blockIter
	r.indexIter(&idx, ib)
	n := 0
	for ok := idx.First(); ok; ok = idx.Next() {
		e := ib.tab[n]
		if !bytes.Equal(indexKey(ib.data, e), idx.key) || !bytes.Equal(indexHandle(ib.data, e), idx.val) {
			t.Fatalf("index entry %d differs from the block's", n)
		}
		if h, _ := decodeHandle(idx.val); e.h != h {
			t.Fatalf("index entry %d: handle %+v, the block's %+v", n, e.h, h)
		}
		if p0, p1 := ikey.Prefixes(ikey.UserKey(idx.key)); e.p0 != p0 || e.p1 != p1 {
			t.Fatalf("index entry %d: prefixes %x %x, want %x %x", n, e.p0, e.p1, p0, p1)
		}
		n++
	}
	if n != len(ib.tab) {
		t.Fatalf("index table of %d entries for %d in the block", len(ib.tab), n)
	}
	plain := openTable(t, table, ReaderOptions{})
	pib := plain.loadedIndex(t)
	pib.tab = nil
	pib.noTab.Store(true)
	for _, p := range probeKeys(entries) {
		u, seq := ikey.UserKey(p), ikey.Seq(p)
		v1, k1, f1, e1 := r.Get(u, seq, nil)
		v2, k2, f2, e2 := plain.Get(u, seq, nil)
		if !bytes.Equal(v1, v2) || k1 != k2 || f1 != f2 || (e1 == nil) != (e2 == nil) {
			t.Fatalf("Get(%s): through the table %q %v %v %v, through the block %q %v %v %v",
				ikey.String(p), v1, k1, f1, e1, v2, k2, f2, e2)
		}
	}
}

// TestIndexTableFallsBack: an index block whose entries share prefixes
// (restart interval above 1, as other writers may choose) gets no table,
// and Get goes through the block iterator.
func TestIndexTableFallsBack(t *testing.T) {
	var ents []kv
	for i := range 100 {
		ents = append(ents, kv{ikey.Make([]byte{'k', byte(i / 10), byte(i)}, 1, ikey.KindSet), []byte{byte(i), 1}})
	}
	if tab := buildIndexTable(buildBlock(ents, 16), "", 0, nil); tab != nil {
		t.Fatalf("index table of %d entries for a block with shared prefixes", len(tab))
	}
	if tab := buildIndexTable(buildBlock(ents, 1), "", 0, nil); len(tab) != len(ents) {
		t.Fatalf("index table of %d entries for %d restart points", len(tab), len(ents))
	}
}
