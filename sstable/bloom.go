package sstable

import "encoding/binary"

// Bloom filter parameters. Part of the format; do not change.
const (
	bloomSeed = 0xbc9f1d34
	// hashMul is the multiplier of LevelDB's murmur-like hash.
	hashMul = 0xc6a4a793
	// maxProbes bounds k; a larger last byte marks an encoding this
	// package does not know, which must be treated as "may contain".
	maxProbes = 30
	// minFilterBits is the smallest bloom filter, so that a filter over
	// few keys still has a useful false-positive rate.
	minFilterBits = 64
)

// DefaultBloomBitsPerKey gives about a 1% false-positive rate.
const DefaultBloomBitsPerKey = 10

// MaxBloomBitsPerKey is the largest bits-per-key a filter may be built
// with. Past 43 bits a key the probes stop at 30 and the false-positive
// rate, already below one in ten million, falls no further worth the
// space; a much larger figure would make a filter of gigabytes, or
// overflow its size.
const MaxBloomBitsPerKey = 100

// bloomHash is LevelDB's Hash(data, seed) with the bloom seed: bytes are
// unsigned (the old signed-char variant is what the old filter name marks).
func bloomHash(data []byte) uint32 {
	h := uint32(bloomSeed) ^ uint32(len(data))*hashMul
	for ; len(data) >= 4; data = data[4:] {
		h += binary.LittleEndian.Uint32(data)
		h *= hashMul
		h ^= h >> 16
	}
	switch len(data) {
	case 3:
		h += uint32(data[2]) << 16
		fallthrough
	case 2:
		h += uint32(data[1]) << 8
		fallthrough
	case 1:
		h += uint32(data[0])
		h *= hashMul
		h ^= h >> 24
	}
	return h
}

// bloomProbes returns k for bitsPerKey: bitsPerKey*ln 2, rounded down,
// clamped to [1, 30].
func bloomProbes(bitsPerKey int) int {
	k := bitsPerKey * 69 / 100
	return min(max(k, 1), maxProbes)
}

// appendBloom appends the bloom filter over the keys whose hashes are given:
// max(64, n*bitsPerKey) bits rounded up to whole bytes, then k in a byte.
func appendBloom(dst []byte, hashes []uint32, bitsPerKey int) []byte {
	bits := max(len(hashes)*bitsPerKey, minFilterBits)
	nBytes := (bits + 7) / 8
	bits = nBytes * 8
	start := len(dst)
	dst = append(dst, make([]byte, nBytes)...)
	k := bloomProbes(bitsPerKey)
	dst = append(dst, byte(k))
	filter := dst[start : start+nBytes]
	for _, h := range hashes {
		delta := h>>17 | h<<15 // rotate right 17: the second hash
		for j := 0; j < k; j++ {
			pos := uint64(h) % uint64(bits)
			filter[pos/8] |= 1 << (pos % 8)
			h += delta
		}
	}
	return dst
}

// bloomMayContain reports whether the filter may contain a key with hash
// h. It never reports false for a key the filter was built over.
func bloomMayContain(filter []byte, h uint32) bool {
	if len(filter) < 2 {
		return false
	}
	bits := uint64(len(filter)-1) * 8
	k := int(filter[len(filter)-1])
	if k > maxProbes {
		return true // reserved for other encodings
	}
	delta := h>>17 | h<<15
	for j := 0; j < k; j++ {
		pos := uint64(h) % bits
		if filter[pos/8]&(1<<(pos%8)) == 0 {
			return false
		}
		h += delta
	}
	return true
}
