package sstable

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand"
	"testing"

	"github.com/shale-db/shale/internal/ikey"
	"github.com/shale-db/shale/internal/iterator"
)

// blockAdapter gives a blockIter the iterator.Iterator methods it lacks.
type blockAdapter struct{ *blockIter }

var _ iterator.Iterator = blockAdapter{}

func (b blockAdapter) Key() []byte {
	if !b.valid {
		return nil
	}
	return b.key
}
func (b blockAdapter) Value() []byte { return b.val }
func (b blockAdapter) Err() error    { return b.err }
func (b blockAdapter) Close() error  { return b.err }

func buildBlock(entries []kv, restartInterval int) []byte {
	w := blockWriter{restartInterval: restartInterval}
	for _, e := range entries {
		w.add(e.key, e.val)
	}
	return append([]byte(nil), w.finish()...)
}

func TestBlockRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	// 600 entries make a block past maxTouched, whose seeks touch only the
	// restart interval they scan (seekStart).
	for _, n := range []int{0, 1, 2, 15, 16, 17, 33, 200, 600} {
		for _, ri := range []int{1, 2, 16, 64} {
			t.Run(fmt.Sprintf("n=%d/restart=%d", n, ri), func(t *testing.T) {
				model := randomEntries(rng, n, 40)
				b := buildBlock(model, ri)
				if n == 600 && len(b) <= maxTouched {
					t.Fatalf("a block of %d bytes: want one past maxTouched", len(b))
				}
				if got, want := binary.LittleEndian.Uint32(b[len(b)-4:]), (max(n, 1)+ri-1)/ri; int(got) != want {
					t.Fatalf("restart count %d for %d entries every %d, want %d", got, n, ri, want)
				}
				var it blockIter
				if err := it.init(b, true, "test", 0); err != nil {
					t.Fatal(err)
				}
				checkIter(t, blockAdapter{&it}, model, probeKeys(model), rng)
			})
		}
	}
}

func TestBlockPrefixSharing(t *testing.T) {
	keys := []string{"apple#3,PUT", "apple#2,PUT", "applesauce#9,PUT", "b#1,DEL"}
	var model []kv
	for _, k := range keys {
		model = append(model, kv{ikey.ParseString(k), []byte("v")})
	}
	b := buildBlock(model, 16)
	// Entry 0 is whole: 13 key bytes. Entry 1 shares "apple" and the
	// trailer's first byte (the kind, 1, in the low byte of seq<<8|kind)
	// and stores the 7 bytes that remain.
	if b[0] != 0 || b[1] != 13 || b[2] != 1 {
		t.Fatalf("first entry header % x", b[:3])
	}
	second := 3 + 13 + 1
	if b[second] != 6 || b[second+1] != 7 {
		t.Fatalf("second entry header % x", b[second:second+3])
	}
}

func corruptBlock(entries []byte, restarts ...uint32) []byte {
	b := append([]byte(nil), entries...)
	for _, r := range restarts {
		b = binary.LittleEndian.AppendUint32(b, r)
	}
	return binary.LittleEndian.AppendUint32(b, uint32(len(restarts)))
}

func TestBlockCorrupt(t *testing.T) {
	key := ikey.ParseString("k#1,PUT") // 9 bytes
	entry := append([]byte{0, byte(len(key)), 1}, append(key, 'v')...)
	for name, b := range map[string][]byte{
		"too short":           {1, 0},
		"restart count huge":  {0, 0, 0, 0, 0xff, 0xff, 0xff, 0x0f},
		"no restarts":         append(append([]byte(nil), entry...), 0, 0, 0, 0),
		"restart past end":    corruptBlock(entry, 100),
		"entry overruns":      corruptBlock([]byte{0, 50, 1, 'k'}, 0),
		"value overruns":      corruptBlock(append([]byte{0, byte(len(key)), 100}, key...), 0),
		"bad varint":          corruptBlock([]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80}, 0),
		"restart shares":      corruptBlock(append([]byte{3, byte(len(key)), 1}, append(key, 'v')...), 0),
		"short internal key":  corruptBlock([]byte{0, 3, 1, 'a', 'b', 'c', 'v'}, 0),
		"shares beyond key":   corruptBlock(append(append([]byte(nil), entry...), 20, 1, 0, 'x'), 0),
		"second restart bad":  corruptBlock(append(append([]byte(nil), entry...), entry...), 0, 1),
		"huge varint lengths": corruptBlock([]byte{0, 0xff, 0xff, 0xff, 0xff, 0x0f, 0}, 0),
	} {
		t.Run(name, func(t *testing.T) {
			var it blockIter
			err := it.init(b, true, "f.ldb", 77)
			if err == nil {
				// Damage inside the entries shows up when iterating.
				n := 0
				for ok := it.First(); ok; ok = it.Next() {
					n++
				}
				for ok := it.Last(); ok; ok = it.Prev() {
					n++
				}
				it.err = nil
				it.SeekGE(key)
				err = it.err
				if err == nil {
					it.SeekLT(ikey.ParseString("z#1,PUT"))
					err = it.err
				}
			}
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("got %v, want ErrCorrupt", err)
			}
			var te *TableError
			if !errors.As(err, &te) || te.File != "f.ldb" || te.Offset != 77 {
				t.Fatalf("error %v does not name the file and block", err)
			}
		})
	}
}

// A block iterator gives up, at its next block, the entries Prev kept of a
// restart interval of long keys, and keeps those of ordinary ones.
func TestBlockIterDropsLargeBehind(t *testing.T) {
	build := func(keyLen int) []byte {
		var model []kv
		for i := 0; i < 40; i++ {
			u := fmt.Sprintf("%0*d", keyLen, i)
			model = append(model, kv{ikey.Make([]byte(u), 1, ikey.KindSet), []byte("v")})
		}
		return buildBlock(model, 64)
	}
	var it blockIter
	for _, tc := range []struct {
		keyLen int
		kept   bool
	}{{10, true}, {4 << 10, false}} {
		if err := it.init(build(tc.keyLen), true, "test", 0); err != nil {
			t.Fatal(err)
		}
		n := 0
		for ok := it.Last(); ok; ok = it.Prev() {
			n++
		}
		if n != 40 || it.err != nil {
			t.Fatalf("key length %d: backward pass saw %d entries, err %v", tc.keyLen, n, it.err)
		}
		if cap(it.behindKeys) == 0 {
			t.Fatalf("key length %d: Prev kept no entries", tc.keyLen)
		}
		if err := it.init(build(10), true, "test", 0); err != nil {
			t.Fatal(err)
		}
		if kept := cap(it.behindKeys) > 0; kept != tc.kept {
			t.Fatalf("key length %d: buffer of %d bytes kept = %v, want %v", tc.keyLen, cap(it.behindKeys), kept, tc.kept)
		}
	}
}
