package sstable

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/shale-db/shale/internal/ikey"
)

// leveldbValue is the value generator of testdata/leveldb_gen.cc.
func leveldbValue(i int) []byte {
	n := 10 + i%200
	if i%3 == 0 {
		var v []byte
		for len(v) < n {
			v = append(v, "v"+strconv.Itoa(i)...)
		}
		return v[:n]
	}
	x := uint64(i) + 1
	v := make([]byte, n)
	for j := range v {
		x = x*6364136223846793005 + 1442695040888963407
		v[j] = byte(x >> 56)
	}
	return v
}

// TestReadLevelDBTable reads a table that LevelDB 1.23 wrote (snappy
// blocks, BuiltinBloomFilter2 filter, 1 KiB blocks): every live key with
// its newest value, the filter in use, deleted keys absent.
func TestReadLevelDBTable(t *testing.T) {
	b, err := os.ReadFile("testdata/leveldb-1.23.ldb")
	if err != nil {
		t.Fatal(err)
	}
	r := openTable(t, b, ReaderOptions{FileName: "leveldb-1.23.ldb"})
	if !r.HasFilter() {
		t.Fatal("LevelDB's BuiltinBloomFilter2 filter not used")
	}
	l, err := r.Layout()
	if err != nil {
		t.Fatal(err)
	}
	var snappyBlocks int
	for _, blk := range l.Blocks {
		if blk.Err != nil {
			t.Fatalf("%s block %s: %v", blk.Kind, blk.Handle, blk.Err)
		}
		if blk.Compression == int(blockTypeSnappy) {
			snappyBlocks++
		}
	}
	if snappyBlocks == 0 {
		t.Fatal("fixture has no snappy blocks")
	}
	it := r.NewIter()
	ok := it.First()
	for i := 0; i < 600; i++ {
		u := []byte(fmt.Sprintf("key%06d", i))
		v, kind, found, err := r.Get(u, ikey.MaxSeq, nil)
		if err != nil {
			t.Fatal(err)
		}
		if i%7 == 3 {
			if found && kind == ikey.KindSet {
				t.Fatalf("deleted key %s found", u)
			}
			for ok && bytes.Equal(ikey.UserKey(it.Key()), u) {
				ok = it.Next() // a tombstone LevelDB kept
			}
			continue
		}
		if !found || kind != ikey.KindSet || !bytes.Equal(v, leveldbValue(i)) {
			t.Fatalf("Get(%s) = %v %v %q", u, found, kind, v)
		}
		if !ok || !bytes.Equal(ikey.UserKey(it.Key()), u) || !bytes.Equal(it.Value(), leveldbValue(i)) {
			t.Fatalf("iterator at %s, want %s", ikey.String(it.Key()), u)
		}
		for ok && bytes.Equal(ikey.UserKey(it.Key()), u) {
			ok = it.Next() // skip older versions, if LevelDB kept any
		}
		if _, _, found, _ := r.Get(append(u, 'x'), ikey.MaxSeq, nil); found {
			t.Fatalf("absent key %sx found", u)
		}
	}
	if ok || it.Close() != nil {
		t.Fatalf("entries after the last key, or error %v", it.Err())
	}
}
