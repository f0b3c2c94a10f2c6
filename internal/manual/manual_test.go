package manual

import (
	"math/rand/v2"
	"testing"
)

// Buffers of every size, allocated and freed in random order, never
// overlap: each keeps the pattern written into it until it is freed, and a
// freed one reads as poison.
func TestBuffersDoNotOverlap(t *testing.T) {
	a := &Allocator{Limit: 8 * ChunkSize}
	rng := rand.New(rand.NewPCG(1, 2))
	type buf struct {
		b      []byte
		mapped bool
		fill   byte
	}
	var live []buf
	check := func(x buf) {
		for i, c := range x.b {
			if c != x.fill {
				t.Fatalf("buffer of %d bytes (fill %d): byte %d is %d", len(x.b), x.fill, i, c)
			}
		}
	}
	for step := 0; step < 20000; step++ {
		if len(live) > 0 && rng.IntN(3) == 0 {
			i := rng.IntN(len(live))
			x := live[i]
			check(x)
			live[i] = live[len(live)-1]
			live = live[:len(live)-1]
			if x.mapped {
				a.Free(x.b)
				if x.b[:cap(x.b)][cap(x.b)-1] != 0xdd {
					t.Fatal("freed buffer not poisoned")
				}
			}
			continue
		}
		n := 1 + rng.IntN(MaxSize+100)
		b, mapped := a.Alloc(n)
		if len(b) != n || (mapped && n > MaxSize) {
			t.Fatalf("Alloc(%d) gave %d bytes, mapped %v", n, len(b), mapped)
		}
		x := buf{b, mapped, byte(step)}
		for i := range b {
			b[i] = x.fill
		}
		live = append(live, x)
	}
	for _, x := range live {
		check(x)
		if x.mapped {
			a.Free(x.b)
		}
	}
	if mapped, n := a.Stats(); n != 0 || mapped > a.Limit {
		t.Fatalf("after freeing everything: %d live, %d mapped (limit %d)", n, mapped, a.Limit)
	}
	a.Close()
	if mapped, _ := a.Stats(); mapped != 0 {
		t.Fatalf("%d bytes mapped after Close", mapped)
	}
}

// A Pool hands out buffers of its size, reuses the ones given back up to
// Keep, and poisons them in test binaries.
func TestPool(t *testing.T) {
	p := &Pool{Size: 8192, Keep: 2}
	var bufs []*Buf
	for i := 0; i < 5; i++ {
		b := p.Get()
		if len(b.B) != 8192 {
			t.Fatalf("buffer of %d bytes", len(b.B))
		}
		b.B[0] = byte(i)
		bufs = append(bufs, b)
	}
	for i, b := range bufs {
		if b.B[0] != byte(i) {
			t.Fatalf("buffer %d shared", i)
		}
	}
	if out, free := p.Stats(); out != 5 || free != 0 {
		t.Fatalf("out %d free %d, want 5 and 0", out, free)
	}
	kept := bufs[0]
	for _, b := range bufs {
		b.Put()
	}
	if kept.B[0] != 0xdd {
		t.Fatal("a buffer given back is not poisoned")
	}
	if out, free := p.Stats(); out != 0 || free != 2 {
		t.Fatalf("out %d free %d, want 0 and 2", out, free)
	}
	if b := p.Get(); b != bufs[1] && b != bufs[0] {
		t.Fatal("Get did not reuse a kept buffer")
	}
}

func TestFill(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 511, 512, 4097, 1 << 20} {
		b := make([]byte, n)
		fill(b, 0xdd)
		for i, c := range b {
			if c != 0xdd {
				t.Fatalf("fill of %d bytes: byte %d is %#x", n, i, c)
			}
		}
	}
}

// TestPoisonInShalesTests: shale's own test binaries poison freed memory
// (the tests above rely on it), and know the module they test.
func TestPoisonInShalesTests(t *testing.T) {
	if got := mainModule(); got != "github.com/shale-db/shale" || !poison {
		t.Fatalf("main module %q, poison %v: want shale's, and on", got, poison)
	}
}
