package sstable

import (
	"bytes"
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/shale-db/shale/internal/cache"
	"github.com/shale-db/shale/internal/ikey"
)

func TestTableRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	for _, tc := range []struct {
		n    int
		opts WriterOptions
	}{
		{0, WriterOptions{}},
		{1, WriterOptions{}},
		{500, WriterOptions{}},
		{500, WriterOptions{BlockSize: 64, RestartInterval: 1, Compression: NoCompression}},
		{800, WriterOptions{BlockSize: 300, RestartInterval: 3, BloomBitsPerKey: -1}},
		{1500, WriterOptions{BlockSize: 1024}},
	} {
		name := fmt.Sprintf("n=%d/%+v", tc.n, tc.opts)
		t.Run(name, func(t *testing.T) {
			model := randomEntries(rng, tc.n, 6000) // some values > 4 KiB blocks
			b := writeTable(t, model, tc.opts)
			for _, c := range []*cache.Cache{nil, cache.New(1 << 20)} {
				r := openTable(t, b, ReaderOptions{FileName: "rt.ldb", FileNum: 9, Cache: c})
				if r.HasFilter() != (tc.opts.BloomBitsPerKey >= 0) {
					t.Fatalf("HasFilter = %v", r.HasFilter())
				}
				checkIter(t, r.NewIter(), model, probeKeys(model), rng)
				checkGets(t, r, model)
			}
		})
	}
}

// checkGets asks Get about every model user key at sequence numbers around
// each version, and about absent keys, and checks against the model.
func checkGets(t *testing.T, r *Reader, model []kv) {
	t.Helper()
	stride := 1 + len(model)/500 // about 500 keys, spread over the table
	for i := 0; i < len(model); i += stride {
		u, seq := ikey.UserKey(model[i].key), ikey.Seq(model[i].key)
		for _, s := range []uint64{seq, seq + 1, max(seq, 1) - 1, ikey.MaxSeq} {
			// The model's answer: the first entry of u with sequence <= s.
			var want *kv
			for j := i; j >= 0 && bytes.Equal(ikey.UserKey(model[j].key), u); j-- {
				if ikey.Seq(model[j].key) <= s {
					want = &model[j]
				}
			}
			for j := i + 1; want == nil && j < len(model) && bytes.Equal(ikey.UserKey(model[j].key), u); j++ {
				if ikey.Seq(model[j].key) <= s {
					want = &model[j]
				}
			}
			v, kind, found, err := r.Get(u, s, nil)
			switch {
			case err != nil:
				t.Fatalf("Get(%q, %d): %v", u, s, err)
			case want == nil && found:
				t.Fatalf("Get(%q, %d) found %d bytes, want nothing", u, s, len(v))
			case want != nil && (!found || kind != ikey.KindOf(want.key) || !bytes.Equal(v, want.val)):
				t.Fatalf("Get(%q, %d) = %v,%v want %s", u, s, found, kind, ikey.String(want.key))
			}
		}
		absent := append(append([]byte(nil), u...), 0xfe, 0xfe)
		if _, _, found, err := r.Get(absent, ikey.MaxSeq, nil); err != nil || (found && !modelHasUser(model, absent)) {
			t.Fatalf("Get(absent %q) = %v, %v", absent, found, err)
		}
	}
}

func modelHasUser(model []kv, u []byte) bool {
	for _, e := range model {
		if bytes.Equal(ikey.UserKey(e.key), u) {
			return true
		}
	}
	return false
}

