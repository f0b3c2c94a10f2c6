package shale_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shale-db/shale"
	"github.com/shale-db/shale/sstable"
)

// repairFixture is a closed database with tables on several levels and a
// live WAL, and the model of what it holds.
type repairFixture struct {
	dir     string
	model   map[string]string   // key -> newest value; absent: deleted or never written
	history map[string][]string // every value a key has had, oldest first
	walKeys map[string]bool     // keys written to the live WAL last
}

var repairOpts = shale.Options{
	WriteBufferSize: 32 << 10, BlockSize: 1 << 10, TargetFileSize: 16 << 10,
	Compression: shale.NoCompression,
}

func newRepairFixture(t *testing.T) *repairFixture {
	t.Helper()
	fx := &repairFixture{dir: t.TempDir(), model: map[string]string{},
		history: map[string][]string{}, walKeys: map[string]bool{}}
	db, err := shale.Open(fx.dir, &repairOpts)
	if err != nil {
		t.Fatal(err)
	}
	put := func(gen, i int) {
		k, v := fmt.Sprintf("k%04d", i), fmt.Sprintf("gen%d-%04d-%s", gen, i, strings.Repeat("x", 60))
		if err := db.Put([]byte(k), []byte(v), shale.NoSync); err != nil {
			t.Fatal(err)
		}
		fx.model[k] = v
		fx.history[k] = append(fx.history[k], v)
	}
	del := func(i int) {
		k := fmt.Sprintf("k%04d", i)
		if err := db.Delete([]byte(k), shale.NoSync); err != nil {
			t.Fatal(err)
		}
		delete(fx.model, k)
	}
	step := func(f func() error) {
		if err := f(); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 2000 {
		put(1, i)
	}
	step(func() error { return db.Compact(nil, nil) })
	for i := 0; i < 1000; i += 2 {
		put(2, i)
	}
	for i := 1; i < 2000; i += 9 {
		del(i)
	}
	step(db.Flush)
	step(func() error { return db.Compact([]byte("k0000"), []byte("k0400")) })
	for i := 300; i < 700; i += 3 {
		put(3, i)
	}
	step(db.Flush)
	for i := 1500; i < 1560; i++ {
		put(4, i)
		fx.walKeys[fmt.Sprintf("k%04d", i)] = true
	}
	del(1501)
	m := db.Metrics()
	levels := 0
	for _, l := range m.Levels {
		if l.Tables > 0 {
			levels++
		}
	}
	if levels < 2 {
		t.Fatalf("fixture has tables on %d levels, want several:\n%s", levels, m.String())
	}
	step(db.Close)
	return fx
}

// check opens the repaired database and compares it with the model: keys
// not in lost match exactly; a key in lost is absent or holds one of its
// earlier values.
func (fx *repairFixture) check(t *testing.T, lost map[string]bool) {
	t.Helper()
	db, err := shale.Open(fx.dir, nil)
	if err != nil {
		t.Fatalf("open after repair: %v", err)
	}
	defer db.Close()
	got := scanPrefix(t, db, "")
	for k := range fx.history {
		v, ok := got[k]
		want, wantOK := fx.model[k]
		if lost[k] {
			if ok && !slices.Contains(fx.history[k], v) {
				t.Errorf("lost key %s holds %q, never one of its values", k, v)
			}
			continue
		}
		if ok != wantOK || v != want {
			t.Errorf("key %s: got %q (present %v), want %q (present %v)", k, trim(v), ok, trim(want), wantOK)
		}
	}
	for k := range got {
		if _, ok := fx.history[k]; !ok {
			t.Errorf("unexpected key %q", k)
		}
	}
}

func trim(s string) string { return s[:min(len(s), 12)] }

func repairOK(t *testing.T, dir string) shale.RepairReport {
	t.Helper()
	rep, err := shale.Repair(dir, nil)
	if err != nil {
		t.Fatalf("repair: %v", err)
	}
	t.Logf("report:\n%s", rep.String())
	return rep
}

// files returns the names in dir with suffix, sorted.
func files(t *testing.T, dir, suffix string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), suffix) {
			out = append(out, e.Name())
		}
	}
	return out
}

// checkSecondRepair repairs the repaired directory again: nothing lost,
// no table rewritten, every key kept.
func (fx *repairFixture) checkSecondRepair(t *testing.T, lost map[string]bool) {
	t.Helper()
	before := files(t, fx.dir, ".ldb")
	rep := repairOK(t, fx.dir)
	if rep.Lost() || rep.Rewritten {
		t.Errorf("second repair: lost %v, rewritten %v", rep.Lost(), rep.Rewritten)
	}
	if after := files(t, fx.dir, ".ldb"); !slices.Equal(before, after) {
		t.Errorf("second repair changed the tables: %v -> %v", before, after)
	}
	fx.check(t, lost)
}

