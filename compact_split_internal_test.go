package shale

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/shale-db/shale/compaction"
	"github.com/shale-db/shale/internal/ikey"
	"github.com/shale-db/shale/internal/manifest"
	"github.com/shale-db/shale/internal/rangedel"
	"github.com/shale-db/shale/internal/vfs"
)

// splitTestJob is a compaction of l0 level-0 tables of l0Size bytes into
// the given tables of level 6, each starting at the user key of its index.
func splitTestJob(kind compaction.Kind, startLevel, l0 int, l0Size int64, sizes []int64) (*compactionJob, []*manifest.FileMeta) {
	job := &compactionJob{c: &compaction.Compaction{Kind: kind, StartLevel: startLevel, OutputLevel: 6}, split: true}
	var files []*manifest.FileMeta
	num := uint64(1)
	for range l0 {
		job.inputs = append(job.inputs, compactInput{level: startLevel, num: num})
		files = append(files, &manifest.FileMeta{Num: num, Size: l0Size,
			Smallest: ikey.Make([]byte("k000"), 9, ikey.KindSet), Largest: ikey.Make([]byte("k999"), 9, ikey.KindSet)})
		num++
	}
	// Level 6's tables in reverse order: the cuts must not depend on the
	// inputs' order.
	for i := len(sizes) - 1; i >= 0; i-- {
		job.inputs = append(job.inputs, compactInput{level: 6, num: num})
		files = append(files, &manifest.FileMeta{Num: num, Size: sizes[i],
			Smallest: ikey.Make(fmt.Appendf(nil, "k%03d", i*10), 1, ikey.KindSet),
			Largest:  ikey.Make(fmt.Appendf(nil, "k%03d", i*10+9), 1, ikey.KindSet)})
		num++
	}
	return job, files
}

func TestSubcompactionBounds(t *testing.T) {
	const mib = 1 << 20
	even := []int64{8 * mib, 8 * mib, 8 * mib, 8 * mib, 8 * mib, 8 * mib, 8 * mib, 8 * mib}
	cases := []struct {
		name       string
		maxCompact int
		kind       compaction.Kind
		startLevel int
		sizes      []int64
		dels       rangedel.Spans
		want       []string
	}{
		{"two parts", 2, compaction.KindDefault, 0, even, nil, []string{"k040"}},
		{"four parts", 4, compaction.KindDefault, 0, even, nil, []string{"k020", "k040", "k060"}},
		{"at most four", 8, compaction.KindDefault, 0, even, nil, []string{"k020", "k040", "k060"}},
		{"by bytes", 2, compaction.KindDefault, 0, []int64{30 * mib, 1 * mib, 1 * mib, 1 * mib}, nil, []string{"k010"}},
		{"one compaction at a time", 1, compaction.KindDefault, 0, even, nil, nil},
		{"not out of level 0", 2, compaction.KindDefault, 5, even, nil, nil},
		{"not manual", 2, compaction.KindManual, 0, even, nil, nil},
		{"not with range deletions", 2, compaction.KindDefault, 0, even,
			rangedel.Spans{{Start: []byte("k1"), End: []byte("k2"), Seqs: []uint64{5}}}, nil},
		{"one table below", 2, compaction.KindDefault, 0, []int64{64 * mib}, nil, nil},
		{"too small", 2, compaction.KindDefault, 0, []int64{mib, mib, mib}, nil, nil},
		{"not wanted", 2, compaction.KindDefault, 0, even, nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			db := &DB{opts: Options{MaxConcurrentCompactions: tc.maxCompact, TargetFileSize: 2 * mib}}
			job, files := splitTestJob(tc.kind, tc.startLevel, 4, 2*mib, tc.sizes)
			job.split = tc.name != "not wanted"
			var got []string
			for _, c := range db.subcompactionBounds(job, files, tc.dels) {
				got = append(got, string(c))
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("cuts %q, want %q", got, tc.want)
			}
		})
	}
}

// splitKey is the test's key i, scattered so that every level-0 table
// spans the key space.
func splitKey(i int) []byte { return fmt.Appendf(nil, "key%05d", i) }

func splitValue(i, version int) []byte {
	return append(fmt.Appendf(nil, "v%d-%d-", version, i), bytes.Repeat([]byte("x"), 80)...)
}

