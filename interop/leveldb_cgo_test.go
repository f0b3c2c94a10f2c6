//go:build leveldb_cgo

// Tests that a database directory moves between shale and LevelDB itself
// (the C++ library, through interop/leveldbc) in both directions, with
// LevelDB's bloom filter policy set: goleveldb names its filter
// differently and never reads shale's, so only LevelDB checks our filter
// blocks, and only these tests check that shale reads LevelDB's.
package interop

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shale-db/shale"
	"github.com/shale-db/shale/interop/leveldbc"
	"github.com/shale-db/shale/wal"
)

func (op dbOp) applyLevelDB(db *leveldbc.DB) error {
	var b leveldbc.Batch
	for _, kv := range op.puts {
		b.Put(kv[0], kv[1])
	}
	for _, k := range op.deletes {
		b.Delete(k)
	}
	return db.Write(&b)
}

func applyLevelDBOps(t *testing.T, db *leveldbc.DB, ops []dbOp) {
	t.Helper()
	for _, op := range ops {
		if err := op.applyLevelDB(db); err != nil {
			t.Fatal(err)
		}
	}
}

func openLevelDB(t *testing.T, dir string, o leveldbc.Options) *leveldbc.DB {
	t.Helper()
	db, err := leveldbc.Open(dir, o)
	if err != nil {
		t.Fatalf("LevelDB cannot open %s: %v", dir, err)
	}
	t.Cleanup(func() { db.Close() }) // if the test stops early; else ErrClosed
	return db
}

// scanLevelDB scans forward, then checks that a backward scan gives the
// same entries in reverse.
func scanLevelDB(t *testing.T, db *leveldbc.DB) []kv {
	t.Helper()
	it := db.NewIterator()
	var out []kv
	for ok := it.First(); ok; ok = it.Next() {
		out = append(out, kv{string(it.Key()), string(it.Value())})
	}
	n := len(out)
	for ok := it.Last(); ok; ok = it.Prev() {
		n--
		if n < 0 || out[n].k != string(it.Key()) {
			t.Fatalf("LevelDB's backward scan differs from its forward scan at %q", it.Key())
		}
	}
	if err := it.Close(); err != nil {
		t.Fatalf("LevelDB scan: %v", err)
	}
	if n != 0 {
		t.Fatalf("LevelDB's backward scan stopped %d entries short", n)
	}
	return out
}

func levelDBGet(db *leveldbc.DB) func([]byte) ([]byte, error) { return db.Get }

// readAsLeft opens dir in LevelDB with its background work held, reads
// every probe and scans, and checks that LevelDB read the tables the other
// side left (it compacted none of them away first; Open turns the WAL into
// at most one table of its own), then lets LevelDB's background work go.
func readAsLeft(t *testing.T, what, dir string, o leveldbc.Options, want map[string]string, probes [][]byte) *leveldbc.DB {
	t.Helper()
	tables := diskTables(t, dir)
	release := leveldbc.HoldBackgroundWork()
	var ldb *leveldbc.DB
	t.Cleanup(func() { // if the test stops early: never leave the thread held
		release()
		if ldb != nil {
			ldb.Close()
		}
	})
	ldb, err := leveldbc.Open(dir, o)
	if err != nil {
		t.Fatalf("%s: LevelDB cannot open %s: %v", what, dir, err)
	}
	checkGets(t, what, levelDBGet(ldb), leveldbc.ErrNotFound, want, probes)
	sameScan(t, what, scanLevelDB(t, ldb), sortedModel(want))
	sst, _ := ldb.Property("leveldb.sstables")
	for _, tb := range tables {
		if !strings.Contains(sst, fmt.Sprintf(" %d:", tb.FileNum)) {
			t.Fatalf("%s: LevelDB no longer lists table %06d:\n%s", what, tb.FileNum, sst)
		}
	}
	release()
	return ldb
}

// bloomFilterName is the metaindex key of the filter block of a table
// written with LevelDB's built-in bloom filter policy.
const bloomFilterName = "filter.leveldb.BuiltinBloomFilter2"

