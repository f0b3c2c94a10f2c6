package sstable

import (
	"bytes"
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/golang/snappy"
	"github.com/shale-db/shale/internal/ikey"
)

// benchBlock builds a data block the way a table of db_bench's fillrandom
// holds one: 16-byte decimal keys with sequence number 0 (the bottom level)
// and 100-byte values whose second half repeats the first, 50 random
// printable bytes.
func benchBlock(rng *rand.Rand, blockSize int) []byte {
	var w blockWriter
	w.restartInterval = DefaultRestartInterval
	key := rng.Intn(1000)
	for w.estimatedSize() < blockSize {
		key += 1 + rng.Intn(3)
		half := make([]byte, 50)
		for i := range half {
			half[i] = byte(' ' + rng.Intn(95))
		}
		w.add(ikey.Make([]byte(fmt.Sprintf("%016d", key)), 0, ikey.KindSet), append(half, half...))
	}
	return append([]byte(nil), w.finish()...)
}

// snappyInputs are inputs that exercise every element the encoder writes:
// literals of each length form, copies with 1- and 2-byte offsets, copies
// longer than one element holds, and input past one 64 KiB chunk.
func snappyInputs() [][]byte {
	rng := rand.New(rand.NewSource(1))
	random := func(n int) []byte {
		b := make([]byte, n)
		rng.Read(b)
		return b
	}
	in := [][]byte{
		nil,
		{0},
		[]byte("abc"),
		[]byte(strings.Repeat("a", 16)),
		[]byte(strings.Repeat("a", 17)),
		[]byte(strings.Repeat("ab", 1000)),
		[]byte(strings.Repeat("hello, world. ", 500)),
		random(59), random(60), random(61), random(255), random(256), random(257),
		random(70000),
		make([]byte, 200000),
		benchBlock(rng, 4096),
		benchBlock(rng, 64<<10),
		benchBlock(rng, 200<<10),
	}
	// A repeat at an offset of 2047, 2048 and 65535 bytes.
	for _, off := range []int{2047, 2048, 65535} {
		b := random(off + 100)
		copy(b[off:], b[:100])
		in = append(in, b)
	}
	// Copies of 64 to 70 bytes, around the longest one element holds.
	for n := 63; n <= 70; n++ {
		head := random(n)
		in = append(in, append(append(append([]byte(nil), head...), 'x'), head...))
	}
	return in
}

// Every encoding decodes, with github.com/golang/snappy (the decoder the
// Reader uses, as goleveldb does), to its input, and fits snappyMaxLen.
func TestSnappyEncodeRoundTrip(t *testing.T) {
	var e snappyEncoder
	var dst []byte
	for i, in := range snappyInputs() {
		dst = e.encode(dst, in)
		if len(dst) > snappyMaxLen(len(in)) {
			t.Fatalf("input %d: %d bytes encoded to %d, above the bound %d", i, len(in), len(dst), snappyMaxLen(len(in)))
		}
		out, err := snappy.Decode(nil, dst)
		if err != nil {
			t.Fatalf("input %d (%d bytes): decode: %v", i, len(in), err)
		}
		if !bytes.Equal(out, in) {
			t.Fatalf("input %d (%d bytes): decoded to different bytes", i, len(in))
		}
	}
}

// The encoder finds the start of a repeat that its stride stepped over:
// on blocks of db_bench's data it writes at least 1% less than
// github.com/golang/snappy, whose matcher it otherwise shares, and never
// more on any of the inputs.
func TestSnappyEncodeExtendsBackwards(t *testing.T) {
	var e snappyEncoder
	rng := rand.New(rand.NewSource(2))
	var ours, theirs int
	for i := 0; i < 50; i++ {
		b := benchBlock(rng, 4096)
		ours += len(e.encode(nil, b))
		theirs += len(snappy.Encode(nil, b))
	}
	if float64(ours) > 0.99*float64(theirs) {
		t.Errorf("db_bench blocks: %d bytes encoded, golang/snappy %d: less than 1%% smaller", ours, theirs)
	}
	for i, in := range snappyInputs() {
		if a, b := len(e.encode(nil, in)), len(snappy.Encode(nil, in)); a > b {
			t.Errorf("input %d: %d bytes encoded, golang/snappy %d", i, a, b)
		}
	}
}

// FuzzSnappyEncode encodes arbitrary bytes: the encoding stays within
// snappyMaxLen and decodes to them.
func FuzzSnappyEncode(f *testing.F) {
	for _, in := range snappyInputs() {
		if len(in) <= 8<<10 {
			f.Add(in)
		}
	}
	var e snappyEncoder
	f.Fuzz(func(t *testing.T, in []byte) {
		enc := e.encode(nil, in)
		if len(enc) > snappyMaxLen(len(in)) {
			t.Fatalf("%d bytes encoded to %d", len(in), len(enc))
		}
		out, err := snappy.Decode(nil, enc)
		if err != nil || !bytes.Equal(out, in) {
			t.Fatalf("round trip of %d bytes: %v", len(in), err)
		}
	})
}

// BenchmarkSnappyEncode compares the encoder with github.com/golang/snappy
// (assembly on amd64) on db_bench-like 4 KiB blocks.
func BenchmarkSnappyEncode(b *testing.B) {
	rng := rand.New(rand.NewSource(3))
	blocks := make([][]byte, 64)
	for i := range blocks {
		blocks[i] = benchBlock(rng, 4096)
	}
	dst := make([]byte, snappyMaxLen(8192))
	run := func(b *testing.B, enc func(block []byte) int) {
		b.SetBytes(int64(len(blocks[0])))
		n := 0
		for i := 0; i < b.N; i++ {
			n += enc(blocks[i%len(blocks)])
		}
		b.ReportMetric(float64(n)/float64(b.N), "B/block")
	}
	b.Run("shale", func(b *testing.B) {
		var e snappyEncoder
		run(b, func(block []byte) int { return len(e.encode(dst, block)) })
	})
	b.Run("golang-snappy", func(b *testing.B) {
		run(b, func(block []byte) int { return len(snappy.Encode(dst, block)) })
	})
}