func TestWriterMeta(t *testing.T) {
	model := []kv{
		{ikey.ParseString("a#9,PUT"), []byte("1")},
		{ikey.ParseString("a#3,DEL"), nil},
		{ikey.ParseString("b#5,PUT"), []byte("2")},
	}
	var buf bytes.Buffer
	w := NewWriter(&buf, WriterOptions{})
	for _, e := range model {
		if err := w.Add(e.key, e.val); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	m := w.Meta()
	if ikey.String(m.Smallest) != "a#9,PUT" || ikey.String(m.Largest) != "b#5,PUT" || m.Entries != 3 || m.DataBlocks != 1 || m.Size != uint64(buf.Len()) {
		t.Fatalf("meta %+v", m)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := w.Add(ikey.ParseString("c#1,PUT"), nil); err == nil {
		t.Fatal("Add after Close succeeded")
	}
}

func TestWriterRejectsDisorder(t *testing.T) {
	for _, keys := range [][]string{
		{"b#1,PUT", "a#1,PUT"},
		{"a#1,PUT", "a#1,PUT"}, // equal is not increasing
		{"a#1,PUT", "a#2,PUT"}, // newer after older
	} {
		w := NewWriter(&bytes.Buffer{}, WriterOptions{})
		if err := w.Add(ikey.ParseString(keys[0]), nil); err != nil {
			t.Fatal(err)
		}
		err := w.Add(ikey.ParseString(keys[1]), nil)
		if err == nil || !strings.Contains(err.Error(), "must increase") {
			t.Fatalf("%v: got %v", keys, err)
		}
		if w.Close() == nil {
			t.Fatalf("%v: Close after a bad Add succeeded", keys)
		}
	}
	if err := NewWriter(&bytes.Buffer{}, WriterOptions{}).Add([]byte("short"), nil); err == nil {
		t.Fatal("a 5-byte key was accepted as an internal key")
	}
}

// TestBlockBoundaries places seeks exactly at, just before and just after
// the first and last keys of every block, and between a block's last key
// and its index separator.
func TestBlockBoundaries(t *testing.T) {
	var model []kv
	for i := 0; i < 400; i++ {
		u := []byte(fmt.Sprintf("user%05d", i*10))
		model = append(model, kv{ikey.Make(u, 5, ikey.KindSet), bytes.Repeat([]byte{byte(i)}, 50)})
	}
	b := writeTable(t, model, WriterOptions{BlockSize: 256, RestartInterval: 2})
	r := openTable(t, b, ReaderOptions{})
	l, err := r.Layout()
	if err != nil {
		t.Fatal(err)
	}
	var probes [][]byte
	for _, blk := range l.Blocks {
		if blk.Kind == "data" {
			probes = append(probes, blk.IndexKey)
		}
	}
	if len(probes) < 50 {
		t.Fatalf("only %d data blocks", len(probes))
	}
	for i := 0; i < len(model); i++ {
		u := ikey.UserKey(model[i].key)
		probes = append(probes, ikey.Make(u, 6, ikey.KindSet), ikey.Make(u, 4, ikey.KindSet),
			ikey.Make(append(u[:len(u):len(u)], '5'), ikey.MaxSeq, ikey.KindSet))
	}
	checkIter(t, r.NewIter(), model, append(probes, probeKeys(model)...), rand.New(rand.NewSource(3)))
}

func TestCompressionOnlyWhenItPays(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	var model []kv
	for i := 0; i < 200; i++ {
		val := make([]byte, 100)
		if i < 100 {
			for j := range val {
				val[j] = 'a' + byte(j%3) // compresses well
			}
		} else {
			rng.Read(val) // does not compress
		}
		model = append(model, kv{ikey.Make([]byte(fmt.Sprintf("k%04d", i)), 1, ikey.KindSet), val})
	}
	for _, c := range []Compression{DefaultCompression, NoCompression} {
		r := openTable(t, writeTable(t, model, WriterOptions{Compression: c, BlockSize: 1000}), ReaderOptions{})
		l, err := r.Layout()
		if err != nil {
			t.Fatal(err)
		}
		var snappyBlocks, plain int
		for _, blk := range l.Blocks {
			if blk.Err != nil {
				t.Fatalf("%s block %s: %v", blk.Kind, blk.Handle, blk.Err)
			}
			if blk.Kind != "data" {
				continue
			}
			switch {
			case blk.Compression == int(blockTypeSnappy):
				snappyBlocks++
				if blk.Handle.Length >= uint64(blk.DecodedLen-blk.DecodedLen/8) {
					t.Errorf("block %s compressed from %d bytes, saving under an eighth", blk.Handle, blk.DecodedLen)
				}
			case blk.Compression == int(blockTypeNone):
				plain++
			}
		}
		if c == NoCompression && snappyBlocks != 0 {
			t.Fatalf("NoCompression wrote %d snappy blocks", snappyBlocks)
		}
		if c == DefaultCompression && (snappyBlocks == 0 || plain == 0) {
			t.Fatalf("snappy blocks %d, plain %d: want both (compressible and random values)", snappyBlocks, plain)
		}
		checkIter(t, r.NewIter(), model, probeKeys(model), rng)
	}
}

func TestBloomFalsePositiveRate(t *testing.T) {
	const n = 10000
	var model []kv
	for i := 0; i < n; i++ {
		model = append(model, kv{ikey.Make([]byte(fmt.Sprintf("present%08d", i)), 1, ikey.KindSet), nil})
	}
	r := openTable(t, writeTable(t, model, WriterOptions{}), ReaderOptions{})
	var fp int
	for i := 0; i < n; i++ {
		// Every present key must pass its block's filter.
		if _, _, found, err := r.Get(ikey.UserKey(model[i].key), 1, nil); !found || err != nil {
			t.Fatalf("present key %d not found: %v", i, err)
		}
	}
	var idx blockIter
	r.indexIter(&idx, r.loadedIndex(t))
	for i := 0; i < n; i++ {
		u := []byte(fmt.Sprintf("absent%08d", i))
		if !idx.SeekGE(ikey.SeekKey(u, 1)) {
			idx.Last()
		}
		h, _ := r.blockHandle(idx.val)
		if f, _ := r.loadedFilter(); f.mayContain(h.Offset, bloomHash(u)) {
			fp++
		}
	}
	rate := float64(fp) / n
	t.Logf("false-positive rate %.3f%% at 10 bits/key", 100*rate)
	if rate < 0.002 || rate > 0.02 {
		t.Fatalf("false-positive rate %.3f%%, want about 1%%", 100*rate)
	}
}

// The filter block's range is the block size, stored in its last byte as
// LevelDB's readers expect: 4 KiB blocks get a filter for every 4 KiB of
// file rather than LevelDB's 2 KiB, clamped to [2 KiB, 1 MiB]. Every key
// still passes its block's filter, and absent keys mostly do not.
func TestFilterRangeFollowsBlockSize(t *testing.T) {
	var model []kv
	for i := 0; i < 5000; i++ {
		model = append(model, kv{ikey.Make([]byte(fmt.Sprintf("k%06d", i*2)), 1, ikey.KindSet), bytes.Repeat([]byte{byte(i)}, 40)})
	}
	for _, tc := range []struct{ blockSize, lg int }{{512, 11}, {4096, 12}, {6000, 12}, {8192, 13}, {4 << 20, 20}} {
		b := writeTable(t, model, WriterOptions{BlockSize: tc.blockSize, Compression: NoCompression})
		counter := &countingReaderAt{r: bytes.NewReader(b)}
		r, err := Open(counter, int64(len(b)), ReaderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		f, err := r.loadedFilter()
		if err != nil || f == nil {
			t.Fatalf("block size %d: no filter: %v", tc.blockSize, err)
		}
		if int(f.baseLg) != tc.lg {
			t.Fatalf("block size %d: filter range 2^%d, want 2^%d", tc.blockSize, f.baseLg, tc.lg)
		}
		if dataEnd := r.footer.MetaIndex.Offset; f.num > int(dataEnd>>f.baseLg)+1 {
			t.Fatalf("block size %d: %d filters for %d bytes of blocks", tc.blockSize, f.num, dataEnd)
		}
		for i := range model {
			u := ikey.UserKey(model[i].key)
			if _, _, found, err := r.Get(u, 1, nil); !found || err != nil {
				t.Fatalf("block size %d: key %q not found: %v", tc.blockSize, u, err)
			}
		}
		counter.n = 0
		for i := range model {
			if _, _, found, err := r.Get([]byte(fmt.Sprintf("k%06d", i*2+1)), 1, nil); found || err != nil {
				t.Fatalf("block size %d: absent key found or error %v", tc.blockSize, err)
			}
		}
		if counter.n > len(model)/50 {
			t.Fatalf("block size %d: %d absent Gets read %d blocks; the filter should skip ~99%%", tc.blockSize, len(model), counter.n)
		}
	}
}

func TestFilterSkipsReads(t *testing.T) {
	var model []kv
	for i := 0; i < 1000; i++ {
		model = append(model, kv{ikey.Make([]byte(fmt.Sprintf("k%06d", i*2)), 1, ikey.KindSet), []byte("v")})
	}
	b := writeTable(t, model, WriterOptions{})
	counter := &countingReaderAt{r: bytes.NewReader(b)}
	r, err := Open(counter, int64(len(b)), ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	counter.n = 0
	for i := 0; i < 1000; i++ {
		if _, _, found, err := r.Get([]byte(fmt.Sprintf("k%06d", i*2+1)), 1, nil); found || err != nil {
			t.Fatalf("absent key found or error %v", err)
		}
	}
	if counter.n > 50 {
		t.Fatalf("1000 absent Gets read %d blocks; the filter should skip ~99%%", counter.n)
	}
}

type countingReaderAt struct {
	r *bytes.Reader
	n int
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	c.n++
	return c.r.ReadAt(p, off)
}

func TestCacheServesBlocks(t *testing.T) {
	model := randomEntries(rand.New(rand.NewSource(5)), 300, 100)
	b := writeTable(t, model, WriterOptions{})
	counter := &countingReaderAt{r: bytes.NewReader(b)}
	c := cache.New(1 << 20)
	r, err := Open(counter, int64(len(b)), ReaderOptions{FileNum: 3, Cache: c})
	if err != nil {
		t.Fatal(err)
	}
	scan := func() int {
		n := 0
		it := r.NewIter()
		for ok := it.First(); ok; ok = it.Next() {
			n++
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		return n
	}
	scan()
	before := counter.n
	if got := scan(); got != len(model) {
		t.Fatalf("scan saw %d entries", got)
	}
	if counter.n != before {
		t.Fatalf("second scan read the file %d times; blocks should come from the cache", counter.n-before)
	}
	c.EvictFile(3)
	scan()
	if counter.n == before {
		t.Fatal("scan after EvictFile read nothing")
	}
}

// TestConcurrentReaders uses one Reader and one block cache from several
// goroutines (run with -race).
func TestConcurrentReaders(t *testing.T) {
	model := randomEntries(rand.New(rand.NewSource(12)), 2000, 200)
	r := openTable(t, writeTable(t, model, WriterOptions{BlockSize: 512}), ReaderOptions{FileNum: 1, Cache: cache.New(32 << 10)})
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			it := r.NewIter()
			defer it.Close()
			for i := g; i < len(model); i += 7 {
				e := model[i]
				if !it.SeekGE(e.key) || !bytes.Equal(it.Value(), e.val) {
					t.Errorf("SeekGE(%s): %v", ikey.String(e.key), it.Err())
					return
				}
				if _, _, found, err := r.Get(ikey.UserKey(e.key), ikey.Seq(e.key), nil); !found || err != nil {
					t.Errorf("Get(%s): %v %v", ikey.String(e.key), found, err)
					return
				}
			}
		}(g)
	}
	wg.Wait()
}

// With a cache so small that nearly every block read evicts another,
// iterators in several goroutines read every value right, including the one
// they returned a step before (valid until the block after the next one is
// loaded), while Gets run beside them; once all are closed, the only blocks
// still out of the cache's free lists are the cached ones. Test binaries
// poison released blocks, so a block read after its release shows here.
func TestBlocksOutliveEviction(t *testing.T) {
	model := randomEntries(rand.New(rand.NewSource(21)), 3000, 300)
	// About seven 512-byte blocks per shard.
	c := cache.New(16*1200 + 48<<10)
	r := openTable(t, writeTable(t, model, WriterOptions{BlockSize: 512}), ReaderOptions{FileNum: 1, Cache: c})
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(g)))
			it := r.NewIter()
			defer it.Close()
			for round := 0; round < 20; round++ {
				i := rng.Intn(len(model))
				ok := it.SeekGE(model[i].key)
				var prev []byte
				prevI := -1
				for steps := 0; ok && steps < 200; steps++ {
					if !bytes.Equal(it.Value(), model[i].val) {
						t.Errorf("entry %d: value %.20q, want %.20q", i, it.Value(), model[i].val)
						return
					}
					if prevI >= 0 && !bytes.Equal(prev, model[prevI].val) {
						t.Errorf("entry %d's value changed one step later: %.20q", prevI, prev)
						return
					}
					prev, prevI = it.Value(), i
					if g%2 == 0 {
						ok, i = it.Next(), i+1
					} else {
						ok, i = it.Prev(), i-1
					}
					e := model[rng.Intn(len(model))]
					if v, _, found, err := r.Get(ikey.UserKey(e.key), ikey.Seq(e.key), nil); !found || err != nil || !bytes.Equal(v, e.val) {
						t.Errorf("Get(%s) = %.20q %v %v", ikey.String(e.key), v, found, err)
						return
					}
				}
				if err := it.Err(); err != nil {
					t.Error(err)
					return
				}
			}
		}(g)
	}
	wg.Wait()
	// The Reader's index block (with its table) is too large for this
	// cache's shards: it comes from its memory, uncached, kept by the
	// Reader until Close. The filter block is cached.
	if m := c.Metrics(); len(r.own) != 1 || m.Buffers != m.Count+1 || m.Kept < 20<<10 || m.Meta == 0 {
		t.Fatalf("iterators closed, Reader open: %d buffers out, %d cached, %d bytes kept by %d blocks, %d of index and filter cached; want the Reader's index kept, its filter cached", m.Buffers, m.Count, m.Kept, len(r.own), m.Meta)
	}
	r.Close()
	if m := c.Metrics(); m.Buffers != m.Count || m.Count == 0 || m.Kept != 0 {
		t.Fatalf("after every reader closed: %d buffers out, %d cached, %d bytes kept", m.Buffers, m.Count, m.Kept)
	}
}

