package shale

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/shale-db/shale/memtable"
)

// The block cache's memory lives outside the Go heap and is handed back by
// reference counts: every Get, iterator and compaction must release what it
// took. Once reads are done the only blocks out are the cached ones (the
// tables' index and filter blocks among them) and any index or filter
// block too large for the cache, which its open table keeps; an
// iterator left open across Close keeps reading intact blocks, and the
// memory is unmapped when it closes.
func TestBlockCacheReferencesReleased(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, &Options{WriteBufferSize: 64 << 10, CacheSize: 64 << 10, BlockSize: 1024})
	if err != nil {
		t.Fatal(err)
	}
	val := func(i int) []byte { return bytes.Repeat([]byte{byte('a' + i%26)}, 100+i%50) }
	const n = 5000
	for i := 0; i < n; i++ {
		if err := db.Put([]byte(fmt.Sprintf("k%06d", i)), val(i), NoSync); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i += 7 {
		v, err := db.Get([]byte(fmt.Sprintf("k%06d", i)))
		if err != nil || !bytes.Equal(v, val(i)) {
			t.Fatalf("Get k%06d = %.20q, %v", i, v, err)
		}
	}
	scan := func(it *Iterator, from, count int) {
		t.Helper()
		i := from
		for ok := it.SeekGE([]byte(fmt.Sprintf("k%06d", from))); ok && i < from+count; ok = it.Next() {
			if want := fmt.Sprintf("k%06d", i); string(it.Key()) != want || !bytes.Equal(it.Value(), val(i)) {
				t.Fatalf("at %s: %q = %.20q", want, it.Key(), it.Value())
			}
			i++
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
	}
	it := db.NewIterator(nil)
	scan(it, 0, 2000)
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	tables := 0
	for _, l := range db.Metrics().Levels {
		tables += l.Tables
	}
	// Besides the cached blocks, an open table may keep its index block
	// (with its entry table) and filter in the cache's memory, uncached,
	// if they are too large for this small cache.
	m := db.blockCache.Metrics()
	if kept := m.Buffers - m.Count; kept < 0 || kept > 3*tables || m.Mapped == 0 {
		t.Fatalf("after reads: %d blocks out of the maps, %d cached (%d tables), %d bytes mapped", m.Buffers, m.Count, tables, m.Mapped)
	}

	open := db.NewIterator(nil)
	scan(open, 1000, 20) // a short read: its blocks come through the cache
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if m := db.blockCache.Metrics(); m.Mapped == 0 || m.Buffers == 0 {
		t.Fatalf("an open iterator's blocks were unmapped at Close: %+v", m)
	}
	scan(open, 3000, 2000) // reads on past Close, as documented
	if err := open.Close(); err != nil {
		t.Fatal(err)
	}
	if m := db.blockCache.Metrics(); m.Mapped != 0 || m.Buffers != 0 {
		t.Fatalf("after the last iterator closed: %+v", m)
	}
}

// A scan that goes on from one table of a level to the next stays a long
// scan: the next tables' blocks are read ahead and go to no cache, so a
// full scan leaves at most the first table's first blocks cached, not
// those of every table it crosses.
func TestLongScanCrossesTables(t *testing.T) {
	dir := t.TempDir()
	opts := &Options{WriteBufferSize: 256 << 10, TargetFileSize: 64 << 10, CacheSize: 8 << 20}
	db, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 1))
	const n = 6000 // 2.4 MB: about 40 tables of 64 KiB at the bottom
	for i := 0; i < n; i++ {
		putRandomValue(t, db, r, fmt.Sprintf("k%06d", i))
	}
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	db = reopenCold(t, db, dir, opts)
	defer db.Close()
	tables := 0
	for _, l := range db.Metrics().Levels {
		tables += l.Tables
	}
	if tables < 20 {
		t.Fatalf("%d tables; the test wants a level of many", tables)
	}
	it := db.NewIterator(nil)
	count := 0
	for ok := it.First(); ok; ok = it.Next() {
		count++
	}
	if err := it.Close(); err != nil || count != n {
		t.Fatalf("scanned %d keys, err %v; want %d", count, err, n)
	}
	// The first table fills the cache until its scan is long; every block
	// after goes uncached. Before, each table's first noFillAfter blocks
	// were cached: about 64 blocks of 4 KiB times the tables crossed.
	if cached, limit := db.Metrics().BlockCache.Bytes, int64(80*5<<10); cached > limit {
		t.Fatalf("a scan across %d tables left %d bytes in the cache, more than one table's %d", tables, cached, limit)
	}
}

