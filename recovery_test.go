package shale_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shale-db/shale"
	"github.com/shale-db/shale/internal/vfs"
)

// walFrag is one physical record of the log: bytes [start, end), header
// included.
type walFrag struct{ start, end int64 }

// walLayout computes, from the format alone, where each record of the
// given lengths lies in a log: 32 KiB blocks, 7-byte headers, no record
// starting in a block's last 6 bytes.
func walLayout(lengths []int) [][]walFrag {
	const block, header = 32 << 10, 7
	var out [][]walFrag
	var pos int64
	for _, n := range lengths {
		var frags []walFrag
		for first := true; first || n > 0; first = false {
			left := block - pos%block
			if left < header {
				pos += left
				left = block
			}
			take := min(int64(n), left-header)
			frags = append(frags, walFrag{pos, pos + header + take})
			pos += header + take
			n -= int(take)
		}
		out = append(out, frags)
	}
	return out
}

// damageFixture writes records of varied sizes, one Put each, into a fresh
// database and closes it, leaving them in its one WAL. It returns the
// directory, the WAL's path, the keys and values in order and each
// record's fragments.
type damageFixture struct {
	dir, log string
	keys     []string
	vals     map[string]string
	frags    [][]walFrag
}

func newDamageFixture(t *testing.T, seed uint64) *damageFixture {
	t.Helper()
	f := &damageFixture{vals: map[string]string{}}
	var db *shale.DB
	db, f.dir = openDB(t, nil)
	r := rand.New(rand.NewPCG(seed, 7))
	var lengths []int
	for i := range 300 {
		k := fmt.Sprintf("k%04d", i)
		v := strings.Repeat(string(rune('a'+i%26)), r.IntN(1500))
		if i%50 == 49 {
			v = strings.Repeat("L", 40<<10) // spans blocks
		}
		mustPut(t, db, k, v)
		f.keys = append(f.keys, k)
		f.vals[k] = v
		// The batch: 12-byte header, tag, varint lengths, key, value.
		lengths = append(lengths, 12+1+1+len(k)+uvarintLen(len(v))+len(v))
	}
	db.Close()
	logs, _ := filepath.Glob(filepath.Join(f.dir, "*.log"))
	if len(logs) != 1 {
		t.Fatalf("want one WAL, have %v", logs)
	}
	f.log = logs[0]
	f.frags = walLayout(lengths)
	st, err := os.Stat(f.log)
	if err != nil {
		t.Fatal(err)
	}
	last := f.frags[len(f.frags)-1]
	if end := last[len(last)-1].end; end != st.Size() {
		t.Fatalf("layout ends at %d, log is %d bytes: the layout model is wrong", end, st.Size())
	}
	return f
}

func uvarintLen(n int) int {
	l := 1
	for ; n >= 0x80; n >>= 7 {
		l++
	}
	return l
}

// check opens a copy-free reopen with mode and checks that exactly the
// records for which keep(i) holds are present.
func (f *damageFixture) check(t *testing.T, db *shale.DB, keep func(i int) bool) {
	t.Helper()
	for i, k := range f.keys {
		if keep(i) {
			wantGet(t, db, k, []byte(f.vals[k]))
		} else {
			wantGet(t, db, k, nil)
		}
	}
}