// buildForSplit lays a last level of many tables holding keys [0, n) at
// version 0, then takes a snapshot, then overwrites and deletes keys
// scattered over the space in five level-0 tables (one more than level
// 0's compaction trigger: the writes outpace compaction, so the compaction
// is split); automatic compactions are off until the caller starts them. It returns the model of the
// current state (nil: deleted) and the snapshot.
func buildForSplit(t *testing.T, fs vfs.FS, n int) (*DB, [][]byte, *Snapshot) {
	t.Helper()
	db := reviewMustOpen(t, fs, &Options{
		WriteBufferSize: 256 << 10, TargetFileSize: 8 << 10, Compression: NoCompression,
		MaxConcurrentCompactions: 3, disableAutoCompactions: true,
	})
	model := make([][]byte, n)
	for i := range n {
		model[i] = splitValue(i, 0)
		if err := db.Put(splitKey(i), model[i], NoSync); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	snap := db.NewSnapshot()
	t.Cleanup(func() { snap.Close() })
	rng := rand.New(rand.NewPCG(1, 2))
	for round := 1; round <= 5; round++ {
		for range n / 4 {
			i := rng.IntN(n)
			if rng.IntN(5) == 0 {
				model[i] = nil
				if err := db.Delete(splitKey(i), NoSync); err != nil {
					t.Fatal(err)
				}
				continue
			}
			model[i] = splitValue(i, round)
			if err := db.Put(splitKey(i), model[i], NoSync); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	return db, model, snap
}

// startAutoCompactions turns automatic compactions on and waits until
// level 0 is empty and none runs, or a background error.
func startAutoCompactions(t *testing.T, db *DB) error {
	t.Helper()
	db.mu.Lock()
	db.opts.disableAutoCompactions = false
	db.maybeScheduleLocked()
	db.mu.Unlock()
	deadline := time.Now().Add(30 * time.Second)
	for {
		db.mu.Lock()
		busy, bgErr := len(db.mu.compactions) > 0, db.mu.bgErr
		db.mu.Unlock()
		if bgErr != nil {
			return bgErr
		}
		if !busy && db.l0Tables.Load() == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			t.Fatal("compactions did not settle")
		}
		time.Sleep(time.Millisecond)
	}
}

func checkSplitModel(t *testing.T, db *DB, snap *Snapshot, model [][]byte) {
	t.Helper()
	for i, want := range model {
		got, err := db.Get(splitKey(i))
		switch {
		case want == nil && !errors.Is(err, ErrNotFound):
			t.Fatalf("Get(%s) = %q, %v; want not found", splitKey(i), got, err)
		case want != nil && (err != nil || !bytes.Equal(got, want)):
			t.Fatalf("Get(%s) = %q, %v; want %q", splitKey(i), got, err, want)
		}
		if snap == nil {
			continue
		}
		got, err = snap.Get(splitKey(i))
		if err != nil || !bytes.Equal(got, splitValue(i, 0)) {
			t.Fatalf("snapshot Get(%s) = %q, %v; want version 0", splitKey(i), got, err)
		}
	}
	var n int
	for range db.All(nil) {
		n++
	}
	want := 0
	for _, v := range model {
		if v != nil {
			want++
		}
	}
	if n != want {
		t.Fatalf("a scan saw %d keys, want %d", n, want)
	}
}

// A compaction out of level 0 runs in parts, split by key range: the
// result is the one an unsplit compaction gives (every key's newest
// version, the versions a snapshot holds, deletions applied), the level it
// writes stays sorted and disjoint, and every table checks.
func TestSplitCompaction(t *testing.T) {
	mem := vfs.NewMem()
	const n = 6000
	db, model, snap := buildForSplit(t, mem, n)
	before := db.subcompactions.Load()
	if err := startAutoCompactions(t, db); err != nil {
		t.Fatal(err)
	}
	if parts := db.subcompactions.Load() - before; parts < 2 {
		t.Fatalf("level 0's compaction ran in %d parts; the test needs a split", parts)
	}
	checkSplitModel(t, db, snap, model)
	if m := db.Metrics(); m.Subcompactions != int64(db.subcompactions.Load()) || !strings.Contains(m.String(), fmt.Sprintf("%d split parts", m.Subcompactions)) {
		t.Fatalf("Metrics report %d split parts (%q); the compactions ran %d", m.Subcompactions, m.String(), db.subcompactions.Load())
	}
	st, err := db.Stats()
	if err != nil {
		t.Fatal(err)
	}
	var prev *TableInfo
	for i := range st.Tables {
		tb := &st.Tables[i]
		if tb.Level == 0 {
			t.Fatalf("table %06d left in level 0", tb.FileNum)
		}
		if prev != nil && prev.Level == tb.Level && bytes.Compare(prev.Largest, tb.Smallest) >= 0 {
			t.Fatalf("level %d: table %06d ends at %q, after %06d starts at %q", tb.Level, prev.FileNum, prev.Largest, tb.FileNum, tb.Smallest)
		}
		prev = tb
	}
	if err := db.Verify(context.Background()); err != nil {
		t.Fatal(err)
	}
	snap.Close()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = reviewMustOpen(t, mem, &Options{disableAutoCompactions: true})
	checkSplitModel(t, db, nil, model)
}

// When one part of a split compaction fails (here a table sync, the first
// to the eighth), the whole compaction fails: nothing is recorded, every
// part's tables are removed, and every key reads as before.
func TestSplitCompactionPartFails(t *testing.T) {
	for failAt := int64(1); failAt <= 8; failAt++ {
		t.Run(fmt.Sprint("sync", failAt), func(t *testing.T) { splitCompactionPartFails(t, failAt) })
	}
}

func splitCompactionPartFails(t *testing.T, failAt int64) {
	g := newGatedTableSyncs(failAt)
	g.open()
	db, model, snap := buildForSplit(t, g, 6000)
	live := liveTables(db)
	before := db.subcompactions.Load()
	g.armed.Store(true)
	if err := startAutoCompactions(t, db); !errors.Is(err, errInjectedSync) {
		t.Fatalf("compactions settled with %v; want the injected sync failure", err)
	}
	if parts := db.subcompactions.Load() - before; parts < 2 {
		t.Fatalf("the failed compaction ran in %d parts; the test needs a split", parts)
	}
	db.mu.Lock()
	for len(db.mu.compactions) > 0 {
		db.mu.bgCond.Wait()
	}
	db.mu.Unlock()
	checkNoStrayTables(t, g.MemFS, db, live)
	checkSplitModel(t, db, snap, model)
}
