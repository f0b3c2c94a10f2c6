package shale

import (
	"bytes"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/shale-db/shale/internal/filename"
	"github.com/shale-db/shale/internal/vfs"
)

// carryRecords returns n records of the sizes a WAL carried forward at
// Open holds (batches of one put; with large, some larger ones that span
// blocks), and what is appended after them.
func carryRecords(n int, large bool) (carriedRecs, after [][]byte) {
	r := rand.New(rand.NewPCG(3, 9))
	rec := func() []byte {
		n := 20 + r.IntN(150)
		if large && r.IntN(50) == 0 {
			n = 1000 + r.IntN(70<<10)
		}
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return b
	}
	for range n {
		carriedRecs = append(carriedRecs, rec())
	}
	// About 100 KB: past the 64 KiB that are zeroed ahead of after a
	// sync.
	for range 1000 {
		after = append(after, rec())
	}
	return carriedRecs, after
}

// writeCarriedLog creates WAL num in dir, writes recs to it with appendAll
// (or append, record by record, if bulk is false), syncs, calls check,
// appends after record by record, calls check again and finishes the log.
// It returns the log's bytes.
func writeCarriedLog(t *testing.T, dir string, num uint64, bulk bool, recs, after [][]byte, check func(name, when string)) []byte {
	t.Helper()
	db := &DB{dir: dir, fs: vfs.OS()}
	l, err := db.openLog(num, 0)
	if err != nil {
		t.Fatal(err)
	}
	l.setReady(nil)
	if bulk {
		err = l.appendAll(func(fn func([]byte) error) error {
			for _, r := range recs {
				if err := fn(r); err != nil {
					return err
				}
			}
			return nil
		})
	} else {
		for _, r := range recs {
			if err = l.append(r); err != nil {
				break
			}
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := l.sync(); err != nil {
		t.Fatal(err)
	}
	name := filename.Make(dir, filename.Log, num)
	if check != nil {
		check(name, "after carrying them")
	}
	for _, r := range after {
		if err := l.append(r); err != nil {
			t.Fatal(err)
		}
	}
	if check != nil {
		check(name, "after the appends that follow")
	}
	if err := l.finish(); err != nil {
		t.Fatal(err)
	}
	if err := l.close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if got := l.size.Load(); got != int64(len(b)) {
		t.Fatalf("the log's size is kept as %d, but it has %d bytes", got, len(b))
	}
	return b
}

// Records carried forward in whole blocks make the same log, byte for
// byte, as the same records appended one at a time, and the appends after
// them continue it where they would have.
func TestCarriedLogIsTheSameLog(t *testing.T) {
	dir := t.TempDir()
	recs, after := carryRecords(3000, true)
	one := writeCarriedLog(t, dir, 1, false, recs, after, nil)
	bulk := writeCarriedLog(t, dir, 2, true, recs, after, nil)
	if !bytes.Equal(one, bulk) {
		i := 0
		for i < min(len(one), len(bulk)) && one[i] == bulk[i] {
			i++
		}
		t.Fatalf("the logs differ from offset %d (%d and %d bytes)", i, len(one), len(bulk))
	}
}
