// Tests that a whole database directory moves between shale and goleveldb
// in both directions, and that the two give the same answers to the same
// operations.
package interop

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/shale-db/shale"
	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/opt"
	"github.com/syndtr/goleveldb/leveldb/util"
)

// dbOp is one operation of a random history: a put, a delete, or a batch
// of several.
type dbOp struct {
	puts    [][2][]byte
	deletes [][]byte
}

func randomHistory(r *rand.Rand, n, keySpace int) []dbOp {
	key := func() []byte {
		k := fmt.Appendf(nil, "key%06d", r.IntN(keySpace))
		if r.IntN(20) == 0 {
			k = append(k, 0xff, 0x00, '\t', '\n') // bytes that are not text
		}
		return k
	}
	ops := make([]dbOp, n)
	for i := range ops {
		for range 1 + r.IntN(3)*r.IntN(5) {
			if r.IntN(5) == 0 {
				ops[i].deletes = append(ops[i].deletes, key())
				continue
			}
			v := bytes.Repeat(fmt.Appendf(nil, "v%d.", i), 1+r.IntN(40))
			ops[i].puts = append(ops[i].puts, [2][]byte{key(), v})
		}
	}
	return ops
}

func (op dbOp) applyShale(db *shale.DB) error {
	var b shale.Batch
	for _, kv := range op.puts {
		b.Put(kv[0], kv[1])
	}
	for _, k := range op.deletes {
		b.Delete(k)
	}
	return db.Write(&b, shale.NoSync)
}

func (op dbOp) applyGoleveldb(db *leveldb.DB) error {
	b := new(leveldb.Batch)
	for _, kv := range op.puts {
		b.Put(kv[0], kv[1])
	}
	for _, k := range op.deletes {
		b.Delete(k)
	}
	return db.Write(b, nil)
}

// model applies ops to a map, puts before deletes as each batch orders them.
func model(ops []dbOp) map[string]string {
	m := map[string]string{}
	for _, op := range ops {
		for _, kv := range op.puts {
			m[string(kv[0])] = string(kv[1])
		}
		for _, k := range op.deletes {
			delete(m, string(k))
		}
	}
	return m
}

type kv struct{ k, v string }

func sortedModel(m map[string]string) []kv {
	var out []kv
	for k, v := range m {
		out = append(out, kv{k, v})
	}
	slices.SortFunc(out, func(a, b kv) int { return bytes.Compare([]byte(a.k), []byte(b.k)) })
	return out
}

func scanShale(t *testing.T, db *shale.DB) []kv {
	t.Helper()
	var out []kv
	for e, err := range db.All(nil) {
		if err != nil {
			t.Fatalf("shale scan: %v", err)
		}
		out = append(out, kv{string(e.Key), string(e.Value)})
	}
	return out
}

func scanGoleveldb(t *testing.T, db *leveldb.DB) []kv {
	t.Helper()
	it := db.NewIterator(nil, nil)
	defer it.Release()
	var out []kv
	for it.Next() {
		out = append(out, kv{string(it.Key()), string(it.Value())})
	}
	if err := it.Error(); err != nil {
		t.Fatalf("goleveldb scan: %v", err)
	}
	return out
}

func sameScan(t *testing.T, what string, got, want []kv) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d entries, want %d", what, len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s: entry %d is %q=%.30q, want %q=%.30q", what, i, got[i].k, got[i].v, want[i].k, want[i].v)
		}
	}
}