// damage flips one payload byte of record rec's fragment fi and returns
// the damaged fragment.
func (f *damageFixture) damage(t *testing.T, rec, fi int) walFrag {
	t.Helper()
	fr := f.frags[rec][fi]
	off := fr.start + 7 + (fr.end-fr.start-7)/2
	if fr.end-fr.start == 7 {
		off = fr.start // an empty fragment: damage its checksum
	}
	data, err := os.ReadFile(f.log)
	if err != nil {
		t.Fatal(err)
	}
	data[off] ^= 0x5a
	if err := os.WriteFile(f.log, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return fr
}

// lostInSkip reports whether LevelDB's reader loses record i when
// fragment d is damaged: a record is lost if it has a fragment in d's
// block at or after d.
func (f *damageFixture) lostInSkip(i int, d walFrag) bool {
	const block = 32 << 10
	for _, fr := range f.frags[i] {
		if fr.start/block == d.start/block && fr.start >= d.start {
			return true
		}
	}
	return false
}

// recordWithFragmentIn returns a record with a fragment starting in block
// b, preferring one that has several fragments if multi is set.
func (f *damageFixture) recordWithFragmentIn(b int64, multi bool) (rec, fi int) {
	for i, frs := range f.frags {
		for j, fr := range frs {
			if fr.start/(32<<10) == b && (!multi || len(frs) > 1) {
				return i, j
			}
		}
	}
	panic("no such record")
}

func TestRecoverySkipCorrupt(t *testing.T) {
	for _, multi := range []bool{false, true} {
		t.Run(fmt.Sprintf("multiFragment=%v", multi), func(t *testing.T) {
			f := newDamageFixture(t, 1)
			rec, fi := f.recordWithFragmentIn(3, multi)
			d := f.damage(t, rec, fi)
			db := reopen(t, f.dir, nil)
			f.check(t, db, func(i int) bool { return !f.lostInSkip(i, d) })
			rep := db.Recovery()
			if len(rep.Logs) != 1 || len(rep.Logs[0].Drops) == 0 {
				t.Fatalf("recovery report does not show the drop: %+v", rep)
			}
			if first := rep.Logs[0].Drops[0]; first.Offset != d.start {
				t.Errorf("first drop at offset %d, damage at fragment %d", first.Offset, d.start)
			}
			if rep.Logs[0].MovedTo == "" {
				t.Fatal("damaged WAL was not kept aside")
			}
			if _, err := os.Stat(rep.Logs[0].MovedTo); err != nil {
				t.Fatalf("damaged WAL not at %s: %v", rep.Logs[0].MovedTo, err)
			}
			// The damage is met once: the next Open replays nothing damaged.
			db.Close()
			db = reopen(t, f.dir, nil)
			for _, lr := range db.Recovery().Logs {
				if lr.Damaged() {
					t.Fatalf("damage met again at the next Open: %+v", lr)
				}
			}
			f.check(t, db, func(i int) bool { return !f.lostInSkip(i, d) })
		})
	}
}

func TestRecoveryPointInTime(t *testing.T) {
	f := newDamageFixture(t, 2)
	rec, fi := f.recordWithFragmentIn(4, false)
	d := f.damage(t, rec, fi)
	prefix := func(i int) bool { return f.frags[i][len(f.frags[i])-1].end <= d.start }
	opts := &shale.Options{Recovery: shale.PointInTime}
	db := reopen(t, f.dir, opts)
	f.check(t, db, prefix)
	if lr := db.Recovery().Logs[0]; !lr.Stopped || lr.Records != countTrue(len(f.keys), prefix) {
		t.Fatalf("report: %+v; want stopped after %d records", lr, countTrue(len(f.keys), prefix))
	}
	mustPut(t, db, "after", "damage")
	db.Close()
	db = reopen(t, f.dir, nil) // and in the default mode too
	f.check(t, db, prefix)
	wantGet(t, db, "after", []byte("damage"))
}

func TestRecoveryStrict(t *testing.T) {
	f := newDamageFixture(t, 3)
	rec, fi := f.recordWithFragmentIn(2, false)
	d := f.damage(t, rec, fi)
	before, err := os.ReadFile(f.log)
	if err != nil {
		t.Fatal(err)
	}
	_, err = shale.Open(f.dir, &shale.Options{Recovery: shale.Strict})
	if !errors.Is(err, shale.ErrCorruption) {
		t.Fatalf("Strict Open of a damaged WAL: %v, want ErrCorruption", err)
	}
	base := filepath.Base(f.log)
	if !strings.Contains(err.Error(), base) || !strings.Contains(err.Error(), fmt.Sprint(d.start)) {
		t.Errorf("error %q does not name %s and offset %d", err, base, d.start)
	}
	// The log stays as it was, for another try in another mode.
	if after, err := os.ReadFile(f.log); err != nil || !bytes.Equal(after, before) {
		t.Errorf("a failed Strict Open changed or removed the WAL: %v", err)
	}
}

func TestRecoveryTornTailEveryMode(t *testing.T) {
	f := newDamageFixture(t, 4)
	data, err := os.ReadFile(f.log)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(9, 9))
	for _, mode := range []shale.RecoveryMode{shale.SkipCorrupt, shale.PointInTime, shale.Strict} {
		for range 4 {
			cut := int64(r.IntN(len(data)))
			t.Run(fmt.Sprintf("%v/cut=%d", mode, cut), func(t *testing.T) {
				dir := t.TempDir()
				copyDBDir(t, f.dir, dir)
				if err := os.WriteFile(filepath.Join(dir, filepath.Base(f.log)), data[:cut], 0o644); err != nil {
					t.Fatal(err)
				}
				db := reopen(t, dir, &shale.Options{Recovery: mode})
				f.check(t, db, func(i int) bool { return f.frags[i][len(f.frags[i])-1].end <= cut })
				if lr := db.Recovery().Logs[0]; lr.Damaged() {
					t.Fatalf("a torn tail reported as damage: %+v", lr)
				}
			})
		}
	}
}

