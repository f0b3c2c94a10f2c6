// Tests and helpers for directories that span several levels, moved
// between shale and goleveldb (and, behind the leveldb_cgo tag, LevelDB):
// each side reads every key the other wrote, then compacts the other's
// tables, and the first reads the result.
package interop

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/shale-db/shale"
	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/opt"
	"github.com/syndtr/goleveldb/leveldb/util"
)

// bulkKey returns key i of a bulk history: key%06d, and for one in five
// "é" after it, so that a key's last bytes (those LevelDB's hash reads one
// at a time) include bytes above 0x7f.
func bulkKey(i int) []byte {
	k := fmt.Appendf(nil, "key%06d", i)
	if i%5 == 0 {
		k = append(k, "é"...)
	}
	return k
}

// bulkOps returns batches of 1 to 8 operations on n keys bulkKey(i) for i
// in [lo, hi): in ascending order if seq, else at random, every delEvery-th a
// delete (none if delEvery is 0). Values are 100 to 300 bytes, half of them
// random, so that snappy halves them as db_bench's do.
func bulkOps(r *rand.Rand, n, lo, hi int, seq bool, delEvery int) []dbOp {
	var ops []dbOp
	for i := 0; i < n; {
		var op dbOp
		for j := 1 + r.IntN(8); j > 0 && i < n; j-- {
			k := lo + i%(hi-lo)
			if !seq {
				k = lo + r.IntN(hi-lo)
			}
			i++
			if delEvery > 0 && i%delEvery == 0 {
				op.deletes = append(op.deletes, bulkKey(k))
				continue
			}
			v := make([]byte, 100+r.IntN(201))
			half := len(v) / 2
			for j := range half {
				v[j] = byte(r.Uint32())
			}
			copy(v[half:], v[:half])
			op.puts = append(op.puts, [2][]byte{bulkKey(k), v})
		}
		ops = append(ops, op)
	}
	return ops
}

// probeKeys returns every key ops touch, the keys bulkKey(i) for i in [0,
// hi), and for each a key just after it that no history writes: the reads
// that must find nothing, so that a table's filter is asked about keys it
// does not hold.
func probeKeys(ops []dbOp, hi int) [][]byte {
	seen := map[string]bool{}
	add := func(k []byte) {
		seen[string(k)] = true
		seen[string(k)+"\x00~"] = true
	}
	for _, op := range ops {
		for _, kv := range op.puts {
			add(kv[0])
		}
		for _, k := range op.deletes {
			add(k)
		}
	}
	for i := range hi {
		add(bulkKey(i))
	}
	var out [][]byte
	for k := range seen {
		out = append(out, []byte(k))
	}
	slices.SortFunc(out, bytes.Compare)
	return out
}

// checkGets reads every probe through get and compares it with want: a
// key of want that reads as absent is a false negative (a filter or an
// index that lost it), an absent key that reads as present is stale data.
func checkGets(t *testing.T, what string, get func([]byte) ([]byte, error), notFound error, want map[string]string, probes [][]byte) {
	t.Helper()
	present := 0
	for _, k := range probes {
		v, err := get(k)
		w, ok := want[string(k)]
		switch {
		case ok && errors.Is(err, notFound):
			t.Fatalf("%s: Get(%q) found nothing, want a value of %d bytes (a false negative)", what, k, len(w))
		case err != nil && !errors.Is(err, notFound):
			t.Fatalf("%s: Get(%q): %v", what, k, err)
		case !ok && err == nil:
			t.Fatalf("%s: Get(%q) = %.30q, want not found (a deleted or never written key)", what, k, v)
		case ok && string(v) != w:
			t.Fatalf("%s: Get(%q) = %.30q, want %.30q", what, k, v, w)
		}
		if ok {
			present++
		}
	}
	if present == 0 || present == len(probes) {
		t.Fatalf("%s: %d of %d probes present: the test must read both present and absent keys", what, present, len(probes))
	}
}

// diskTables returns the tables the MANIFEST in dir lists, read by a
// read-only shale Open, which writes and compacts nothing: the shape the
// last writer left on disk.
func diskTables(t *testing.T, dir string) []shale.TableInfo {
	t.Helper()
	db, err := shale.Open(dir, &shale.Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("read-only open of %s: %v", dir, err)
	}
	defer db.Close()
	st, err := db.Stats()
	if err != nil {
		t.Fatal(err)
	}
	return st.Tables
}

