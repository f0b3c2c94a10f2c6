package sstable

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"testing"

	"github.com/shale-db/shale/internal/cache"
	"github.com/shale-db/shale/internal/ikey"
)

// seedTables returns small tables written by the Writer with various
// options, to seed the fuzz targets.
func seedTables(t testing.TB) [][]byte {
	rng := rand.New(rand.NewSource(10))
	var out [][]byte
	for _, opts := range []WriterOptions{
		{},
		{BlockSize: 64, RestartInterval: 2},
		{BlockSize: 128, Compression: NoCompression},
		{BloomBitsPerKey: -1, RestartInterval: 1},
	} {
		out = append(out, writeTable(t, randomEntries(rng, 20, 30), opts))
	}
	var compressible []kv
	for i := 0; i < 30; i++ {
		compressible = append(compressible, kv{ikey.Make([]byte(fmt.Sprintf("key%03d", i)), 1, ikey.KindSet), bytes.Repeat([]byte("ab"), 20)})
	}
	// Blocks stored uncompressed and with snappy in turn, so that reads
	// switch between reading a block into its Value and decoding it.
	var mixed []kv
	for i := 0; i < 12; i++ {
		v := bytes.Repeat([]byte("ab"), 40)
		if i/2%2 == 0 {
			v = make([]byte, 80)
			rng.Read(v)
		}
		mixed = append(mixed, kv{ikey.Make([]byte(fmt.Sprintf("mix%03d", i)), 1, ikey.KindSet), v})
	}
	out = append(out, writeTable(t, mixed, WriterOptions{BlockSize: 64}))
	withDels, _ := writeTableWithRangeDels(t, compressible[:5], sampleRangeDels(), WriterOptions{BlockSize: 128})
	onlyDels, _ := writeTableWithRangeDels(t, nil, sampleRangeDels(), WriterOptions{})
	return append(out, writeTable(t, compressible, WriterOptions{BlockSize: 256}), writeTable(t, nil, WriterOptions{}),
		withDels, onlyDels)
}

// FuzzBlock decodes and iterates over arbitrary bytes as a block: every
// operation must end (error or not) without a panic, keys of an internal
// block are always valid internal keys, forward and backward iteration
// agree when neither reports damage, and on a block whose keys ascend every
// seek lands where the forward scan says it should (or reports damage).
func FuzzBlock(f *testing.F) {
	rng := rand.New(rand.NewSource(11))
	for _, n := range []int{0, 1, 5, 40} {
		for _, ri := range []int{1, 16} {
			f.Add(buildBlock(randomEntries(rng, n, 20), ri), true)
		}
	}
	var meta blockWriter
	meta.restartInterval = 16
	meta.add([]byte(FilterMetaKey), appendHandle(nil, BlockHandle{100, 200}))
	f.Add(append([]byte(nil), meta.finish()...), false)
	f.Add(misplacedRestartsBlock(), false)
	f.Fuzz(func(t *testing.T, data []byte, internal bool) {
		var it blockIter
		if it.init(data, internal, "fuzz", 0) != nil {
			return
		}
		var keys [][]byte
		for ok := it.First(); ok && len(keys) <= len(data); ok = it.Next() {
			if internal && !ikey.Valid(it.key) {
				t.Fatalf("invalid internal key %x", it.key)
			}
			keys = append(keys, append([]byte(nil), it.key...))
		}
		if len(keys) > len(data) {
			t.Fatalf("%d entries from %d bytes", len(keys), len(data))
		}
		fwdErr := it.err
		it.err = nil
		var back [][]byte
		for ok := it.Last(); ok && len(back) <= len(data); ok = it.Prev() {
			back = append(back, append([]byte(nil), it.key...))
		}
		if len(back) > len(data) {
			t.Fatalf("%d entries backward from %d bytes", len(back), len(data))
		}
		if fwdErr == nil && it.err == nil && !sameReversed(keys, back) {
			t.Fatalf("forward %q, backward %q", keys, back)
		}
		ascending := fwdErr == nil && isAscending(&it, keys)
		for i, k := range keys {
			if internal && len(k) < ikey.TrailerLen {
				continue
			}
			it.err = nil
			if ok := it.SeekGE(k); ascending && (ok && it.compare(it.key, k) != 0 || !ok && it.err == nil) {
				t.Fatalf("SeekGE(%q) = %v %q, %v; the scan has it", k, ok, it.key, it.err)
			}
			it.err = nil
			ok := it.SeekLT(k)
			if ascending && (ok && (i == 0 || it.compare(it.key, keys[i-1]) != 0) || !ok && i > 0 && it.err == nil) {
				t.Fatalf("SeekLT(%q) = %v %q, %v; entry %d of %q", k, ok, it.key, it.err, i, keys)
			}
		}
	})
}

// misplacedRestartsBlock returns a bytewise block whose restart points are
// out of order: restart 0 is the middle of entry "a", whose value parses
// as an entry "z". Read from restart 0 it holds z, b; from restart 1, a, b.
func misplacedRestartsBlock() []byte {
	return []byte{
		0, 1, 4, 'a', 0, 1, 0, 'z', // "a" = "\x00\x01\x00z"; at 4: "z" = ""
		0, 1, 0, 'b', // "b" = ""
		4, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, // restarts [4, 0]
	}
}

func sameReversed(fwd, back [][]byte) bool {
	if len(fwd) != len(back) {
		return false
	}
	for i := range fwd {
		if !bytes.Equal(fwd[i], back[len(back)-1-i]) {
			return false
		}
	}
	return true
}