// A Writer gives its buffers to the next one at Close: a table written
// after others (larger, with other options, or abandoned after an error)
// is byte for byte the table written first in a fresh process, and a
// closed Writer keeps answering without touching them.
func TestWriterBuffersReusedCleanly(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	small := randomEntries(rng, 300, 50)
	first := writeTable(t, small, WriterOptions{})
	big := randomEntries(rng, 20000, 3000)
	_ = writeTable(t, big, WriterOptions{BlockSize: 64 << 10, RestartInterval: 3})
	_ = writeTable(t, big[:500], WriterOptions{BloomBitsPerKey: -1, Compression: NoCompression})
	var sink bytes.Buffer
	w := NewWriter(&sink, WriterOptions{})
	_ = w.Add(big[1].key, nil)
	if err := w.Add(big[0].key, nil); err == nil {
		t.Fatal("out-of-order Add succeeded")
	}
	if err := w.Close(); err == nil {
		t.Fatal("Close after a failed Add succeeded")
	}
	for i := 0; i < 3; i++ {
		if again := writeTable(t, small, WriterOptions{}); !bytes.Equal(again, first) {
			t.Fatalf("round %d: the table differs from the first written (%d bytes, want %d)", i, len(again), len(first))
		}
	}
	w = NewWriter(&sink, WriterOptions{})
	for _, e := range small {
		if err := w.Add(e.key, e.val); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	_ = writeTable(t, big[:1000], WriterOptions{}) // takes w's buffers
	if err := w.Close(); err != nil || w.Meta().Size == 0 || w.EstimatedSize() == 0 {
		t.Fatalf("closed Writer: Close %v, Meta %+v", err, w.Meta())
	}
	if err := w.Add(big[5000].key, nil); err == nil {
		t.Fatal("Add after Close succeeded")
	}
}

// TestBloomBitsPerKeyBound: a Writer asked for more than MaxBloomBitsPerKey
// fails every Add, rather than panicking (or allocating without bound) in
// Close when it sizes the filter; MaxBloomBitsPerKey itself works.
func TestBloomBitsPerKeyBound(t *testing.T) {
	for _, bits := range []int{MaxBloomBitsPerKey + 1, 1 << 61} {
		var buf bytes.Buffer
		w := NewWriter(&buf, WriterOptions{BloomBitsPerKey: bits})
		if err := w.Add(ikey.Make([]byte("k"), 1, ikey.KindSet), []byte("v")); err == nil || !strings.Contains(err.Error(), "BloomBitsPerKey") {
			t.Errorf("Add with %d bits a key: %v; want an error naming BloomBitsPerKey", bits, err)
		}
		if err := w.Close(); err == nil {
			t.Errorf("Close with %d bits a key succeeded", bits)
		}
	}
	entries := randomEntries(rand.New(rand.NewSource(3)), 200, 20)
	r := openTable(t, writeTable(t, entries, WriterOptions{BloomBitsPerKey: MaxBloomBitsPerKey}), ReaderOptions{})
	for _, e := range entries {
		if _, _, found, err := r.Get(ikey.UserKey(e.key), ikey.Seq(e.key), nil); err != nil || !found {
			t.Fatalf("Get(%q) = %v, %v", e.key, found, err)
		}
	}
}

// Index and filter blocks go through the cache like data blocks: with
// many tables sharing a cache far smaller than their index and filter
// blocks, they are evicted and read again while Gets and iterators run
// concurrently, and every answer stays right. Once the readers close,
// nothing is kept outside the cache and every buffer out is a cached one.
func TestIndexAndFilterEvicted(t *testing.T) {
	// A table's index block, its entry table and its filter are about
	// 2.5 KiB each; a shard holds 6 KiB, the cache a seventh of the
	// tables' index and filter blocks.
	const tables = 32
	c := cache.New(16 * 6 << 10)
	readers := make([]*Reader, tables)
	counters := make([]*metaReadCounter, tables)
	models := make([][]kv, tables)
	for i := range readers {
		models[i] = randomEntries(rand.New(rand.NewSource(int64(40+i))), 2000, 100)
		b := writeTable(t, models[i], WriterOptions{BlockSize: 4096})
		f := &metaReadCounter{r: bytes.NewReader(b)}
		r, err := Open(f, int64(len(b)), ReaderOptions{FileName: fmt.Sprintf("%06d.ldb", i+1), FileNum: uint64(i + 1), Cache: c})
		if err != nil {
			t.Fatal(err)
		}
		f.index.Store(int64(r.footer.Index.Offset))
		f.filter.Store(int64(r.filterHandle.Offset))
		readers[i], counters[i] = r, f
	}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(g)))
			for round := 0; round < 300; round++ {
				ti := rng.Intn(tables)
				r, model := readers[ti], models[ti]
				e := model[rng.Intn(len(model))]
				if v, _, found, err := r.Get(ikey.UserKey(e.key), ikey.Seq(e.key), nil); !found || err != nil || !bytes.Equal(v, e.val) {
					t.Errorf("table %d: Get(%s) = %.20q %v %v", ti, ikey.String(e.key), v, found, err)
					return
				}
				if _, _, found, err := r.Get([]byte("absent key"), ikey.MaxSeq, nil); found || err != nil {
					t.Errorf("table %d: Get of an absent key: %v %v", ti, found, err)
					return
				}
				if round%10 != 0 {
					continue
				}
				i := rng.Intn(len(model))
				it := r.NewIter()
				ok := it.SeekGE(model[i].key)
				for steps := 0; ok && steps < 50; steps++ {
					if !bytes.Equal(it.Key(), model[i].key) || !bytes.Equal(it.Value(), model[i].val) {
						t.Errorf("table %d: entry %d: %s", ti, i, ikey.String(it.Key()))
						it.Close()
						return
					}
					ok, i = it.Next(), i+1
				}
				if err := it.Close(); err != nil {
					t.Error(err)
					return
				}
			}
		}(g)
	}
	wg.Wait()
	m := c.Metrics()
	// Each index block was read by Open, each filter block by the first
	// Get; many more reads say they were evicted and read again.
	var reads, freads int64
	for _, f := range counters {
		reads += f.reads.Load()
		freads += f.freads.Load()
	}
	t.Logf("%d reads of the index blocks of %d tables, %d of their filter blocks", reads, tables, freads)
	if reads < 4*tables || freads < 4*tables {
		t.Fatalf("%d reads of %d tables' index blocks, %d of their filter blocks: they were not evicted", reads, tables, freads)
	}
	if m.Meta == 0 || m.Kept != 0 || m.Size > m.Capacity {
		t.Fatalf("index and filter blocks: %d bytes cached, %d kept outside; size %d of %d", m.Meta, m.Kept, m.Size, m.Capacity)
	}
	for _, r := range readers {
		r.Close()
	}
	if m := c.Metrics(); m.Buffers != m.Count || m.Kept != 0 {
		t.Fatalf("after every reader closed: %d buffers out, %d cached, %d bytes kept", m.Buffers, m.Count, m.Kept)
	}
}

