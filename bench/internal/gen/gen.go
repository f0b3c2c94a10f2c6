// Package gen makes db_bench's data: keys formatted as 16 decimal digits,
// 100-byte values of which half repeats, and seeded uniform random key
// numbers.
//
// The values are those of LevelDB's db_bench, byte for byte: a 1 MiB buffer
// filled, 100 bytes at a time, with 50 random printable characters (from
// LevelDB's Park-Miller generator seeded with 301) followed by the same 50
// again, and handed out as consecutive 100-byte windows that wrap to the
// start. Compressed with snappy, a value takes a little over half its size.
//
// Nothing in this package is safe for concurrent use; give each goroutine its
// own Values and Keys.
package gen

import "math/rand/v2"

// KeySize and ValueSize are db_bench's defaults; UserBytes is what one put
// hands to a store, the denominator of write amplification.
const (
	KeySize   = 16
	ValueSize = 100
	UserBytes = KeySize + ValueSize
)

// FormatKey writes n as 16 decimal digits, zero-padded (fmt's "%016d"), into
// buf and returns buf[:16]. buf must have room for 16 bytes; n must be below
// 10^16.
func FormatKey(buf []byte, n uint64) []byte {
	buf = buf[:KeySize]
	for i := KeySize - 1; i >= 0; i-- {
		buf[i] = byte('0' + n%10)
		n /= 10
	}
	return buf
}

// ParkMiller is LevelDB's util/random.h generator: a multiplicative
// congruential generator modulo 2^31-1 with multiplier 16807.
type ParkMiller struct{ seed uint32 }

const parkMillerM = 1<<31 - 1

// NewParkMiller returns a generator seeded as LevelDB seeds one: the seed is
// taken modulo 2^31 and 0 or 2^31-1 become 1.
func NewParkMiller(seed uint32) *ParkMiller {
	s := seed & parkMillerM
	if s == 0 || s == parkMillerM {
		s = 1
	}
	return &ParkMiller{seed: s}
}

// Next returns the next number, in [1, 2^31-2].
func (r *ParkMiller) Next() uint32 {
	product := uint64(r.seed) * 16807
	// (product >> 31) + (product & M) is product mod M, computed without a
	// division because 2^31 is 1 modulo M.
	s := (product >> 31) + (product & parkMillerM)
	if s > parkMillerM {
		s -= parkMillerM
	}
	r.seed = uint32(s)
	return r.seed
}

// Uniform returns a number in [0, n).
func (r *ParkMiller) Uniform(n uint32) uint32 { return r.Next() % n }

// valueBufferSize is the size of db_bench's value buffer before rounding up
// to a whole number of 100-byte pieces.
const valueBufferSize = 1 << 20

// Values hands out db_bench's values.
type Values struct {
	data []byte
	pos  int
}

// NewValues returns db_bench's value generator for 100-byte values with a
// compressible fraction of one half.
func NewValues() *Values {
	rnd := NewParkMiller(301)
	data := make([]byte, 0, valueBufferSize+ValueSize)
	for len(data) < valueBufferSize {
		data = appendCompressible(data, rnd, 0.5, ValueSize)
	}
	return &Values{data: data}
}

// appendCompressible appends n bytes of which the first n*fraction are random
// printable characters and the rest repeat them (LevelDB's
// CompressibleString).
func appendCompressible(dst []byte, rnd *ParkMiller, fraction float64, n int) []byte {
	raw := int(float64(n) * fraction)
	if raw < 1 {
		raw = 1
	}
	start := len(dst)
	for range raw {
		dst = append(dst, byte(' '+rnd.Uniform(95)))
	}
	for len(dst)-start < n {
		dst = append(dst, dst[start:start+raw]...)
	}
	return dst[:start+n]
}

// Next returns the next 100-byte value. The slice stays valid and unchanged
// for the life of v: it is a window of a buffer that is never written again.
func (v *Values) Next() []byte {
	if v.pos+ValueSize > len(v.data) {
		v.pos = 0
	}
	v.pos += ValueSize
	return v.data[v.pos-ValueSize : v.pos : v.pos]
}

// Keys draws key numbers uniformly from [0, n), with repeats, from a seeded
// PCG: the same seed and stream give the same sequence.
type Keys struct {
	r *rand.Rand
	n uint64
}

// NewKeys returns a source of key numbers below n.
func NewKeys(n int, seed, stream uint64) *Keys {
	return &Keys{r: rand.New(rand.NewPCG(seed, stream)), n: uint64(max(n, 1))}
}

// Next returns the next key number.
func (k *Keys) Next() uint64 { return k.r.Uint64N(k.n) }
