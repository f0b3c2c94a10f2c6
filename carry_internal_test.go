package shale

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/shale-db/shale/memtable"
)

// carried gives back every record in the order added, whatever their
// sizes: many small ones in one chunk, ones that do not fit in what is left
// of a chunk, and ones larger than a chunk (kept apart on the heap); and
// release gives every chunk back.
func TestCarriedKeepsRecordsInOrder(t *testing.T) {
	chunks := memtable.NewChunks(0)
	defer chunks.Close()
	c := carried{chunks: chunks}
	r := rand.New(rand.NewPCG(7, 7))
	var want [][]byte
	for i := 0; i < 3000; i++ {
		n := 12 + r.IntN(200)
		switch i % 500 {
		case 17:
			n = memtable.ChunkSize + r.IntN(1000) // larger than a chunk
		case 18:
			n = memtable.ChunkSize - 5 // fits no chunk with its length
		case 19:
			n = memtable.ChunkSize / 2
		case 20:
			n = 0
		}
		rec := make([]byte, n)
		for j := range rec {
			rec[j] = byte(r.Uint32())
		}
		want = append(want, bytes.Clone(rec))
		c.add(rec)
		clear(rec) // the copy must not alias the caller's buffer
	}
	i := 0
	err := c.each(func(rec []byte) error {
		if i >= len(want) || !bytes.Equal(rec, want[i]) {
			t.Fatalf("record %d: %d bytes, not what was added", i, len(rec))
		}
		i++
		return nil
	})
	if err != nil || i != len(want) {
		t.Fatalf("each gave %d of %d records, %v", i, len(want), err)
	}
	if held, _ := chunks.Stats(); held == 0 {
		t.Fatal("no chunks held before release")
	}
	c.release()
	c.release()
	if held, _ := chunks.Stats(); held != 0 {
		t.Fatalf("%d chunks held after release", held)
	}
}
