package sstable

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"testing"

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
	return append(out, writeTable(t, compressible, WriterOptions{BlockSize: 256}), writeTable(t, nil, WriterOptions{}))
}

// FuzzBlock decodes and iterates over arbitrary bytes as a block: every
// operation must end (error or not) without a panic, and keys of an
// internal block are always valid internal keys.
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
	f.Fuzz(func(t *testing.T, data []byte, internal bool) {
		var it blockIter
		if it.init(data, internal, "fuzz", 0) != nil {
			return
		}
		var keys [][]byte
		n := 0
		for ok := it.First(); ok && n <= len(data); ok = it.Next() {
			if internal && !ikey.Valid(it.key) {
				t.Fatalf("invalid internal key %x", it.key)
			}
			keys = append(keys, append([]byte(nil), it.key...))
			n++
		}
		if n > len(data) {
			t.Fatalf("%d entries from %d bytes", n, len(data))
		}
		for ok := it.Last(); ok && n >= 0; ok = it.Prev() {
			n--
		}
		for _, k := range keys {
			if !internal || len(k) >= ikey.TrailerLen {
				it.err = nil
				it.SeekGE(k)
				it.err = nil
				it.SeekLT(k)
			}
		}
	})
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
// checksums), and reads everything. Errors are fine; panics, hangs and
// errors not matching ErrCorrupt or ErrUnsupported are not.
func FuzzTable(f *testing.F) {
	for _, b := range seedTables(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, verify := range []bool{true, false} {
			fuzzReadTable(t, b, verify)
		}
	})
}

func fuzzReadTable(t *testing.T, b []byte, verify bool) {
	check := func(err error) {
		if err != nil && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnsupported) {
			t.Fatalf("error matches neither sentinel: %v", err)
		}
	}
	r, err := open(bytes.NewReader(b), int64(len(b)), ReaderOptions{FileName: "fuzz.ldb"}, verify)
	if err != nil {
		check(err)
		return
	}
	it := r.NewIter()
	var keys [][]byte
	for ok := it.First(); ok && len(keys) <= len(b); ok = it.Next() {
		keys = append(keys, append([]byte(nil), it.Key()...))
	}
	if len(keys) > len(b) {
		t.Fatalf("%d entries from %d bytes", len(keys), len(b))
	}
	check(it.Close())
	it = r.NewIter()
	for ok, n := it.Last(), 0; ok && n <= len(b); ok, n = it.Prev(), n+1 {
	}
	check(it.Close())
	for _, k := range keys {
		_, _, _, err := r.Get(ikey.UserKey(k), ikey.Seq(k))
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
