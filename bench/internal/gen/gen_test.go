package gen

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/golang/snappy"
)

func TestFormatKey(t *testing.T) {
	buf := make([]byte, 32)
	for _, n := range []uint64{0, 7, 1234567890, 9999999999999999} {
		got := string(FormatKey(buf, n))
		if want := fmt.Sprintf("%016d", n); got != want {
			t.Errorf("FormatKey(%d) = %q, want %q", n, got, want)
		}
	}
}

// The first outputs of LevelDB's generator seeded with 301, computed by
// hand: 301*16807 = 5058907; 5058907*16807 = 85025049949, which modulo
// 2^31-1 is 1273187716.
func TestParkMillerPinned(t *testing.T) {
	r := NewParkMiller(301)
	for i, want := range []uint32{5058907, 1273187716} {
		if got := r.Next(); got != want {
			t.Fatalf("Next #%d = %d, want %d", i, got, want)
		}
	}
	// Seeds LevelDB replaces with 1.
	for _, s := range []uint32{0, 1<<31 - 1} {
		if got := NewParkMiller(s).Next(); got != 16807 {
			t.Errorf("seed %d: Next = %d, want 16807", s, got)
		}
	}
}

func TestValues(t *testing.T) {
	v := NewValues()
	first := v.Next()
	// 5058907 % 95 = 62, and ' '+62 is '^'.
	if first[0] != '^' {
		t.Errorf("first byte %q, want '^'", first[0])
	}
	pieces := len(v.data) / ValueSize
	if len(v.data) != pieces*ValueSize || len(v.data) < valueBufferSize {
		t.Fatalf("buffer of %d bytes, want whole pieces covering 1 MiB", len(v.data))
	}
	seen := [][]byte{first}
	for i := 1; i <= pieces; i++ {
		seen = append(seen, v.Next())
	}
	for i, val := range seen {
		if len(val) != ValueSize {
			t.Fatalf("value %d has %d bytes", i, len(val))
		}
		if !bytes.Equal(val[:50], val[50:]) {
			t.Fatalf("value %d: second half does not repeat the first: %q", i, val)
		}
		for _, c := range val {
			if c < ' ' || c > '~' {
				t.Fatalf("value %d holds %q, outside the printable range", i, c)
			}
		}
	}
	if bytes.Equal(seen[0], seen[1]) {
		t.Error("consecutive values are equal")
	}
	if !bytes.Equal(seen[pieces], seen[0]) {
		t.Errorf("value %d did not wrap to the first", pieces)
	}
}

// Half of each value repeats, so snappy keeps a little over half of it, as
// db_bench reports for its data.
func TestValuesHalfCompressible(t *testing.T) {
	v := NewValues()
	var raw []byte
	for range 1000 {
		raw = append(raw, v.Next()...)
	}
	ratio := float64(len(snappy.Encode(nil, raw))) / float64(len(raw))
	if ratio < 0.5 || ratio > 0.6 {
		t.Errorf("snappy keeps %.3f of the values, want between 0.5 and 0.6", ratio)
	}
}

func TestKeysUniformSeeded(t *testing.T) {
	const n = 1000
	a, b := NewKeys(n, 1, 2), NewKeys(n, 1, 2)
	counts := make([]int, n)
	for range 100 * n {
		x := a.Next()
		if y := b.Next(); x != y {
			t.Fatal("same seed and stream gave different keys")
		}
		if x >= n {
			t.Fatalf("key %d out of range", x)
		}
		counts[x]++
	}
	for i, c := range counts {
		// 100 expected per key; 40 and 160 are six standard deviations out.
		if c < 40 || c > 160 {
			t.Errorf("key %d drawn %d times in %d draws", i, c, 100*n)
		}
	}
	first := func(k *Keys) (out [8]uint64) {
		for i := range out {
			out[i] = k.Next()
		}
		return out
	}
	base := first(NewKeys(n, 1, 2))
	if first(NewKeys(n, 1, 3)) == base || first(NewKeys(n, 2, 2)) == base {
		t.Error("another seed or stream gives the same keys")
	}
}
