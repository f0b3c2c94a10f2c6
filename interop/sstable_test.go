// Tests that tables written by shale's sstable package read through
// goleveldb's table reader, and tables written by goleveldb's table writer
// read through shale's, entry for entry, bloom filters included.
package interop

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/shale-db/shale/internal/ikey"
	"github.com/shale-db/shale/sstable"
	"github.com/syndtr/goleveldb/leveldb/comparer"
	"github.com/syndtr/goleveldb/leveldb/filter"
	"github.com/syndtr/goleveldb/leveldb/opt"
	"github.com/syndtr/goleveldb/leveldb/storage"
	"github.com/syndtr/goleveldb/leveldb/table"
)

// sstIKeyComparer orders internal keys for goleveldb's table package as
// goleveldb's (unexported) internal-key comparer does: user keys bytewise,
// then the trailer descending. Its separators shorten the user key with
// goleveldb's bytewise comparer, independently of shale's ikey.Separator.
type sstIKeyComparer struct{}

func (sstIKeyComparer) Compare(a, b []byte) int { return ikey.Compare(a, b) }
func (sstIKeyComparer) Name() string            { return "leveldb.BytewiseComparator" }

func (sstIKeyComparer) Separator(dst, a, b []byte) []byte {
	ua, ub := ikey.UserKey(a), ikey.UserKey(b)
	sep := comparer.DefaultComparer.Separator(nil, ua, ub)
	if sep == nil || len(sep) >= len(ua) || bytes.Compare(ua, sep) >= 0 {
		return nil
	}
	return ikey.Append(dst, sep, ikey.MaxSeq, ikey.KindSet)
}

func (sstIKeyComparer) Successor(dst, b []byte) []byte {
	ub := ikey.UserKey(b)
	succ := comparer.DefaultComparer.Successor(nil, ub)
	if succ == nil || len(succ) >= len(ub) || bytes.Compare(ub, succ) >= 0 {
		return nil
	}
	return ikey.Append(dst, succ, ikey.MaxSeq, ikey.KindSet)
}

// sstUserKeyFilter is goleveldb's bloom filter applied to user keys (as
// LevelDB's internal filter policy does), under a chosen name: goleveldb's
// own is "leveldb.BuiltinBloomFilter"; LevelDB's (and shale's) is
// "leveldb.BuiltinBloomFilter2", with the same bits.
type sstUserKeyFilter struct {
	name  string
	bloom filter.Filter
}

func newSSTFilter(name string) sstUserKeyFilter {
	return sstUserKeyFilter{name: name, bloom: filter.NewBloomFilter(10)}
}

func (f sstUserKeyFilter) Name() string { return f.name }
func (f sstUserKeyFilter) Contains(flt, key []byte) bool {
	return f.bloom.Contains(flt, ikey.UserKey(key))
}
func (f sstUserKeyFilter) NewGenerator() filter.FilterGenerator {
	return sstUserKeyGen{f.bloom.NewGenerator()}
}

type sstUserKeyGen struct{ filter.FilterGenerator }

func (g sstUserKeyGen) Add(key []byte) { g.FilterGenerator.Add(ikey.UserKey(key)) }

type sstEntry struct{ key, val []byte }

// sstRandomEntries returns n entries in internal key order: random user
// keys with one to three versions (some deletions), values up to 3 KiB
// (some compressible, some empty, a few over a 4 KiB block).
func sstRandomEntries(rng *rand.Rand, n int) []sstEntry {
	var out []sstEntry
	seen := map[string]bool{}
	for len(out) < n {
		u := []byte(fmt.Sprintf("user/%08d/%x", rng.IntN(1<<30), rng.Uint32()%4096))
		if seen[string(u)] {
			continue
		}
		seen[string(u)] = true
		seq := uint64(100 + rng.IntN(1000))
		for v := rng.IntN(3); v >= 0; v-- {
			kind := ikey.KindSet
			if rng.IntN(10) == 0 {
				kind = ikey.KindDelete
			}
			val := make([]byte, rng.IntN(300))
			switch rng.IntN(20) {
			case 0:
				val = nil
			case 1:
				val = make([]byte, 5000+rng.IntN(3000))
			case 2, 3, 4:
				val = bytes.Repeat([]byte("compressible "), 20)
			}
			if len(val) > 0 && val[0] == 0 {
				for i := range val {
					val[i] = byte(rng.Uint32())
				}
			}
			out = append(out, sstEntry{ikey.Make(u, seq, kind), val})
			seq -= uint64(1 + rng.IntN(5))
		}
	}
	sort.Slice(out, func(i, j int) bool { return ikey.Compare(out[i].key, out[j].key) < 0 })
	return out
}

