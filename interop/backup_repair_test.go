// Tests that checkpoints and repaired directories open in goleveldb, and
// how shale's Repair compares with goleveldb's Recover on the same damage.
package interop

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/shale-db/shale"
	"github.com/shale-db/shale/sstable"
	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/opt"
)

// writeShale writes ops into a new shale database in dir, compacting half
// way so that tables sit in several levels, and leaves it open.
func writeShale(t *testing.T, dir string, ops []dbOp) *shale.DB {
	t.Helper()
	db, err := shale.Open(dir, &shale.Options{WriteBufferSize: 64 << 10, BlockSize: 1 << 10, Compression: shale.NoCompression})
	if err != nil {
		t.Fatal(err)
	}
	for i, op := range ops {
		if err := op.applyShale(db); err != nil {
			t.Fatal(err)
		}
		if i == len(ops)/2 {
			if err := db.Compact(nil, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	return db
}

func openGoleveldb(t *testing.T, dir string) *leveldb.DB {
	t.Helper()
	gdb, err := leveldb.OpenFile(dir, &opt.Options{ErrorIfMissing: true})
	if err != nil {
		t.Fatalf("goleveldb cannot open %s: %v", dir, err)
	}
	return gdb
}

// A checkpoint taken while the database is open, with data in tables on
// several levels and in the WAL, opens in goleveldb with every key.
func TestCheckpointOpensInGoleveldb(t *testing.T) {
	dir := t.TempDir()
	ops := randomHistory(rand.New(rand.NewPCG(7, 7)), 6000, 3000)
	db := writeShale(t, filepath.Join(dir, "db"), ops)
	defer db.Close()
	ck := filepath.Join(dir, "ck")
	if err := db.Checkpoint(ck); err != nil {
		t.Fatal(err)
	}
	gdb := openGoleveldb(t, ck)
	defer gdb.Close()
	sameScan(t, "goleveldb reading a checkpoint", scanGoleveldb(t, gdb), sortedModel(model(ops)))
}

// copyDir copies the regular files of src into a new directory dst.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !e.Type().IsRegular() || e.Name() == "LOCK" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// damageFirstBlock overwrites bytes in the middle of the first data block
// of the newest table.
func damageFirstBlock(t *testing.T, dir string) {
	t.Helper()
	tables, _ := filepath.Glob(filepath.Join(dir, "*.ldb"))
	victim := tables[len(tables)-1]
	f, err := os.OpenFile(victim, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	r, err := sstable.Open(f, st.Size(), sstable.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := r.Layout()
	if err != nil {
		t.Fatal(err)
	}
	h := l.Blocks[0].Handle
	if _, err := f.WriteAt([]byte("DAMAGE!!"), int64(h.Offset+h.Length/2)); err != nil {
		t.Fatal(err)
	}
}

// Repair and goleveldb's Recover on the same damaged directories: both
// must return only values the keys really had; the test logs how many keys
// each keeps, and shale's repaired directory must open in goleveldb with
// exactly what shale reads. Seen (goleveldb v1.0.1-0.20220721030215): both
// keep every key when CURRENT or the MANIFEST is lost or truncated; on a damaged data
// block goleveldb's Recover fails outright (its rewrite of the table
// reports keys out of order) while Repair keeps everything outside the
// block; with a table deleted or a WAL damaged both keep the same keys.
// The -v log gives the counts for each case.
func TestRepairComparedWithGoleveldbRecover(t *testing.T) {
	ops := randomHistory(rand.New(rand.NewPCG(8, 8)), 6000, 3000)
	want := model(ops)
	var deletedTableMinKept float64
	for _, tc := range []struct {
		name     string
		damage   func(t *testing.T, dir string)
		lossless bool
		minKept  float64 // the share of keys Repair must keep with their newest value; -1: counted by damage
	}{
		{"CURRENT deleted", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "CURRENT")) }, true, 1},
		{"MANIFEST deleted", func(t *testing.T, dir string) {
			ms, _ := filepath.Glob(filepath.Join(dir, "MANIFEST-*"))
			for _, m := range ms {
				os.Remove(m)
			}
		}, true, 1},
		{"MANIFEST truncated", func(t *testing.T, dir string) {
			ms, _ := filepath.Glob(filepath.Join(dir, "MANIFEST-*"))
			for _, m := range ms {
				fi, err := os.Stat(m)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.Truncate(m, fi.Size()/2); err != nil {
					t.Fatal(err)
				}
			}
		}, true, 1},
		{"data block damaged", damageFirstBlock, false, 0.99},
		{"table deleted", func(t *testing.T, dir string) {
			tables, _ := filepath.Glob(filepath.Join(dir, "*.ldb"))
			// Which table holds what depends on when background
			// compactions ran, so the share Repair must keep is counted
			// from the table itself: every key it does not hold.
			inTable := userKeys(t, tables[0])
			kept := 0
			for k := range want {
				if !inTable[k] {
					kept++
				}
			}
			deletedTableMinKept = float64(kept) / float64(len(want))
			os.Remove(tables[0])
		}, false, -1},
		{"WAL damaged", func(t *testing.T, dir string) {
			logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
			b, err := os.ReadFile(logs[len(logs)-1])
			if err != nil || len(b) < 100 {
				t.Fatalf("no WAL to damage: %v", err)
			}
			copy(b[len(b)/2:], "DAMAGE!!")
			if err := os.WriteFile(logs[len(logs)-1], b, 0o644); err != nil {
				t.Fatal(err)
			}
		}, false, 0.96}, // one 32 KiB log block of ~370-byte records: ~90 of the ~3,000 keys
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			db := writeShale(t, filepath.Join(base, "orig"), ops)
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			tc.damage(t, filepath.Join(base, "orig"))
			ours, theirs := filepath.Join(base, "shale"), filepath.Join(base, "goleveldb")
			copyDir(t, filepath.Join(base, "orig"), ours)
			copyDir(t, filepath.Join(base, "orig"), theirs)
			rep, err := shale.Repair(ours, nil)
			if err != nil {
				t.Fatalf("shale.Repair: %v", err)
			}
			// goleveldb's Recover may fail outright: that is an outcome to
			// report, not a failure of this test.
			theirKeys, theirN := "failed", -1
			if gdb, err := leveldb.RecoverFile(theirs, nil); err != nil {
				theirKeys = "failed: " + err.Error()
			} else {
				theirN = checkAgainstModel(t, "goleveldb Recover", scanGoleveldb(t, gdb), want, ops, tc.lossless, 0)
				theirKeys = strconv.Itoa(theirN)
				gdb.Close()
			}
			sdb := openGoleveldb(t, ours)
			ourScan := scanGoleveldb(t, sdb)
			sdb.Close()
			minKept := tc.minKept
			if minKept < 0 {
				minKept = deletedTableMinKept
			}
			ourKeys := checkAgainstModel(t, "shale Repair (read by goleveldb)", ourScan, want, ops, tc.lossless, minKept)
			s, err := shale.Open(ours, nil)
			if err != nil {
				t.Fatal(err)
			}
			sameScan(t, "shale and goleveldb reading the repaired directory", scanShale(t, s), ourScan)
			s.Close()
			t.Logf("%s: model %d keys; shale Repair kept %d (lost reported: %v), goleveldb Recover kept %s",
				tc.name, len(want), ourKeys, rep.Lost(), theirKeys)
			if ourKeys < theirN {
				t.Errorf("%s: shale Repair kept %d keys, goleveldb Recover %d", tc.name, ourKeys, theirN)
			}
			if tc.lossless != !rep.Lost() {
				t.Errorf("Repair reports lost=%v, want %v", rep.Lost(), !tc.lossless)
			}
		})
	}
}