// metaReadCounter counts the reads of a table's index block, at offset
// index, and of its filter block, at offset filter.
type metaReadCounter struct {
	r             *bytes.Reader
	index, filter atomic.Int64
	reads, freads atomic.Int64
}

func (c *metaReadCounter) ReadAt(p []byte, off int64) (int, error) {
	switch off {
	case c.index.Load():
		c.reads.Add(1)
	case c.filter.Load():
		c.freads.Add(1)
	}
	return c.r.ReadAt(p, off)
}

// TestRawBlocksReadIntoValues reads a table whose data blocks come in runs
// stored uncompressed (random values) and runs stored with snappy, block
// by block with and without a cache: each Get's answer is checked, a block
// stored uncompressed sets Reader.rawBlocks and a snappy one clears it (so
// both readDataBlock's ways are taken, and each meets blocks of the other
// kind); a table of snappy blocks never sets it; and a damaged
// uncompressed block read the direct way is reported with the file and its
// offset.
func TestRawBlocksReadIntoValues(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	var model []kv
	for i := range 300 {
		val := make([]byte, 200) // a block of its own
		if i/3%2 == 0 {
			rng.Read(val) // three blocks that do not compress
		} else {
			for j := range val {
				val[j] = 'a' + byte(j%3)
			}
		}
		model = append(model, kv{ikey.Make(fmt.Appendf(nil, "k%04d", i), 1, ikey.KindSet), val})
	}
	b := writeTable(t, model, WriterOptions{BlockSize: 100, Compression: DefaultCompression})
	for _, c := range []*cache.Cache{nil, cache.New(32 << 10)} {
		r := openTable(t, b, ReaderOptions{FileName: "raw.ldb", FileNum: 3, Cache: c})
		for pass := range 2 {
			for i, e := range model {
				v, _, found, err := r.Get(ikey.UserKey(e.key), ikey.MaxSeq, nil)
				if err != nil || !found || !bytes.Equal(v, e.val) {
					t.Fatalf("pass %d: Get(%q) = %v, %v, equal %v", pass, ikey.UserKey(e.key), found, err, bytes.Equal(v, e.val))
				}
				if raw := i/3%2 == 0; c == nil && r.rawBlocks.Load() != raw {
					t.Fatalf("pass %d: after entry %d, rawBlocks %v", pass, i, !raw)
				}
			}
		}
		checkIter(t, r.NewIter(), model, probeKeys(model), rng)
	}

	// A table of compressed data blocks never takes the direct way, though
	// its small metaindex is stored uncompressed.
	var packed []kv
	for i := range 60 {
		packed = append(packed, kv{ikey.Make(fmt.Appendf(nil, "p%04d", i), 1, ikey.KindSet), bytes.Repeat([]byte("xy"), 100)})
	}
	pr := openTable(t, writeTable(t, packed, WriterOptions{BlockSize: 100}), ReaderOptions{FileName: "packed.ldb"})
	for _, e := range packed {
		if raw := pr.rawBlocks.Load(); raw {
			t.Fatalf("rawBlocks set before reading %q, on a table of snappy blocks", ikey.UserKey(e.key))
		}
		if v, _, found, err := pr.Get(ikey.UserKey(e.key), ikey.MaxSeq, nil); err != nil || !found || !bytes.Equal(v, e.val) {
			t.Fatalf("Get(%q) = %v, %v", ikey.UserKey(e.key), found, err)
		}
	}

	l, err := openTable(t, b, ReaderOptions{}).Layout()
	if err != nil {
		t.Fatal(err)
	}
	var plain []BlockHandle
	for _, blk := range l.Blocks {
		if blk.Kind == "data" && blk.Compression == int(blockTypeNone) {
			plain = append(plain, blk.Handle)
		}
	}
	if len(plain) < 4 {
		t.Fatalf("%d uncompressed data blocks", len(plain))
	}
	damaged := bytes.Clone(b)
	r := openTable(t, damaged, ReaderOptions{FileName: "raw.ldb"})
	if _, _, _, err := r.Get(ikey.UserKey(model[0].key), ikey.MaxSeq, nil); err != nil || !r.rawBlocks.Load() {
		t.Fatalf("first block: %v, rawBlocks %v", err, r.rawBlocks.Load())
	}
	h := plain[1] // entry 1's
	damaged[h.Offset+h.Length/2] ^= 0x40
	_, _, _, err = r.Get(ikey.UserKey(model[1].key), ikey.MaxSeq, nil)
	if err == nil || !strings.Contains(err.Error(), "raw.ldb") || !strings.Contains(err.Error(), fmt.Sprint(h.Offset)) || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("damaged block at %d: %v", h.Offset, err)
	}
}