func sstGoleveldbOptions(filterName string) *opt.Options {
	o := &opt.Options{
		Comparer:    sstIKeyComparer{},
		Strict:      opt.StrictBlockChecksum,
		Compression: opt.SnappyCompression,
	}
	if filterName != "" {
		o.Filter = newSSTFilter(filterName)
	}
	return o
}

func sstWriteShale(t testing.TB, entries []sstEntry) []byte {
	var buf bytes.Buffer
	w := sstable.NewWriter(&buf, sstable.WriterOptions{})
	for _, e := range entries {
		if err := w.Add(e.key, e.val); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func sstWriteGoleveldb(t testing.TB, entries []sstEntry, o *opt.Options) []byte {
	var buf bytes.Buffer
	w := table.NewWriter(&buf, o, nil, 0)
	for _, e := range entries {
		if err := w.Append(e.key, e.val); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func sstOpenGoleveldb(t testing.TB, b []byte, o *opt.Options) *table.Reader {
	r, err := table.NewReader(bytes.NewReader(b), int64(len(b)), storage.FileDesc{Type: storage.TypeTable, Num: 1}, nil, nil, o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestSSTGoleveldbReadsShale reads a shale table with goleveldb's table
// reader: a full scan, and a filtered Find of every user key (which would
// miss keys if shale's bloom bits differed from goleveldb's), with every
// block checksum verified.
func TestSSTGoleveldbReadsShale(t *testing.T) {
	entries := sstRandomEntries(rand.New(rand.NewPCG(1, 2)), 5000)
	b := sstWriteShale(t, entries)
	o := sstGoleveldbOptions("leveldb.BuiltinBloomFilter2")
	r := sstOpenGoleveldb(t, b, o)
	defer r.Release()
	it := r.NewIterator(nil, nil)
	i := 0
	for it.Next() {
		if i >= len(entries) || !bytes.Equal(it.Key(), entries[i].key) || !bytes.Equal(it.Value(), entries[i].val) {
			t.Fatalf("entry %d: goleveldb read %s", i, ikey.String(it.Key()))
		}
		i++
	}
	if err := it.Error(); err != nil || i != len(entries) {
		t.Fatalf("goleveldb scanned %d of %d entries: %v", i, len(entries), err)
	}
	it.Release()
	for j, e := range entries {
		if j > 0 && bytes.Equal(ikey.UserKey(entries[j-1].key), ikey.UserKey(e.key)) {
			continue // Find at MaxSeq returns the newest version only
		}
		rkey, val, err := r.Find(ikey.SeekKey(ikey.UserKey(e.key), ikey.MaxSeq), true, nil)
		if err != nil || !bytes.Equal(rkey, e.key) || !bytes.Equal(val, e.val) {
			t.Fatalf("goleveldb Find(%s) = %s, %v", ikey.String(e.key), ikey.String(rkey), err)
		}
	}
}

// TestSSTShaleReadsGoleveldb reads goleveldb tables with shale's reader,
// with goleveldb's filter under its own name (ignored) and under LevelDB's
// name (used: then shale reads goleveldb's bloom bits).
func TestSSTShaleReadsGoleveldb(t *testing.T) {
	entries := sstRandomEntries(rand.New(rand.NewPCG(3, 4)), 5000)
	for _, tc := range []struct {
		filter     string
		wantFilter bool
	}{
		{"leveldb.BuiltinBloomFilter", false},
		{"leveldb.BuiltinBloomFilter2", true},
		{"", false},
	} {
		b := sstWriteGoleveldb(t, entries, sstGoleveldbOptions(tc.filter))
		r, err := sstable.Open(bytes.NewReader(b), int64(len(b)), sstable.ReaderOptions{FileName: "goleveldb.ldb"})
		if err != nil {
			t.Fatal(err)
		}
		if r.HasFilter() != tc.wantFilter {
			t.Fatalf("filter %q: HasFilter = %v", tc.filter, r.HasFilter())
		}
		it := r.NewIter()
		i := 0
		for ok := it.First(); ok; ok = it.Next() {
			if i >= len(entries) || !bytes.Equal(it.Key(), entries[i].key) || !bytes.Equal(it.Value(), entries[i].val) {
				t.Fatalf("entry %d: shale read %s", i, ikey.String(it.Key()))
			}
			i++
		}
		if err := it.Close(); err != nil || i != len(entries) {
			t.Fatalf("shale scanned %d of %d entries: %v", i, len(entries), err)
		}
		for j, e := range entries {
			if j > 0 && bytes.Equal(ikey.UserKey(entries[j-1].key), ikey.UserKey(e.key)) {
				continue
			}
			v, kind, found, err := r.Get(ikey.UserKey(e.key), ikey.MaxSeq, nil)
			if err != nil || !found || kind != ikey.KindOf(e.key) || !bytes.Equal(v, e.val) {
				t.Fatalf("filter %q: Get(%s) = %v %v %v", tc.filter, ikey.String(e.key), found, kind, err)
			}
		}
	}
}