// TestRecoveryTornTailBesideReservedWAL: a kill inside Open, after it
// created its new WAL and before it wrote to it, leaves the replayed WAL,
// ending in a torn write, beside a newer WAL that holds nothing. On Linux
// that WAL is not empty by its size: the appender reserves it, zeros,
// ahead of its first append. It must count as empty, so that the torn tail
// is still the end of the writes: Strict Open failed ("torn write at the
// end of a log that is not the newest"), and the other modes reported
// damage and moved both logs to lost/.
func TestRecoveryTornTailBesideReservedWAL(t *testing.T) {
	f := newDamageFixture(t, 5)
	data, err := os.ReadFile(f.log)
	if err != nil {
		t.Fatal(err)
	}
	var num int
	if _, err := fmt.Sscanf(filepath.Base(f.log), "%06d.log", &num); err != nil {
		t.Fatal(err)
	}
	reserved := reservedWALSize(t)
	t.Logf("a new WAL takes %d bytes before its first append", reserved)
	last := f.frags[len(f.frags)-1]
	cut := last[len(last)-1].start + 10 // inside the last record's last fragment
	for _, mode := range []shale.RecoveryMode{shale.SkipCorrupt, shale.PointInTime, shale.Strict} {
		t.Run(mode.String(), func(t *testing.T) {
			dir := t.TempDir()
			copyDBDir(t, f.dir, dir)
			if err := os.WriteFile(filepath.Join(dir, filepath.Base(f.log)), data[:cut], 0o644); err != nil {
				t.Fatal(err)
			}
			newer := filepath.Join(dir, fmt.Sprintf("%06d.log", num+1))
			if err := os.WriteFile(newer, make([]byte, reserved), 0o644); err != nil {
				t.Fatal(err)
			}
			db := reopen(t, dir, &shale.Options{Recovery: mode})
			f.check(t, db, func(i int) bool { return f.frags[i][len(f.frags[i])-1].end <= cut })
			for _, lr := range db.Recovery().Logs {
				if lr.Damaged() || lr.MovedTo != "" {
					t.Errorf("log %06d: %+v; want no damage and nothing moved to lost/", lr.FileNum, lr)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, "lost")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("lost/ exists (%v)", err)
			}
		})
	}
}

// reservedWALSize returns the size of a WAL that the appender has set up
// and nothing appended to: 0 where it reserves nothing ahead (no Appender
// on this platform).
func reservedWALSize(t *testing.T) int64 {
	t.Helper()
	fsys := vfs.OS()
	name := filepath.Join(t.TempDir(), "000001.log")
	file, err := fsys.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	app, err := vfs.AppendTo(file)
	if err != nil {
		t.Fatal(err)
	}
	st, err := fsys.Stat(name)
	if err != nil {
		t.Fatal(err)
	}
	if app != nil {
		if err := app.Finish(); err != nil {
			t.Fatal(err)
		}
	}
	return st.Size()
}

func countTrue(n int, f func(int) bool) int {
	c := 0
	for i := range n {
		if f(i) {
			c++
		}
	}
	return c
}

// copyDBDir copies the regular files of src into dst.
func copyDBDir(t *testing.T, src, dst string) {
	t.Helper()
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