// Open writes what it replayed to a table and keeps none of the replayed
// memtables' chunks mapped: a database opened to be read may never need
// them again.
func TestOpenKeepsNoReplayedChunks(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	val := bytes.Repeat([]byte{'v'}, 1000)
	// Twice the carry limit: past it, and within one memtable.
	n := int(2 * db.carryLimit() / int64(len(val)))
	for i := 0; i < n; i++ {
		if err := db.Put([]byte(fmt.Sprintf("k%06d", i)), val, NoSync); err != nil {
			t.Fatal(err)
		}
	}
	if held, _ := db.memChunks.Stats(); held < n/100 {
		t.Fatalf("the memtable holds %d chunks after %d puts of 1 KB", held, n)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if db, err = Open(dir, nil); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if held, free := db.memChunks.Stats(); held != 0 || free != 0 {
		t.Fatalf("after replaying %d puts into a table: %d chunks held, %d free; want none", n, held, free)
	}
	if v, err := db.Get([]byte(fmt.Sprintf("k%06d", n-1))); err != nil || !bytes.Equal(v, val) {
		t.Fatalf("Get after reopen: %.10q, %v", v, err)
	}
}

// The records Open carries forward into its new WAL are copied into chunks
// of the memtables' pool while replay reads them; Open gives those chunks
// back, so that only the memtable's own stay.
func TestOpenGivesBackCarriedChunks(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	val := bytes.Repeat([]byte{'v'}, 1000)
	for i := 0; i < 200; i++ { // 200 KB: carried, and under flushCarriedAt
		if err := db.Put([]byte(fmt.Sprintf("k%06d", i)), val, NoSync); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if db, err = Open(dir, nil); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if n := db.Metrics().Levels[0].Tables; n != 0 {
		t.Fatalf("Open wrote %d level-0 tables; want the records carried forward", n)
	}
	held, free := db.memChunks.Stats()
	mem := db.mu.mem.ApproximateSize()
	if free != 0 || int64(held)*memtable.ChunkSize > mem+2*memtable.ChunkSize {
		t.Fatalf("after carrying 200 KB forward: %d chunks held, %d free, for a memtable of %d bytes", held, free, mem)
	}
	if v, err := db.Get([]byte("k000199")); err != nil || !bytes.Equal(v, val) {
		t.Fatalf("Get after reopen: %.10q, %v", v, err)
	}
}

// A scan over level-0 tables that overlap reads them side by side, and
// their iterators count the blocks they read in order together: once the
// scan has read as many as a long scan of one table, none of them adds
// blocks to the cache, rather than each caching its own first 64. A seek
// starts the count over, so that a short scan after a long one caches what
// it reads.
func TestLongScanAcrossLevelZero(t *testing.T) {
	dir := t.TempDir()
	opts := &Options{CacheSize: 8 << 20}
	db, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(2, 2))
	const tables, perTable = 3, 1500
	for range tables { // 600 KB each, over the whole key range
		for range perTable {
			putRandomValue(t, db, r, fmt.Sprintf("k%06d", r.IntN(1000000)))
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	db = reopenCold(t, db, dir, opts)
	defer db.Close()
	if n := db.Metrics().Levels[0].Tables; n != tables {
		t.Fatalf("%d level-0 tables; the test wants %d", n, tables)
	}
	it := db.NewIterator(nil)
	defer it.Close()
	count := 0
	for ok := it.First(); ok; ok = it.Next() {
		count++
	}
	if err := it.Err(); err != nil || count < tables*perTable*9/10 {
		t.Fatalf("scanned %d keys, err %v", count, err)
	}
	// One table's long scan caches about 64 blocks of 4 KiB; each table
	// alone would have cached as many.
	long := db.Metrics().BlockCache.Bytes
	if limit := int64(80 * 5 << 10); long > limit {
		t.Fatalf("a scan across %d level-0 tables left %d bytes in the cache, more than one table's %d", tables, long, limit)
	}
	// A seek, then 20 blocks' worth of keys from each table: a short scan.
	ok := it.SeekGE([]byte("k500000"))
	for i := 0; ok && i < 20*tables*10; i++ {
		ok = it.Next()
	}
	if !ok {
		t.Fatalf("short scan ended early: %v", it.Err())
	}
	if short := db.Metrics().BlockCache.Bytes - long; short < 40*4<<10 {
		t.Fatalf("a short scan after a seek cached %d bytes; want its blocks cached", short)
	}
}

// putRandomValue puts key with a value of 400 random (incompressible)
// bytes from r.
func putRandomValue(t *testing.T, db *DB, r *rand.Rand, key string) {
	t.Helper()
	val := make([]byte, 400)
	for j := range val {
		val[j] = byte(r.Uint32())
	}
	if err := db.Put([]byte(key), val, NoSync); err != nil {
		t.Fatal(err)
	}
}

// reopenCold closes db and opens dir again with opts: a database whose
// block cache is empty.
func reopenCold(t *testing.T, db *DB, dir string, opts *Options) *DB {
	t.Helper()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	return db
}