// checkAgainstModel checks that every key read holds a value the key once
// had (lossless: exactly the model) and that at least minKept of the
// model's keys hold their newest value, and returns how many do.
func checkAgainstModel(t *testing.T, what string, got []kv, want map[string]string, ops []dbOp, lossless bool, minKept float64) int {
	t.Helper()
	if lossless {
		sameScan(t, what, got, sortedModel(want))
		return len(got)
	}
	had := map[string]bool{}
	for _, op := range ops {
		for _, p := range op.puts {
			had[string(p[0])+"\x00"+string(p[1])] = true
		}
	}
	match := 0
	for _, e := range got {
		if !had[e.k+"\x00"+e.v] {
			t.Errorf("%s: key %q holds %.20q, a value it never had", what, e.k, e.v)
		}
		if want[e.k] == e.v {
			match++
		}
	}
	if float64(match) < minKept*float64(len(want)) {
		t.Errorf("%s: only %d of %d keys kept their newest value", what, match, len(want))
	}
	return match
}

// userKeys returns the user keys of every entry in the table at path.
func userKeys(t *testing.T, path string) map[string]bool {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	r, err := sstable.Open(f, st.Size(), sstable.ReaderOptions{FileName: path})
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	it := r.NewIter()
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		keys[string(k[:len(k)-8])] = true
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	return keys
}