// levelShape returns the count of tables in each level.
func levelShape(tables []shale.TableInfo) [shale.NumLevels]int {
	var n [shale.NumLevels]int
	for _, tb := range tables {
		n[tb.Level]++
	}
	return n
}

// requireLevels fails unless tables fill at least minLevels levels, one of
// them at or below deepest.
func requireLevels(t *testing.T, what string, tables []shale.TableInfo, minLevels, deepest int) {
	t.Helper()
	shape := levelShape(tables)
	filled, maxLevel := 0, 0
	for level, n := range shape {
		if n > 0 {
			filled++
			maxLevel = level
		}
	}
	t.Logf("%s: tables per level %v", what, shape)
	if filled < minLevels || maxLevel < deepest {
		t.Fatalf("%s: tables per level %v; the test needs %d levels, down to level %d at least", what, shape, minLevels, deepest)
	}
}

// tableNums returns the file numbers of tables.
func tableNums(tables []shale.TableInfo) map[uint64]bool {
	m := map[uint64]bool{}
	for _, tb := range tables {
		m[tb.FileNum] = true
	}
	return m
}

func applyShaleOps(t *testing.T, db *shale.DB, ops []dbOp) {
	t.Helper()
	for _, op := range ops {
		if err := op.applyShale(db); err != nil {
			t.Fatal(err)
		}
	}
}

func applyGoleveldbOps(t *testing.T, db *leveldb.DB, ops []dbOp) {
	t.Helper()
	for _, op := range ops {
		if err := op.applyGoleveldb(db); err != nil {
			t.Fatal(err)
		}
	}
}

func shaleGet(db *shale.DB) func([]byte) ([]byte, error) { return db.Get }

func goleveldbGet(db *leveldb.DB) func([]byte) ([]byte, error) {
	return func(k []byte) ([]byte, error) { return db.Get(k, nil) }
}

// goleveldb writes a directory across levels 0 to 2 (with deletions and a
// live WAL); shale reads it, writes, and compacts part of it, so that its
// tables sit beside goleveldb's in level 2; goleveldb reads that, writes,
// and compacts everything, shale's tables included; shale reads the result
// and compacts it all; goleveldb reads it last.
func TestGoleveldbAndShaleCompactEachOthersLevels(t *testing.T) {
	const keys = 20000
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(20, 20))
	ops := writeGoleveldbLevels(t, dir, r, keys)
	gtables := diskTables(t, dir)
	requireLevels(t, "goleveldb's directory", gtables, 2, 2)

	ops = shaleCompactsUpperHalf(t, dir, r, keys, ops)
	stables := diskTables(t, dir)
	requireShaleTables(t, stables, tableNums(gtables))

	probes := probeKeys(ops, keys+1000)
	gdb, err := leveldb.OpenFile(dir, &opt.Options{ErrorIfMissing: true, WriteBuffer: 64 << 10})
	if err != nil {
		t.Fatalf("goleveldb cannot open the directory shale compacted: %v", err)
	}
	checkGets(t, "goleveldb reading shale's compaction", goleveldbGet(gdb), leveldb.ErrNotFound, model(ops), probes)
	sameScan(t, "goleveldb reading shale's compaction", scanGoleveldb(t, gdb), sortedModel(model(ops)))
	more := bulkOps(r, 3000, 0, keys+1000, false, 4)
	applyGoleveldbOps(t, gdb, more)
	ops = append(ops, more...)
	if err := gdb.CompactRange(util.Range{}); err != nil {
		t.Fatal(err)
	}
	if err := gdb.Close(); err != nil {
		t.Fatal(err)
	}
	if kept := countKept(diskTables(t, dir), stables); kept == len(stables) {
		t.Fatalf("goleveldb's CompactRange rewrote none of shale's %d tables", len(stables))
	}

	db, err := shale.Open(dir, &shale.Options{WriteBufferSize: 64 << 10})
	if err != nil {
		t.Fatalf("shale cannot reopen after goleveldb compacted: %v", err)
	}
	checkGets(t, "shale reading goleveldb's compaction", shaleGet(db), shale.ErrNotFound, model(ops), probes)
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	sameScan(t, "shale after compacting everything", scanShale(t, db), sortedModel(model(ops)))
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	gdb, err = leveldb.OpenFile(dir, &opt.Options{ErrorIfMissing: true})
	if err != nil {
		t.Fatal(err)
	}
	defer gdb.Close()
	sameScan(t, "goleveldb last", scanGoleveldb(t, gdb), sortedModel(model(ops)))
	checkGets(t, "goleveldb last", goleveldbGet(gdb), leveldb.ErrNotFound, model(ops), probes)
}