func TestRepairMetadataLoss(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, dir string)
	}{
		{"CURRENT deleted", func(t *testing.T, dir string) { rm(t, filepath.Join(dir, "CURRENT")) }},
		{"MANIFEST deleted", func(t *testing.T, dir string) {
			for _, m := range files(t, dir, "") {
				if strings.HasPrefix(m, "MANIFEST-") {
					rm(t, filepath.Join(dir, m))
				}
			}
		}},
		{"MANIFEST truncated", func(t *testing.T, dir string) {
			m := currentManifest(t, dir)
			st, err := os.Stat(m)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(m, st.Size()/2); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newRepairFixture(t)
			tc.damage(t, fx.dir)
			rep := repairOK(t, fx.dir)
			if rep.Lost() {
				t.Errorf("repair reports a loss where none happened")
			}
			fx.check(t, nil)
			fx.checkSecondRepair(t, nil)
		})
	}
}

func rm(t *testing.T, name string) {
	t.Helper()
	if err := os.Remove(name); err != nil {
		t.Fatal(err)
	}
}

func currentManifest(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "CURRENT"))
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, strings.TrimSpace(string(b)))
}

// tableKeys returns the user keys of table name, and of its first data
// block.
func tableKeys(t *testing.T, name string) (all, first map[string]bool, firstBlock sstable.BlockHandle) {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	r, err := sstable.Open(f, st.Size(), sstable.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	all, first = map[string]bool{}, map[string]bool{}
	i := 0
	_, err = r.Salvage(func(es []sstable.Entry) error {
		for _, e := range es {
			k := string(e.Key[:len(e.Key)-8])
			all[k] = true
			if i == 0 {
				first[k] = true
			}
		}
		i++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	l, err := r.Layout()
	if err != nil {
		t.Fatal(err)
	}
	return all, first, l.Blocks[0].Handle
}

func TestRepairDamagedBlock(t *testing.T) {
	fx := newRepairFixture(t)
	tables := files(t, fx.dir, ".ldb")
	victim := filepath.Join(fx.dir, tables[len(tables)/2])
	_, lost, h := tableKeys(t, victim)
	f, err := os.OpenFile(victim, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("DAMAGE!!"), int64(h.Offset)+int64(h.Length)/2); err != nil {
		t.Fatal(err)
	}
	f.Close()
	rep := repairOK(t, fx.dir)
	var found bool
	for _, tr := range rep.Tables {
		if tr.Name == filepath.Base(victim) {
			found = len(tr.Drops) == 1 && tr.Drops[0].Offset == int64(h.Offset) && tr.Entries > 0
		} else if len(tr.Drops) > 0 || tr.Unreadable {
			t.Errorf("table %s reported damaged", tr.Name)
		}
	}
	if !found || !rep.Lost() {
		t.Errorf("report does not name the damaged block of %s at offset %d", victim, h.Offset)
	}
	if !slices.Contains(rep.MovedToLost, filepath.Base(victim)) {
		t.Errorf("damaged table not moved to lost/: %v", rep.MovedToLost)
	}
	if _, err := os.Stat(filepath.Join(fx.dir, "lost", filepath.Base(victim))); err != nil {
		t.Error(err)
	}
	fx.check(t, lost)
	fx.checkSecondRepair(t, lost)
}

func TestRepairTableDeleted(t *testing.T) {
	fx := newRepairFixture(t)
	tables := files(t, fx.dir, ".ldb")
	victim := filepath.Join(fx.dir, tables[0])
	lost, _, _ := tableKeys(t, victim)
	rm(t, victim)
	rep := repairOK(t, fx.dir)
	if !slices.Equal(rep.Missing, []string{filepath.Base(victim)}) || !rep.Lost() {
		t.Errorf("report names missing tables %v, want [%s]", rep.Missing, filepath.Base(victim))
	}
	fx.check(t, lost)
	fx.checkSecondRepair(t, lost)
}

func TestRepairWALDamaged(t *testing.T) {
	fx := newRepairFixture(t)
	logs := files(t, fx.dir, ".log")
	if len(logs) == 0 {
		t.Fatal("fixture has no WAL")
	}
	victim := filepath.Join(fx.dir, logs[len(logs)-1])
	f, err := os.OpenFile(victim, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := f.Stat()
	if _, err := f.WriteAt([]byte("DAMAGE!!"), st.Size()/2); err != nil {
		t.Fatal(err)
	}
	f.Close()
	rep := repairOK(t, fx.dir)
	var drops int
	for _, l := range rep.Logs {
		if l.Name == filepath.Base(victim) {
			drops = len(l.Drops)
		}
	}
	if drops == 0 || !rep.Lost() || !slices.Contains(rep.MovedToLost, filepath.Base(victim)) {
		t.Errorf("report does not name the damage in %s (drops %d, moved %v)", victim, drops, rep.MovedToLost)
	}
	lost := fx.walKeys
	lost["k1501"] = true // its deletion was in the WAL too
	fx.check(t, lost)
	fx.checkSecondRepair(t, lost)
}

func TestRepairRefusesOpenDB(t *testing.T) {
	dir := t.TempDir()
	db, err := shale.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := shale.Repair(dir, nil); !errors.Is(err, shale.ErrLocked) {
		t.Fatalf("Repair of an open database: %v, want ErrLocked", err)
	}
}

// TestRepairLeavesNonDatabaseDirAlone: Repair of a directory that holds
// no table, log or MANIFEST fails and changes nothing in it. It used to
// take the lock first, and leave the LOCK file it created.
func TestRepairLeavesNonDatabaseDirAlone(t *testing.T) {
	for _, files := range [][]string{nil, {"notes.txt"}} {
		dir := t.TempDir()
		for _, f := range files {
			if err := os.WriteFile(filepath.Join(dir, f), []byte("hello"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		_, err := shale.Repair(dir, nil)
		if err == nil || !strings.Contains(err.Error(), "nothing to repair") {
			t.Errorf("Repair of a directory holding %v: %v; want nothing to repair", files, err)
		}
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		if !slices.Equal(names, files) {
			t.Errorf("Repair of a directory holding %v left it holding %v", files, names)
		}
	}
}

// TestRepairSkipsObsoleteTables: a table a compaction replaced, left on
// disk by a crash before its deletion, is not merged by Repair but moved to
// lost/: its versions are older than the compaction's outputs, which carry
// sequence number 0 in the last level.
func TestRepairSkipsObsoleteTables(t *testing.T) {
	testRepairSkipsStale(t, ".ldb", "replaced by a compaction", func(r shale.RepairReport) []string { return r.Obsolete })
}

// TestRepairSkipsObsoleteLogs: a WAL that the MANIFEST records as flushed
// (numbered below its log number), left on disk by a crash before its
// deletion, is not replayed by Repair: its writes are in tables, and once
// a compaction has given the key's newer value sequence number 0 in the
// last level, the log's older record would win over it.
func TestRepairSkipsObsoleteLogs(t *testing.T) {
	testRepairSkipsStale(t, ".log", "flushed to tables", func(r shale.RepairReport) []string { return r.ObsoleteLogs })
}

// testRepairSkipsStale writes k = "old" and flushes it, saving the one file
// with the given suffix (the table it went to, or the log it was written
// to); overwrites or deletes k, flushes and compacts to the last level;
// puts the saved file back, as a crash before its deletion leaves it; and
// repairs. Repair must list the file as stale (listed), move it to lost/,
// say why (reason) and keep k's newer state.
func testRepairSkipsStale(t *testing.T, suffix, reason string, listed func(shale.RepairReport) []string) {
	for _, tc := range []struct {
		name   string
		second func(db *shale.DB) error // what replaces "old"
		want   string                   // k's value after Repair; "" for none
	}{
		{"overwritten", func(db *shale.DB) error { return db.Put([]byte("k"), []byte("new"), shale.Sync) }, "new"},
		{"deleted", func(db *shale.DB) error { return db.Delete([]byte("k"), shale.Sync) }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db, dir := openDB(t, nil)
			if err := db.Put([]byte("a"), []byte("other"), shale.Sync); err != nil {
				t.Fatal(err)
			}
			if err := db.Put([]byte("k"), []byte("old"), shale.Sync); err != nil {
				t.Fatal(err)
			}
			var stale []string
			var saved []byte
			save := func() {
				if stale = files(t, dir, suffix); len(stale) != 1 {
					t.Fatalf("%s files %v, want one", suffix, stale)
				}
				var err error
				if saved, err = os.ReadFile(filepath.Join(dir, stale[0])); err != nil {
					t.Fatal(err)
				}
			}
			if suffix == ".log" {
				save() // the log k went to, before the flush retires it
			}
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
			if suffix != ".log" {
				save() // the table k was flushed to
			}
			if err := tc.second(db); err != nil {
				t.Fatal(err)
			}
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
			if err := db.Compact(nil, nil); err != nil {
				t.Fatal(err)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			// What the crash leaves: the stale file, back on disk.
			if _, err := os.Stat(filepath.Join(dir, stale[0])); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("%s is still there (%v)", stale[0], err)
			}
			if err := os.WriteFile(filepath.Join(dir, stale[0]), saved, 0o644); err != nil {
				t.Fatal(err)
			}
			// And damage that sends the user to Repair.
			if err := os.Remove(filepath.Join(dir, "CURRENT")); err != nil {
				t.Fatal(err)
			}
			rep, err := shale.Repair(dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(listed(rep), stale) || !slices.Contains(rep.MovedToLost, stale[0]) || rep.Lost() {
				t.Errorf("report: stale %v, moved to lost/ %v, lost %v; want %v stale, moved, nothing lost\n%s",
					listed(rep), rep.MovedToLost, rep.Lost(), stale, rep.String())
			}
			if !strings.Contains(rep.String(), reason) {
				t.Errorf("report does not name the stale file as %s:\n%s", reason, rep.String())
			}
			db = reopen(t, dir, nil)
			defer db.Close()
			v, err := db.Get([]byte("k"))
			if tc.want == "" && !errors.Is(err, shale.ErrNotFound) || tc.want != "" && (err != nil || string(v) != tc.want) {
				t.Errorf("after Repair Get(k) = %q, %v; want %q", v, err, tc.want)
			}
			if v, err := db.Get([]byte("a")); err != nil || string(v) != "other" {
				t.Errorf("after Repair Get(a) = %q, %v; want other", v, err)
			}
		})
	}
}

// tableNames returns the names of the tables in dir, sorted.
func tableNames(t *testing.T, dir string) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.ldb"))
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range names {
		names[i] = filepath.Base(n)
	}
	return names
}

// A table a compaction replaced but an iterator still reads stays on disk,
// and so does every MANIFEST until it goes: the MANIFEST that records its
// deletion is what tells Repair it is stale. A database that switched to a
// new MANIFEST meanwhile (Options.MaxManifestFileSize) and is then copied,
// as a crash would leave it, repairs without the stale table's values.
func TestRepairSkipsHeldTableAcrossManifestSwitch(t *testing.T) {
	opts := &shale.Options{MaxManifestFileSize: 1} // a switch at every doubling
	db, dir := openDB(t, opts)
	for _, kv := range [][2]string{{"a", "other"}, {"k", "old"}} {
		if err := db.Put([]byte(kv[0]), []byte(kv[1]), shale.Sync); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	stale := tableNames(t, dir)
	it := db.NewIterator(nil) // holds the table the compaction replaces
	defer it.Close()
	if err := db.Put([]byte("k"), []byte("new"), shale.Sync); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	before := db.Metrics().ManifestSwitches
	for i := range 6 { // edits enough for switches after the compaction's
		if err := db.Put([]byte(fmt.Sprintf("z%d", i)), []byte("v"), shale.Sync); err != nil {
			t.Fatal(err)
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if db.Metrics().ManifestSwitches < before+2 {
		t.Fatalf("%d switches after the compaction, want 2 or more", db.Metrics().ManifestSwitches-before)
	}
	if _, err := os.Stat(filepath.Join(dir, stale[0])); err != nil {
		t.Fatalf("the table the iterator reads is gone: %v", err)
	}
	// What a crash now leaves, with damage that sends the user to Repair.
	crashed := t.TempDir()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name() == "LOCK" || e.Name() == "CURRENT" || e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if errors.Is(err, os.ErrNotExist) {
			continue // a retired log the background just deleted
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(crashed, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := shale.Repair(crashed, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(rep.Obsolete, stale[0]) {
		t.Errorf("Repair did not find %s obsolete:\n%s", stale[0], rep.String())
	}
	rdb := reopen(t, crashed, nil)
	if v, err := rdb.Get([]byte("k")); err != nil || string(v) != "new" {
		t.Errorf("after Repair Get(k) = %q, %v; want new", v, err)
	}
	// Once the iterator lets the table go, the old MANIFESTs go with it.
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	var ms []string
	for start := time.Now(); time.Since(start) < 10*time.Second; time.Sleep(10 * time.Millisecond) {
		ms, _ = filepath.Glob(filepath.Join(dir, "MANIFEST-*")) // deleted in the background
		if _, err = os.Stat(filepath.Join(dir, stale[0])); errors.Is(err, os.ErrNotExist) && len(ms) == 1 {
			return
		}
	}
	t.Errorf("after the iterator closed: %s still there (%v), MANIFESTs %v", stale[0], err, ms)
}

// The report of a repair that stopped before its MANIFEST claims no result.
func TestRepairReportOfRefusedRepair(t *testing.T) {
	rep, err := shale.Repair(t.TempDir(), nil)
	if err == nil {
		t.Fatal("Repair of an empty directory succeeded")
	}
	if s := rep.String(); strings.Contains(s, "nothing was lost") || !strings.Contains(s, "no result") {
		t.Errorf("report of a refused repair: %q", s)
	}
}
