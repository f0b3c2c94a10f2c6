// Tests that shale's wal package reads and writes the same bytes as
// goleveldb's leveldb/journal and Pebble's record package (its
// record.Writer, which writes LevelDB's fragment types).
package interop

import (
	"bytes"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/record"
	"github.com/shale-db/shale/wal"
	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/journal"
)

// walRandomRecords returns records of random sizes, skewed towards small
// ones, with some spanning blocks and some ending near block boundaries.
func walRandomRecords(rng *rand.Rand, n int) [][]byte {
	recs := make([][]byte, n)
	for i := range recs {
		var size int
		switch rng.IntN(8) {
		case 0:
			size = rng.IntN(3 * wal.BlockSize)
		case 1:
			size = wal.BlockSize - 2*wal.HeaderSize + rng.IntN(10) - 5
		case 2:
			size = 0
		default:
			size = rng.IntN(1 << rng.IntN(13))
		}
		recs[i] = make([]byte, size)
		for j := range recs[i] {
			recs[i][j] = byte(rng.Uint32())
		}
	}
	return recs
}

// flushPoints says after which records a writer flushes.
func flushPoints(rng *rand.Rand, n int) []bool {
	f := make([]bool, n)
	for i := range f {
		f[i] = rng.IntN(4) == 0
	}
	return f
}

func walWriteShale(t testing.TB, recs [][]byte, flush []bool) []byte {
	var buf bytes.Buffer
	w := wal.NewWriter(&buf)
	for i, r := range recs {
		if err := w.WriteRecord(r); err != nil {
			t.Fatal(err)
		}
		if flush[i] {
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func walWriteGoleveldb(t testing.TB, recs [][]byte, flush []bool) []byte {
	var buf bytes.Buffer
	w := journal.NewWriter(&buf)
	for i, r := range recs {
		rw, err := w.Next()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rw.Write(r); err != nil {
			t.Fatal(err)
		}
		if flush[i] {
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func walWritePebble(t testing.TB, recs [][]byte, flush []bool) []byte {
	var buf bytes.Buffer
	w := record.NewWriter(&buf)
	for i, r := range recs {
		if _, err := w.WriteRecord(r); err != nil {
			t.Fatal(err)
		}
		if flush[i] {
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// walReadShale reads log with wal.Reader in strict mode, failing on any drop.
func walReadShale(t testing.TB, log []byte) [][]byte {
	t.Helper()
	r := wal.NewReader(bytes.NewReader(log), wal.Strict(),
		wal.OnDrop(func(d wal.Drop) { t.Fatalf("drop: %v", d) }))
	var out [][]byte
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, bytes.Clone(rec))
	}
}

func walReadGoleveldb(t testing.TB, log []byte) [][]byte {
	t.Helper()
	r := journal.NewReader(bytes.NewReader(log), nil, true, true)
	var out [][]byte
	for {
		rr, err := r.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		rec, err := io.ReadAll(rr)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rec)
	}
}

func walReadPebble(t testing.TB, log []byte) [][]byte {
	t.Helper()
	r := record.NewReader(bytes.NewReader(log), 0)
	var out [][]byte
	for {
		rr, err := r.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		rec, err := io.ReadAll(rr)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rec)
	}
}

func walEqualRecords(t testing.TB, who string, got, want [][]byte) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d records, want %d", who, len(got), len(want))
	}
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("%s: record %d differs (%d bytes, want %d)", who, i, len(got[i]), len(want[i]))
		}
	}
}

// TestWALSameBytes: for random record sequences and flush points, shale,
// goleveldb and Pebble write identical logs, and each reads every log.
func TestWALSameBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for round := range 40 {
		recs := walRandomRecords(rng, 1+rng.IntN(60))
		flush := flushPoints(rng, len(recs))
		ours := walWriteShale(t, recs, flush)
		if theirs := walWriteGoleveldb(t, recs, flush); !bytes.Equal(ours, theirs) {
			t.Fatalf("round %d: goleveldb wrote %d bytes, shale %d, not identical", round, len(theirs), len(ours))
		}
		if theirs := walWritePebble(t, recs, flush); !bytes.Equal(ours, theirs) {
			t.Fatalf("round %d: pebble wrote %d bytes, shale %d, not identical", round, len(theirs), len(ours))
		}
		walEqualRecords(t, "shale reads", walReadShale(t, ours), recs)
		walEqualRecords(t, "goleveldb reads shale's log", walReadGoleveldb(t, ours), recs)
		walEqualRecords(t, "pebble reads shale's log", walReadPebble(t, ours), recs)
	}
}

// TestWALBoundaries: the same, for a record that lands in each of the last
// few bytes of a block.
func TestWALBoundaries(t *testing.T) {
	for left := 0; left <= 10; left++ {
		for _, size := range []int{0, 1, 100, wal.BlockSize} {
			recs := [][]byte{
				make([]byte, wal.BlockSize-wal.HeaderSize-left), // leaves `left` bytes
				bytes.Repeat([]byte{'x'}, size),
				[]byte("tail"),
			}
			flush := make([]bool, len(recs))
			ours := walWriteShale(t, recs, flush)
			for who, theirs := range map[string][]byte{
				"goleveldb": walWriteGoleveldb(t, recs, flush),
				"pebble":    walWritePebble(t, recs, flush),
			} {
				if !bytes.Equal(ours, theirs) {
					t.Fatalf("left %d, size %d: %s's bytes differ", left, size, who)
				}
			}
			walEqualRecords(t, "shale reads", walReadShale(t, ours), recs)
		}
	}
}

// TestWALReadsGoleveldbDB reads the .log and MANIFEST files of a database
// that goleveldb wrote, with no damage and no torn tail.
func TestWALReadsGoleveldbDB(t *testing.T) {
	dir := t.TempDir()
	db, err := leveldb.OpenFile(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2000 {
		key := []byte(strings.Repeat("k", i%50) + string(rune('a'+i%26)))
		if err := db.Put(key, bytes.Repeat([]byte{byte(i)}, i%3000), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	manifests, _ := filepath.Glob(filepath.Join(dir, "MANIFEST-*"))
	if len(files) == 0 || len(manifests) == 0 {
		t.Fatalf("no log or MANIFEST in %s", dir)
	}
	total := 0
	for _, name := range append(files, manifests...) {
		log, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		recs := walReadShale(t, log)
		walEqualRecords(t, "goleveldb's reader vs shale's on "+filepath.Base(name), recs, walReadGoleveldb(t, log))
		total += len(recs)
	}
	if total < 2 {
		t.Fatalf("only %d records in goleveldb's files", total)
	}
}