// requireFilters fails unless every table in tables holds a filter block
// under LevelDB's name, so that LevelDB, opened with that policy, reads it.
func requireFilters(t *testing.T, dir string, tables []shale.TableInfo) {
	t.Helper()
	for _, tb := range tables {
		b, err := os.ReadFile(tableFile(dir, tb.FileNum))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(b, []byte(bloomFilterName)) {
			t.Fatalf("table %06d has no %s block", tb.FileNum, bloomFilterName)
		}
	}
}

// tableFile returns the path of table num: .ldb, or LevelDB's older .sst.
func tableFile(dir string, num uint64) string {
	p := filepath.Join(dir, fmt.Sprintf("%06d.ldb", num))
	if _, err := os.Stat(p); err != nil {
		return filepath.Join(dir, fmt.Sprintf("%06d.sst", num))
	}
	return p
}

// tagValues prefixes every value ops put with tag, so that a WAL's
// entries show which phase wrote them.
func tagValues(ops []dbOp, tag string) []dbOp {
	for _, op := range ops {
		for i := range op.puts {
			op.puts[i][1] = append([]byte(tag), op.puts[i][1]...)
		}
	}
	return ops
}

// requireInWAL fails unless the directory's WAL files hold every put of
// ops, which tagValues marked with tag: the writes were left in a live WAL,
// not flushed to tables.
func requireInWAL(t *testing.T, dir string, ops []dbOp, tag string) {
	t.Helper()
	puts := 0
	for _, op := range ops {
		puts += len(op.puts)
	}
	n := 0
	for _, v := range walValues(t, dir) {
		if strings.HasPrefix(v, tag) {
			n++
		}
	}
	if n != puts {
		t.Fatalf("the WAL holds %d puts tagged %q, want %d: the test needs them in a live WAL", n, tag, puts)
	}
}

// walValues returns the value of every put of every batch in the
// directory's WAL files, read with shale's wal package in strict mode.
func walValues(t *testing.T, dir string) []string {
	t.Helper()
	logs, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	var values []string
	for _, name := range logs {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		r := wal.NewReader(f, wal.Strict())
		for {
			rec, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			values = append(values, batchPuts(t, rec)...)
		}
		f.Close()
	}
	return values
}

// batchPuts decodes a WriteBatch (sequence fixed64, count fixed32, then
// tagged entries) and returns the values it puts.
func batchPuts(t *testing.T, rec []byte) []string {
	t.Helper()
	if len(rec) < 12 {
		t.Fatalf("a WAL record of %d bytes is no batch", len(rec))
	}
	count := binary.LittleEndian.Uint32(rec[8:12])
	b := rec[12:]
	field := func() []byte {
		n, w := binary.Uvarint(b)
		if w <= 0 || uint64(len(b)-w) < n {
			t.Fatalf("a batch entry overruns its record")
		}
		f := b[w : w+int(n)]
		b = b[w+int(n):]
		return f
	}
	var values []string
	for range count {
		if len(b) == 0 {
			t.Fatal("a batch holds fewer entries than its count")
		}
		kind := b[0]
		b = b[1:]
		field() // the key
		if kind == 1 {
			values = append(values, string(field()))
		}
	}
	return values
}

// openShale opens dir with a small write buffer, or with the default one
// (4 MiB) if bigBuffer.
func openShale(t *testing.T, dir string, bigBuffer bool) *shale.DB {
	t.Helper()
	o := &shale.Options{WriteBufferSize: 64 << 10}
	if bigBuffer {
		o = nil
	}
	db, err := shale.Open(dir, o)
	if err != nil {
		t.Fatalf("shale cannot open %s: %v", dir, err)
	}
	return db
}