// writeGoleveldbLevels writes keys keys in order through goleveldb, then
// overwrites and deletes at random in the first quarter, and leaves the
// last writes in the WAL.
func writeGoleveldbLevels(t *testing.T, dir string, r *rand.Rand, keys int) []dbOp {
	t.Helper()
	// Level targets of 320 KiB, 3.2 MiB, 32 MiB..., so that a few MiB
	// reach level 2.
	gopts := &opt.Options{WriteBuffer: 64 << 10, CompactionTableSize: 128 << 10, CompactionTotalSize: 32 << 10}
	gdb, err := leveldb.OpenFile(dir, gopts)
	if err != nil {
		t.Fatal(err)
	}
	ops := bulkOps(r, keys, 0, keys, true, 0)
	// At random over the first quarter: tables in level 0 and level 1
	// above those of level 2.
	ops = append(ops, bulkOps(r, 3000, 0, keys/4, false, 4)...)
	ops = append(ops, bulkOps(r, 200, 0, keys/4, false, 3)...) // the WAL
	applyGoleveldbOps(t, gdb, ops)
	if err := gdb.Close(); err != nil {
		t.Fatal(err)
	}
	return ops
}

// shaleCompactsUpperHalf opens dir in shale, reads every key of ops, then
// writes and compacts in the upper half, and leaves writes in its WAL. It
// returns ops with shale's writes.
func shaleCompactsUpperHalf(t *testing.T, dir string, r *rand.Rand, keys int, ops []dbOp) []dbOp {
	t.Helper()
	db, err := shale.Open(dir, &shale.Options{WriteBufferSize: 64 << 10})
	if err != nil {
		t.Fatalf("shale cannot open goleveldb's directory: %v", err)
	}
	probes := probeKeys(ops, keys+1000)
	checkGets(t, "shale reading goleveldb", shaleGet(db), shale.ErrNotFound, model(ops), probes)
	sameScan(t, "shale reading goleveldb", scanShale(t, db), sortedModel(model(ops)))
	// Writes and a compaction in the upper half only, so that goleveldb's
	// tables of the first quarter stay (unless shale compacts them by
	// itself). Manual compaction widens its range to whole tables, at
	// every level, until no table straddles its bounds.
	more := bulkOps(r, 4000, keys/2, keys+1000, false, 4)
	applyShaleOps(t, db, more)
	ops = append(ops, more...)
	if err := db.Compact(bulkKey(keys/2), bulkKey(keys*3/4)); err != nil {
		t.Fatal(err)
	}
	more = bulkOps(r, 200, 0, keys, false, 3) // the WAL
	applyShaleOps(t, db, more)
	ops = append(ops, more...)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return ops
}

// requireShaleTables fails unless tables holds a table shale wrote (one
// not in theirs) at level 2 or below.
func requireShaleTables(t *testing.T, tables []shale.TableInfo, theirs map[uint64]bool) {
	t.Helper()
	ours, kept := 0, 0
	var desc []string
	for _, tb := range tables {
		switch {
		case theirs[tb.FileNum]:
			kept++
		case tb.Level >= 2:
			ours++
		}
		desc = append(desc, fmt.Sprintf("L%d:%06d", tb.Level, tb.FileNum))
	}
	t.Logf("after shale's compaction: %d of shale's tables at level 2 or below, %d of the other's kept (%s)",
		ours, kept, strings.Join(desc, " "))
	if ours == 0 {
		t.Fatal("shale wrote no table at level 2 or below: the test needs one")
	}
}

// countKept returns how many of before's tables are still in after.
func countKept(after, before []shale.TableInfo) int {
	old := tableNums(before)
	n := 0
	for _, tb := range after {
		if old[tb.FileNum] {
			n++
		}
	}
	return n
}
