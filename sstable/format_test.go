package sstable

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

// The constants below were computed by hand (a separate script following
// LevelDB's definitions), not by this package.

func TestFormatConstants(t *testing.T) {
	if Magic != 0xdb4775248b80fb57 || FooterLen != 48 || TrailerLen != 5 {
		t.Fatalf("format constants changed: magic %#x footer %d trailer %d", Magic, FooterLen, TrailerLen)
	}
	if FilterMetaKey != "filter.leveldb.BuiltinBloomFilter2" || oldFilterMetaKey != "filter.leveldb.BuiltinBloomFilter" {
		t.Fatal("filter names changed")
	}
	if blockTypeNone != 0 || blockTypeSnappy != 1 || blockTypeZstd != 2 || leveldbFilterBaseLg != 11 {
		t.Fatal("block type or filter base changed")
	}
}

func TestFooterEncoding(t *testing.T) {
	f := Footer{MetaIndex: BlockHandle{1000, 50}, Index: BlockHandle{1055, 30}}
	got := appendFooter(nil, f)
	want, _ := hex.DecodeString("e807329f081e" + // varint 1000, 50, 1055, 30
		strings.Repeat("00", 40-6) + // zero padding to 40 bytes
		"57fb808b247547db") // magic, little-endian
	if !bytes.Equal(got, want) {
		t.Fatalf("footer\n got %x\nwant %x", got, want)
	}
	back, reason := decodeFooter(got)
	if reason != "" || back != f {
		t.Fatalf("decode: %+v %q", back, reason)
	}
	bad := append([]byte(nil), got...)
	bad[47] ^= 1
	if _, reason := decodeFooter(bad); reason == "" {
		t.Fatal("bad magic accepted")
	}
}

func TestBlockChecksum(t *testing.T) {
	// crc32c("\x00") = 0x527d5351; masked: rotate right 15, add 0xa282ead8.
	if got := blockChecksum(nil, 0); got != 0x49258fd2 {
		t.Fatalf("checksum of empty block = %#x", got)
	}
	// An empty block (restart 0, count 1) with type 0.
	empty := []byte{0, 0, 0, 0, 1, 0, 0, 0}
	if got := blockChecksum(empty, blockTypeNone); got != 0xb0a1f2c0 {
		t.Fatalf("checksum of empty data block = %#x", got)
	}
	var bw blockWriter
	bw.restartInterval = 16
	if got := bw.finish(); !bytes.Equal(got, empty) {
		t.Fatalf("empty block = %x", got)
	}
}

func TestBloomHashValues(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint32
	}{
		{"", 0xbc9f1d34}, // the seed: no bytes mixed in
		{"\x62", 0xef1345c4},
		{"\xc3\x97", 0x5b663814}, // bytes >= 0x80 hash unsigned
		{"\xe2\x99\xa5", 0x323c078f},
		{"\xe1\x80\xb9\x32", 0xed21633a},
		{"\x08", 422599524},
		{"\x4d\x76", 2447836956},
		{"\x30\x46\x0b", 3808221797},
		{"\x67\x53\x81\x1c", 118283265},
		{"\xd0\x7a\x6e\xea\x56", 4255445370},
		{"hello", 0xf795964e},
	} {
		if got := bloomHash([]byte(tc.in)); got != tc.want {
			t.Errorf("hash(%x) = %#x want %#x", tc.in, got, tc.want)
		}
	}
}

func TestBloomFilterBytes(t *testing.T) {
	hashes := func(keys ...string) []uint32 {
		var hs []uint32
		for _, k := range keys {
			hs = append(hs, bloomHash([]byte(k)))
		}
		return hs
	}
	// One key at 10 bits/key: 64 bits (the minimum), k = 6.
	if got := hex.EncodeToString(appendBloom(nil, hashes("hello"), 10)); got != "014000010410400006" {
		t.Fatalf("bloom(hello) = %s", got)
	}
	if got := hex.EncodeToString(appendBloom(nil, hashes("hello", "world"), 10)); got != "114000414410401006" {
		t.Fatalf("bloom(hello, world) = %s", got)
	}
	for bits, k := range map[int]int{1: 1, 2: 1, 10: 6, 20: 13, 44: 30, 100: 30} {
		if got := bloomProbes(bits); got != k {
			t.Errorf("probes(%d) = %d want %d", bits, got, k)
		}
	}
}

func TestTableErrorMatches(t *testing.T) {
	var err error = &TableError{File: "000007.ldb", Offset: 4096, Reason: "block checksum mismatch", Err: ErrCorrupt}
	if !errors.Is(err, ErrCorrupt) || errors.Is(err, ErrUnsupported) {
		t.Fatal("standard errors.Is does not match the sentinel")
	}
	if got := err.Error(); got != "sstable: 000007.ldb: offset 4096: block checksum mismatch" {
		t.Fatalf("message %q", got)
	}
}