// shale writes a directory across levels (a compaction, deletions,
// level-0 tables above it, a live WAL), and LevelDB, with its bloom filter
// policy, reads every key, present or absent, and scans; then it writes,
// compacts everything, and leaves writes in its WAL; shale reads the
// result, LevelDB's new tables and their filters included.
func TestShaleDirectoryOpensInLevelDB(t *testing.T) {
	const keys = 30000
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(30, 30))
	db := openShale(t, dir, false)
	ops := bulkOps(r, keys, 0, keys, true, 0)
	applyShaleOps(t, db, ops)
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	phases := [][]dbOp{
		bulkOps(r, 6000, 0, keys/3, false, 4), // compacted again below
		bulkOps(r, 3000, 0, keys, false, 3),   // level-0 tables and the WAL
	}
	applyShaleOps(t, db, phases[0])
	if err := db.Compact(nil, bulkKey(keys/3)); err != nil {
		t.Fatal(err)
	}
	applyShaleOps(t, db, phases[1])
	ops = append(append(ops, phases[0]...), phases[1]...)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	tables := diskTables(t, dir)
	requireLevels(t, "shale's directory", tables, 2, 1)
	requireFilters(t, dir, tables)
	if len(walValues(t, dir)) == 0 {
		t.Fatal("shale left no writes in its WAL: the test needs some")
	}

	probes := probeKeys(ops, keys+1000)
	ldb := readAsLeft(t, "LevelDB reading shale", dir, leveldbc.Options{WriteBufferSize: 64 << 10}, model(ops), probes)
	more := bulkOps(r, 6000, 0, keys+1000, false, 4)
	applyLevelDBOps(t, ldb, more)
	if err := ldb.CompactRange(nil, nil); err != nil {
		t.Fatal(err)
	}
	tail := tagValues(bulkOps(r, 150, 0, keys+1000, false, 3), "leveldb-wal:")
	applyLevelDBOps(t, ldb, tail)
	ops = append(append(ops, more...), tail...)
	if err := ldb.Close(); err != nil {
		t.Fatal(err)
	}
	requireInWAL(t, dir, tail, "leveldb-wal:")
	after := diskTables(t, dir)
	kept := countKept(after, tables)
	t.Logf("after LevelDB's CompactRange: %d tables, %d of them shale's", len(after), kept)
	if kept == len(after) {
		t.Fatal("LevelDB wrote no table: the test needs shale to read LevelDB's")
	}
	requireFilters(t, dir, after)

	db = openShale(t, dir, false)
	defer db.Close()
	checkGets(t, "shale reading LevelDB's compaction", shaleGet(db), shale.ErrNotFound, model(ops), probes)
	sameScan(t, "shale reading LevelDB's compaction", scanShale(t, db), sortedModel(model(ops)))
}

// LevelDB writes a directory across levels 0 to 2 (with deletions and a
// live WAL), and shale reads every key, present or absent, through
// LevelDB's filters, and scans; then it writes, compacts everything, and
// leaves writes in its WAL; LevelDB reads the result.
func TestLevelDBDirectoryOpensInShale(t *testing.T) {
	const keys = 30000
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(31, 31))
	ldb := openLevelDB(t, dir, leveldbc.Options{CreateIfMissing: true, WriteBufferSize: 64 << 10, MaxFileSize: 1 << 20})
	ops := writeLevelDBLevels(t, ldb, r, keys)
	tail := tagValues(bulkOps(r, 150, 0, keys/4, false, 3), "leveldb-wal:")
	applyLevelDBOps(t, ldb, tail)
	ops = append(ops, tail...)
	if err := ldb.Close(); err != nil {
		t.Fatal(err)
	}
	requireInWAL(t, dir, tail, "leveldb-wal:")
	ltables := diskTables(t, dir)
	requireLevels(t, "LevelDB's directory", ltables, 3, 2)
	requireFilters(t, dir, ltables)

	db := openShale(t, dir, false)
	probes := probeKeys(ops, keys+1000)
	checkGets(t, "shale reading LevelDB", shaleGet(db), shale.ErrNotFound, model(ops), probes)
	sameScan(t, "shale reading LevelDB", scanShale(t, db), sortedModel(model(ops)))
	more := bulkOps(r, 5000, keys/2, keys+1000, false, 4)
	applyShaleOps(t, db, more)
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	tail = tagValues(bulkOps(r, 150, 0, keys+1000, false, 3), "shale-wal:")
	applyShaleOps(t, db, tail)
	ops = append(append(ops, more...), tail...)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	requireInWAL(t, dir, tail, "shale-wal:")
	stables := diskTables(t, dir)
	requireShaleTables(t, stables, tableNums(ltables))
	requireFilters(t, dir, stables)

	ldb = readAsLeft(t, "LevelDB reading shale's compaction", dir, leveldbc.Options{}, model(ops), probes)
	if err := ldb.Close(); err != nil {
		t.Fatal(err)
	}
}