// Written by shale, some of it compacted below level 0, some in a level-0
// table and some only in the WAL, then read by goleveldb (which replays
// shale's WAL). The layout does not depend on when background compactions
// run: the second part fits in one memtable, flushed by hand into level 0's
// only table.
func TestShaleDirectoryOpensInGoleveldb(t *testing.T) {
	dir := t.TempDir()
	ops := randomHistory(rand.New(rand.NewPCG(1, 1)), 6000, 3000)
	apply := func(db *shale.DB, ops []dbOp) {
		for _, op := range ops {
			if err := op.applyShale(db); err != nil {
				t.Fatal(err)
			}
		}
	}
	db, err := shale.Open(dir, &shale.Options{WriteBufferSize: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	apply(db, ops[:len(ops)/2])
	if err := db.Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = shale.Open(dir, &shale.Options{WriteBufferSize: 16 << 20})
	if err != nil {
		t.Fatal(err)
	}
	apply(db, ops[len(ops)/2:len(ops)*5/6])
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	apply(db, ops[len(ops)*5/6:])
	st, _ := db.Stats()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	levels := map[bool]int{}
	for _, tb := range st.Tables {
		levels[tb.Level == 0]++
	}
	if levels[true] == 0 || levels[false] == 0 {
		t.Fatalf("tables %+v: the test must cover level 0 and a level below it", st.Tables)
	}
	gdb, err := leveldb.OpenFile(dir, &opt.Options{ErrorIfMissing: true})
	if err != nil {
		t.Fatalf("goleveldb cannot open shale's directory: %v", err)
	}
	defer gdb.Close()
	want := sortedModel(model(ops))
	sameScan(t, "goleveldb reading shale", scanGoleveldb(t, gdb), want)
	for _, e := range want[:100] {
		v, err := gdb.Get([]byte(e.k), nil)
		if err != nil || string(v) != e.v {
			t.Fatalf("goleveldb Get(%q) = %.30q, %v", e.k, v, err)
		}
	}
}

// Written by goleveldb, with its compactions moving tables below level 0,
// then read by shale; then written by shale and read by goleveldb again.
func TestGoleveldbDirectoryOpensInShale(t *testing.T) {
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(2, 2))
	ops := randomHistory(r, 8000, 4000)
	gdb, err := leveldb.OpenFile(dir, &opt.Options{WriteBuffer: 64 << 10, CompactionTableSize: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range ops {
		if err := op.applyGoleveldb(gdb); err != nil {
			t.Fatal(err)
		}
	}
	if err := gdb.CompactRange(util.Range{}); err != nil {
		t.Fatal(err)
	}
	more := randomHistory(r, 500, 4000) // left in goleveldb's WAL
	for _, op := range more {
		if err := op.applyGoleveldb(gdb); err != nil {
			t.Fatal(err)
		}
	}
	if err := gdb.Close(); err != nil {
		t.Fatal(err)
	}
	ops = append(ops, more...)

	db, err := shale.Open(dir, nil)
	if err != nil {
		t.Fatalf("shale cannot open goleveldb's directory: %v", err)
	}
	want := sortedModel(model(ops))
	sameScan(t, "shale reading goleveldb", scanShale(t, db), want)
	st, _ := db.Stats()
	deep := 0
	for _, tb := range st.Tables {
		if tb.Level > 0 {
			deep++
		}
	}
	if deep == 0 {
		t.Fatal("goleveldb left no tables below level 0: the test must cover them")
	}
	for _, e := range want[:200] {
		v, err := db.Get([]byte(e.k))
		if err != nil || string(v) != e.v {
			t.Fatalf("shale Get(%q) = %.30q, %v", e.k, v, err)
		}
	}
	// And back: shale's writes on top, read by goleveldb.
	last := randomHistory(r, 1000, 4000)
	for _, op := range last {
		if err := op.applyShale(db); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	ops = append(ops, last...)
	gdb, err = leveldb.OpenFile(dir, nil)
	if err != nil {
		t.Fatalf("goleveldb cannot reopen after shale: %v", err)
	}
	defer gdb.Close()
	sameScan(t, "goleveldb after shale", scanGoleveldb(t, gdb), sortedModel(model(ops)))
}

// The same operations applied to both stores give the same scans, in both
// directions and from random seeks, before and after a reopen.
func TestDifferentialScans(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	ops := randomHistory(r, 5000, 2000)
	sdb, err := shale.Open(t.TempDir(), &shale.Options{WriteBufferSize: 32 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer sdb.Close()
	gdb, err := leveldb.OpenFile(t.TempDir(), &opt.Options{WriteBuffer: 32 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer gdb.Close()
	for i, op := range ops {
		if err := op.applyShale(sdb); err != nil {
			t.Fatal(err)
		}
		if err := op.applyGoleveldb(gdb); err != nil {
			t.Fatal(err)
		}
		if i%1000 == 999 {
			sameScan(t, fmt.Sprintf("after %d ops", i+1), scanShale(t, sdb), scanGoleveldb(t, gdb))
		}
	}
	sit := sdb.NewIterator(nil)
	defer sit.Close()
	git := gdb.NewIterator(nil, nil)
	defer git.Release()
	for range 2000 {
		seek := fmt.Appendf(nil, "key%06d", r.IntN(2100))
		sok, gok := sit.SeekGE(seek), git.Seek(seek)
		for step := 0; ; step++ {
			if sok != gok {
				t.Fatalf("seek %q step %d: shale %v, goleveldb %v", seek, step, sok, gok)
			}
			if !sok || step == 5 {
				break
			}
			if !bytes.Equal(sit.Key(), git.Key()) || !bytes.Equal(sit.Value(), git.Value()) {
				t.Fatalf("seek %q step %d: shale %q, goleveldb %q", seek, step, sit.Key(), git.Key())
			}
			if step%2 == 0 {
				sok, gok = sit.Next(), git.Next()
			} else {
				sok, gok = sit.Prev(), git.Prev()
				sok, gok = sit.Next() && sok, git.Next() && gok
			}
		}
	}
	if err := errors.Join(sit.Err(), git.Error()); err != nil {
		t.Fatal(err)
	}
}

// The directory's LOCK excludes goleveldb and shale from each other, both
// ways, at once.
func TestLockExcludesGoleveldb(t *testing.T) {
	dir := t.TempDir()
	gdb, err := leveldb.OpenFile(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := shale.Open(dir, nil); !errors.Is(err, shale.ErrLocked) {
		t.Fatalf("shale.Open beside goleveldb: %v, want ErrLocked", err)
	}
	if _, err := shale.Open(dir, &shale.Options{ReadOnly: true}); !errors.Is(err, shale.ErrLocked) {
		t.Fatalf("read-only shale.Open beside goleveldb: %v, want ErrLocked", err)
	}
	gdb.Close()

	db, err := shale.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if g, err := leveldb.OpenFile(dir, nil); err == nil {
		g.Close()
		t.Fatal("goleveldb opened a directory shale holds")
	}
}