// isAscending reports whether keys strictly ascend in the block's order.
func isAscending(it *blockIter, keys [][]byte) bool {
	for i := 1; i < len(keys); i++ {
		if it.compare(keys[i-1], keys[i]) >= 0 {
			return false
		}
	}
	return true
}

// FuzzFooter decodes arbitrary bytes as a footer; what decodes must
// re-encode to a footer that decodes to the same handles.
func FuzzFooter(f *testing.F) {
	for _, b := range seedTables(f) {
		f.Add(b[len(b)-FooterLen:])
	}
	f.Add(appendFooter(nil, Footer{MetaIndex: BlockHandle{1 << 62, 1 << 40}, Index: BlockHandle{1<<64 - 1, 1<<64 - 1}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		ft, reason := decodeFooter(b)
		if reason != "" {
			return
		}
		re := appendFooter(nil, ft)
		if len(re) != FooterLen {
			t.Fatalf("footer re-encoded to %d bytes", len(re))
		}
		if back, reason := decodeFooter(re); reason != "" || back != ft {
			t.Fatalf("round trip: %+v -> %+v %q", ft, back, reason)
		}
	})
}

// FuzzTable opens arbitrary bytes as a table, with and without checksum
// verification (so that the fuzzer reaches the decoders behind the
// checksums), and reads everything. Errors are fine; panics, hangs, errors
// not matching ErrCorrupt or ErrUnsupported, and forward and backward
// scans that both succeed but disagree are not.
func FuzzTable(f *testing.F) {
	for _, b := range seedTables(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, verify := range []bool{true, false} {
			fuzzReadTable(t, b, verify, nil)
			// With a cache, where index, filter and data blocks meet
			// under their offsets (a damaged table's may coincide).
			c := cache.New(1 << 20)
			fuzzReadTable(t, b, verify, c)
			c.Close()
		}
	})
}

func fuzzReadTable(t *testing.T, b []byte, verify bool, c *cache.Cache) {
	check := func(err error) {
		if err != nil && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnsupported) {
			t.Fatalf("error matches neither sentinel: %v", err)
		}
	}
	r, err := open(bytes.NewReader(b), int64(len(b)), ReaderOptions{FileName: "fuzz.ldb", FileNum: 1, Cache: c}, verify)
	if err != nil {
		check(err)
		return
	}
	defer r.Close()
	it := r.NewIter()
	var keys [][]byte
	for ok := it.First(); ok && len(keys) <= len(b); ok = it.Next() {
		keys = append(keys, append([]byte(nil), it.Key()...))
	}
	if len(keys) > len(b) {
		t.Fatalf("%d entries from %d bytes", len(keys), len(b))
	}
	fwdErr := it.Close()
	check(fwdErr)
	it = r.NewIter()
	var back [][]byte
	for ok := it.Last(); ok && len(back) <= len(b); ok = it.Prev() {
		back = append(back, append([]byte(nil), it.Key()...))
	}
	backErr := it.Close()
	check(backErr)
	if fwdErr == nil && backErr == nil && !sameReversed(keys, back) {
		t.Fatalf("forward %d keys, backward %d, or in another order", len(keys), len(back))
	}
	for _, k := range keys {
		_, _, _, err := r.Get(ikey.UserKey(k), ikey.Seq(k), nil)
		check(err)
		it = r.NewIter()
		it.SeekGE(k)
		check(it.Close())
		it = r.NewIter()
		it.SeekLT(k)
		check(it.Close())
	}
	l, err := r.Layout()
	check(err)
	if l != nil {
		for _, blk := range l.Blocks {
			check(blk.Err)
		}
	}
}

// FuzzFilter checks the filter block both ways. Built by the writer over
// the '\n'-separated user keys in keys, three to a data block spaced step
// bytes apart, it must answer "maybe" for every key at its block (a false
// "no" would hide an entry). Parsed from arbitrary bytes raw, it must
// answer any question without a panic.
func FuzzFilter(f *testing.F) {
	f.Add([]byte("a\nb\nc\nd\ne"), uint16(100), uint8(10), []byte{})
	f.Add([]byte("apple\n\nbanana"), uint16(5000), uint8(1), []byte{0, 0, 0, 0, 11})
	f.Add([]byte("k"), uint16(0), uint8(200), []byte{1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Fuzz(func(t *testing.T, keys []byte, step uint16, bits uint8, raw []byte) {
		fw := filterWriter{bitsPerKey: int(bits), baseLg: filterBaseLgFor(int(step))}
		users := bytes.Split(keys, []byte("\n"))
		for i, u := range users {
			if i%3 == 0 {
				fw.startBlock(uint64(i/3) * uint64(step))
			}
			fw.addKey(ikey.Make(u, 1, ikey.KindSet))
		}
		fr, ok := newFilterReader(fw.finish())
		if !ok {
			t.Fatal("the writer's filter block does not parse")
		}
		for i, u := range users {
			if !fr.mayContain(uint64(i/3)*uint64(step), bloomHash(u)) {
				t.Fatalf("filter hides key %q of block %d", u, i/3)
			}
		}
		if fr, ok := newFilterReader(raw); ok {
			for _, off := range []uint64{0, uint64(step), 1 << 11, 1<<64 - 1} {
				fr.mayContain(off, bloomHash(keys))
			}
		}
	})
}