// writeLevelDBLevels writes keys keys through LevelDB, and more, so that
// it leaves a table in level 0, one in level 1, and the rest in level 2,
// by LevelDB's rules: a flushed memtable goes to level 0 if it overlaps a
// table there or in level 1, else as deep as level 2 while it overlaps
// nothing; CompactRange flushes the memtable (waiting for flushes under
// way), then merges what meets its range level by level down to the
// deepest level that holds tables.
func writeLevelDBLevels(t *testing.T, ldb *leveldbc.DB, r *rand.Rand, keys int) []dbOp {
	t.Helper()
	var ops []dbOp
	phase := func(more []dbOp) {
		applyLevelDBOps(t, ldb, more)
		ops = append(ops, more...)
		// Flush the memtable, so that no table mixes two phases: a range
		// below every key compacts nothing else.
		if err := ldb.CompactRange([]byte("a"), []byte("a")); err != nil {
			t.Fatal(err)
		}
	}
	// In order: each flushed table goes straight to level 2.
	phase(bulkOps(r, keys, 0, keys, true, 0))
	// At random over the second quarter: level 1 and level 0, moved to
	// level 2 by the CompactRange below.
	phase(bulkOps(r, 4000, keys/4, keys/2, false, 4))
	// About a memtable and a half, at random over the first eighth: a
	// flush to level 1 (it overlaps nothing in levels 0 and 1), then the
	// rest to level 0 (it overlaps level 1).
	phase(bulkOps(r, 420, 0, keys/8, false, 4))
	if err := ldb.CompactRange(bulkKey(keys/4), bulkKey(keys/2)); err != nil {
		t.Fatal(err)
	}
	return ops
}

// Writes left only in a WAL move between shale and LevelDB, both ways,
// twice: each replays the other's log.
func TestLiveWALBetweenShaleAndLevelDB(t *testing.T) {
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(32, 32))
	db := openShale(t, dir, true)
	ops := tagValues(randomHistory(r, 300, 200), "shale-1:")
	applyShaleOps(t, db, ops)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if tables := diskTables(t, dir); len(tables) != 0 {
		t.Fatalf("shale wrote %d tables: the test needs its writes only in its WAL", len(tables))
	}
	requireInWAL(t, dir, ops, "shale-1:")
	probes := probeKeys(ops, 250)

	for round, tag := range []string{"leveldb-1:", "shale-2:", "leveldb-2:"} {
		more := tagValues(randomHistory(r, 300, 200), tag)
		if round%2 == 0 {
			ldb := openLevelDB(t, dir, leveldbc.Options{})
			checkGets(t, "LevelDB replaying "+tag, levelDBGet(ldb), leveldbc.ErrNotFound, model(ops), probes)
			sameScan(t, "LevelDB replaying "+tag, scanLevelDB(t, ldb), sortedModel(model(ops)))
			applyLevelDBOps(t, ldb, more)
			if err := ldb.Close(); err != nil {
				t.Fatal(err)
			}
		} else {
			db := openShale(t, dir, true)
			checkGets(t, "shale replaying "+tag, shaleGet(db), shale.ErrNotFound, model(ops), probes)
			sameScan(t, "shale replaying "+tag, scanShale(t, db), sortedModel(model(ops)))
			applyShaleOps(t, db, more)
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
		}
		requireInWAL(t, dir, more, tag)
		ops = append(ops, more...)
	}
	ldb := openLevelDB(t, dir, leveldbc.Options{})
	defer ldb.Close()
	checkGets(t, "LevelDB last", levelDBGet(ldb), leveldbc.ErrNotFound, model(ops), probes)
	sameScan(t, "LevelDB last", scanLevelDB(t, ldb), sortedModel(model(ops)))
}
