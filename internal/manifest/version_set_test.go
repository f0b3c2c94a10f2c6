package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"

	"github.com/shale-db/shale/internal/filename"
	"github.com/shale-db/shale/internal/vfs"
	"github.com/shale-db/shale/wal"
)

const testDir = "/db"

func manifestPath(num uint64) string { return filename.Make(testDir, filename.Manifest, num) }

var currentPath = filename.Make(testDir, filename.Current, 0)

func mustCreate(t testing.TB, fsys vfs.FS) *VersionSet {
	t.Helper()
	vs, err := Create(fsys, testDir)
	if err != nil {
		t.Fatal(err)
	}
	return vs
}

func mustLoad(t testing.TB, fsys vfs.FS, readOnly bool) *VersionSet {
	t.Helper()
	vs, err := Load(fsys, testDir, readOnly)
	if err != nil {
		t.Fatal(err)
	}
	return vs
}

// state describes what a VersionSet recovers, for comparisons.
func state(vs *VersionSet) string {
	v := vs.Current()
	defer v.Unref()
	return fmt.Sprintf("log=%d seq=%d cp1=%x\n%s", vs.LogNumber(), vs.LastSequence(), vs.CompactPointer(1), v)
}

// flush records a new level-0 table [smallest, largest] as the engine's
// flush does, with a new log number and the sequence number advanced.
func flush(t testing.TB, vs *VersionSet, smallest, largest string) uint64 {
	t.Helper()
	logNum := vs.NewFileNum()
	num := vs.NewFileNum()
	vs.SetLastSequence(vs.LastSequence() + 10)
	e := new(VersionEdit)
	e.SetLogNumber(logNum)
	e.AddFile(0, meta(num, 1000+int64(num), smallest, largest))
	if err := vs.LogAndApply(e); err != nil {
		t.Fatal(err)
	}
	return num
}

func TestCreate(t *testing.T) {
	m := newTestFS()
	vs := mustCreate(t, m)
	defer vs.Close()
	if got := string(m.data(currentPath)); got != "MANIFEST-000001\n" {
		t.Fatalf("CURRENT = %q", got)
	}
	if vs.ManifestNumber() != 1 || vs.LogNumber() != 0 || vs.LastSequence() != 0 {
		t.Fatalf("manifest %d log %d seq %d", vs.ManifestNumber(), vs.LogNumber(), vs.LastSequence())
	}
	if n := vs.NewFileNum(); n != 2 {
		t.Fatalf("first NewFileNum = %d, want 2", n)
	}
	var edits []string
	err := ReadEdits(m, manifestPath(1), func(e *VersionEdit) error { edits = append(edits, e.String()); return nil })
	want := "comparator: leveldb.BytewiseComparator\nlog-number: 0\nprev-log-number: 0\nnext-file-number: 2\nlast-sequence: 0\n"
	if err != nil || len(edits) != 1 || edits[0] != want {
		t.Fatalf("MANIFEST-000001 holds %q (err %v), want one edit %q", edits, err, want)
	}
	if _, err := Create(m, testDir); err == nil {
		t.Fatal("Create over an existing database succeeded")
	}
}

// TestCreateDurabilityOrder pins the order of the durability steps: the
// MANIFEST is synced and its directory entry made durable before CURRENT
// names it; CURRENT is replaced by a synced temp file and a rename, then
// the directory is synced.
func TestCreateDurabilityOrder(t *testing.T) {
	m := newTestFS()
	mustCreate(t, m).Close()
	var ops []string // what changes the file system, and the closes of files
	for _, c := range m.rec.Take() {
		keep := c.Op.Mutates() && c.Op != vfs.OpWrite
		keep = keep || c.Op == vfs.OpClose && c.Path != testDir
		if keep {
			ops = append(ops, opString(c))
		}
	}
	want := []string{
		"create MANIFEST-000001", "sync MANIFEST-000001", "syncdir db",
		"create 000001.dbtmp", "sync 000001.dbtmp", "close 000001.dbtmp",
		"rename 000001.dbtmp CURRENT", "syncdir db",
		"close MANIFEST-000001",
	}
	if strings.Join(ops, "\n") != strings.Join(want, "\n") {
		t.Fatalf("operations:\n%s\nwant:\n%s", strings.Join(ops, "\n"), strings.Join(want, "\n"))
	}
}

func TestLogAndApplyThenLoad(t *testing.T) {
	m := newTestFS()
	vs := mustCreate(t, m)
	a := flush(t, vs, "a#1,PUT", "c#5,PUT")
	flush(t, vs, "b#11,PUT", "d#15,DEL")
	e := new(VersionEdit) // a compaction moving table a to level 1
	e.DeleteFile(0, a)
	e.AddFile(1, meta(a, 5, "a#1,PUT", "c#5,PUT"))
	e.SetCompactPointer(1, meta(0, 0, "c#5,PUT", "c#5,PUT").Smallest)
	if err := vs.LogAndApply(e); err != nil {
		t.Fatal(err)
	}
	if !e.HasNextFileNumber || !e.HasLastSequence || e.LastSequence != 20 {
		t.Fatalf("LogAndApply did not fill the edit: %s", e)
	}
	want, next := state(vs), vs.NewFileNum()
	vs.Close()

	ro := mustLoad(t, m, true)
	if got := state(ro); got != want {
		t.Fatalf("read-only reload:\n%s\nwant:\n%s", got, want)
	}
	if n := ro.NewFileNum(); n < next-1 {
		t.Fatalf("reloaded NewFileNum = %d, below allocated %d", n, next-1)
	}
	if err := ro.LogAndApply(new(VersionEdit)); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("read-only LogAndApply: %v", err)
	}

	rw := mustLoad(t, m, false)
	if rw.ManifestNumber() <= 1 || string(m.data(currentPath)) != filename.Name(filename.Manifest, rw.ManifestNumber())+"\n" {
		t.Fatalf("writable Load: manifest %d, CURRENT %q", rw.ManifestNumber(), m.data(currentPath))
	}
	flush(t, rw, "x#21,PUT", "y#22,PUT")
	want2 := state(rw)
	rw.Close()
	if got := state(mustLoad(t, m, true)); got != want2 {
		t.Fatalf("reload of the new manifest:\n%s\nwant:\n%s", got, want2)
	}
}

func TestReadOnlyLoadWritesNothing(t *testing.T) {
	m := newTestFS()
	vs := mustCreate(t, m)
	flush(t, vs, "a#1,PUT", "b#1,PUT")
	vs.Close()
	m.takeOps()
	mustLoad(t, m, true).Close()
	calls := m.rec.Take()
	for _, c := range calls {
		if c.Op.Mutates() {
			t.Fatalf("read-only Load did %q", opString(c))
		}
	}
	if len(calls) == 0 {
		t.Fatal("no calls recorded: the check above checked nothing")
	}
}

// buildManifest creates a database with a few edits and returns the states
// after each record and the MANIFEST's size at the end of each record.
func buildManifest(t testing.TB, m *testFS) (states []string, ends []int) {
	vs := mustCreate(t, m)
	defer vs.Close()
	record := func() {
		states = append(states, state(vs))
		ends = append(ends, len(m.data(manifestPath(1))))
	}
	record()
	for i, r := range []string{"a", "c", "e", "g"} {
		flush(t, vs, r+"#1,PUT", r+"z#1,PUT")
		record()
		if i == 1 {
			vs.SetLastSequence(1000) // a large edit spanning blocks
			e := new(VersionEdit)
			for j := 0; j < 1000; j++ { // about 35 KiB
				e.AddFile(3, meta(vs.NewFileNum(), 1, fmt.Sprintf("k%05d#1,PUT", j), fmt.Sprintf("k%05d#0,DEL", j)))
			}
			if err := vs.LogAndApply(e); err != nil {
				t.Fatal(err)
			}
			record()
		}
	}
	return states, ends
}

func TestTornTailLoadsPriorState(t *testing.T) {
	m := newTestFS()
	states, ends := buildManifest(t, m)
	full := m.data(manifestPath(1))
	for n := ends[0]; n < len(full); n += 1 + n%97 {
		m.put(manifestPath(1), full[:n])
		k := 0
		for k+1 < len(ends) && ends[k+1] <= n {
			k++
		}
		vs, err := Load(m, testDir, true)
		if err != nil {
			t.Fatalf("truncated to %d bytes: %v", n, err)
		}
		if got := state(vs); got != states[k] {
			t.Fatalf("truncated to %d bytes: state\n%s\nwant state after record %d:\n%s", n, got, k, states[k])
		}
	}
}

// TestDamageFailsLoad flips bytes all over a MANIFEST: Load either fails
// with an error matching ErrCorrupt that names the file and an offset, or
// (when the damage looks like a torn tail) recovers an earlier state; it
// never recovers a state that was not written.
func TestDamageFailsLoad(t *testing.T) {
	m := newTestFS()
	states, _ := buildManifest(t, m)
	full := m.data(manifestPath(1))
	failures := 0
	// Every byte of the first and last 700, every 53rd in between.
	for off := 0; off < len(full); off++ {
		if off > 700 && off < len(full)-700 && off%53 != 0 {
			continue
		}
		spoilt := bytes.Clone(full)
		spoilt[off] ^= 0x5a
		m.put(manifestPath(1), spoilt)
		vs, err := Load(m, testDir, true)
		if err != nil {
			failures++
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "MANIFEST-000001") || !strings.Contains(err.Error(), "offset") {
				t.Fatalf("byte %d flipped: error %q does not match ErrCorrupt with file and offset", off, err)
			}
			continue
		}
		got := state(vs)
		found := false
		for _, s := range states {
			found = found || s == got
		}
		if !found {
			t.Fatalf("byte %d flipped: loaded a state never written:\n%s", off, got)
		}
	}
	if failures == 0 {
		t.Fatal("no damage detected at all")
	}
}

func TestDamageErrorMessage(t *testing.T) {
	m := newTestFS()
	mustCreate(t, m).Close()
	b := m.data(manifestPath(1))
	b[20] ^= 1
	m.put(manifestPath(1), b)
	_, err := Load(m, testDir, false)
	var ce *wal.CorruptionError
	if !errors.Is(err, ErrCorrupt) || !errors.Is(err, wal.ErrCorrupt) || !errors.As(err, &ce) {
		t.Fatalf("Load of a damaged manifest: %v", err)
	}
	if ce.File != "MANIFEST-000001" || ce.Offset != 0 {
		t.Fatalf("corruption at %s offset %d", ce.File, ce.Offset)
	}
}

// writeManifest writes edits as MANIFEST-num and points CURRENT at it.
func writeManifest(t testing.TB, m *testFS, num uint64, edits ...*VersionEdit) {
	var buf bytes.Buffer
	w := wal.NewWriter(&buf)
	for _, e := range edits {
		if err := w.WriteRecord(e.Encode(nil)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	m.put(manifestPath(num), buf.Bytes())
	m.put(currentPath, []byte(filename.Name(filename.Manifest, num)+"\n"))
}

func TestLoadRefusesBadEdits(t *testing.T) {
	base := func() *VersionEdit {
		e := new(VersionEdit)
		e.SetComparator(BytewiseComparator)
		e.SetLogNumber(3)
		e.SetNextFileNumber(10)
		e.SetLastSequence(7)
		return e
	}
	overlap := base()
	overlap.AddFile(1, meta(4, 1, "a#1,PUT", "f#1,PUT"))
	overlap.AddFile(1, meta(5, 1, "e#1,PUT", "g#1,PUT"))
	undecodable := base()
	undecodable.AddFile(1, &FileMeta{Num: 4, Smallest: []byte("short"), Largest: []byte("short")})
	cases := []struct {
		name    string
		edits   []*VersionEdit
		corrupt bool
		want    string
	}{
		{"no next file number", []*VersionEdit{{HasLogNumber: true, HasLastSequence: true}}, true, "no next file number"},
		{"no log number", []*VersionEdit{{HasNextFileNumber: true, NextFileNumber: 2, HasLastSequence: true}}, true, "no log number"},
		{"no last sequence", []*VersionEdit{{HasNextFileNumber: true, NextFileNumber: 2, HasLogNumber: true}}, true, "no last sequence"},
		{"empty", nil, true, "no next file number"},
		{"overlap", []*VersionEdit{overlap}, true, "overlap"},
		{"undecodable", []*VersionEdit{base(), undecodable}, true, "MANIFEST-000002: record 1 at offset"},
		{"comparator", []*VersionEdit{base(), {Comparator: "leveldb.Other", HasComparator: true}}, false, `comparator "leveldb.Other"`},
	}
	for _, c := range cases {
		m := newTestFS()
		writeManifest(t, m, 2, c.edits...)
		_, err := Load(m, testDir, true)
		if err == nil || errors.Is(err, ErrCorrupt) != c.corrupt || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Load error %v, want corrupt=%v containing %q", c.name, err, c.corrupt, c.want)
		}
	}
}

func TestLoadMarksFileNumbersUsed(t *testing.T) {
	e := new(VersionEdit)
	e.SetComparator(BytewiseComparator)
	e.SetLogNumber(40)
	e.SetNextFileNumber(10) // below what the edit mentions: take the larger
	e.SetLastSequence(7)
	e.AddFile(2, meta(55, 1, "a#1,PUT", "b#1,PUT"))
	m := newTestFS()
	writeManifest(t, m, 60, e)
	vs := mustLoad(t, m, true)
	if n := vs.NewFileNum(); n != 61 {
		t.Fatalf("NewFileNum = %d, want 61", n)
	}
	vs.MarkFileNumUsed(70)
	vs.MarkFileNumUsed(65)
	if n := vs.NewFileNum(); n != 71 {
		t.Fatalf("NewFileNum after MarkFileNumUsed(70) = %d, want 71", n)
	}
}

func TestCurrentFile(t *testing.T) {
	cases := []struct {
		content string
		want    string
	}{
		{"", "CURRENT is empty"},
		{"MANIFEST-000002", "does not end with a newline at offset 15"},
		{"MANIFEST-000002\r\n", "does not name a MANIFEST"},
		{"MANIFEST-000002\n\n", "does not name a MANIFEST"},
		{"000002.log\n", "does not name a MANIFEST"},
		{"MANIFEST-\n", "does not name a MANIFEST"},
		{strings.Repeat("x", 100), "longer than 64 bytes"},
	}
	for _, c := range cases {
		m := newTestFS()
		vs := mustCreate(t, m)
		vs.Close()
		m.put(currentPath, []byte(c.content))
		_, err := Load(m, testDir, true)
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("CURRENT %q: error %v, want ErrCorrupt containing %q", c.content, err, c.want)
		}
	}
	m := newTestFS()
	if _, err := Load(m, testDir, true); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load without CURRENT: %v, want ErrNotExist", err)
	}
	m.put(currentPath, []byte("MANIFEST-000009\n"))
	if _, err := Load(m, testDir, true); err == nil || !strings.Contains(err.Error(), "MANIFEST-000009") {
		t.Errorf("Load with a missing MANIFEST: %v", err)
	}
}

func TestLogAndApplyRefusesInvalidEdits(t *testing.T) {
	m := newTestFS()
	vs := mustCreate(t, m)
	defer vs.Close()
	a := flush(t, vs, "a#1,PUT", "c#1,PUT")
	e := new(VersionEdit)
	e.DeleteFile(0, a)
	e.AddFile(1, meta(a, 1, "a#1,PUT", "c#1,PUT"))
	if err := vs.LogAndApply(e); err != nil {
		t.Fatal(err)
	}
	before, size := state(vs), len(m.data(manifestPath(1)))
	bad := map[string]*VersionEdit{
		"overlap":        {NewFiles: []NewFile{{Level: 1, Meta: meta(vs.NewFileNum(), 1, "b#1,PUT", "d#1,PUT")}}},
		"unallocated":    {NewFiles: []NewFile{{Level: 2, Meta: meta(vs.NewFileNum()+5, 1, "b#1,PUT", "d#1,PUT")}}},
		"log backwards":  {LogNumber: 1, HasLogNumber: true},
		"bad level":      {DeletedFiles: []DeletedFile{{Level: 9, Num: 1}}},
		"other compator": {Comparator: "x", HasComparator: true},
	}
	for name, e := range bad {
		if err := vs.LogAndApply(e); err == nil {
			t.Errorf("%s: LogAndApply accepted the edit", name)
		}
	}
	if state(vs) != before || len(m.data(manifestPath(1))) != size {
		t.Fatal("a refused edit changed the version or the MANIFEST")
	}
	flush(t, vs, "x#1,PUT", "y#1,PUT") // refusals are not sticky
}

func TestLogAndApplyWriteFailureIsSticky(t *testing.T) {
	m := newTestFS()
	vs := mustCreate(t, m)
	defer vs.Close()
	flush(t, vs, "a#1,PUT", "b#1,PUT")
	before := state(vs)
	m.setFail("sync MANIFEST")
	e := new(VersionEdit)
	e.AddFile(0, meta(vs.NewFileNum(), 1, "c#1,PUT", "d#1,PUT"))
	if err := vs.LogAndApply(e); !errors.Is(err, vfs.ErrInjected) {
		t.Fatalf("LogAndApply with a failing sync: %v", err)
	}
	if state(vs) != before {
		t.Fatal("a failed LogAndApply installed its version")
	}
	m.setFail("")
	if err := vs.LogAndApply(new(VersionEdit)); !errors.Is(err, vfs.ErrInjected) {
		t.Fatalf("LogAndApply after a failure: %v, want the sticky error", err)
	}
}

func TestLoadFailureLeavesCurrent(t *testing.T) {
	for _, op := range []string{"create MANIFEST", "sync MANIFEST", "rename", "sync 0", "syncdir"} {
		m := newTestFS()
		vs := mustCreate(t, m)
		flush(t, vs, "a#1,PUT", "b#1,PUT")
		want := state(vs)
		vs.Close()
		m.setFail(op)
		if _, err := Load(m, testDir, false); err == nil {
			t.Fatalf("%s fails: Load succeeded", op)
		}
		m.setFail("")
		if got := state(mustLoad(t, m, true)); got != want {
			t.Fatalf("%s failed: state now\n%s\nwant\n%s", op, got, want)
		}
		// Before the rename the new MANIFEST is removed; from the rename
		// on, CURRENT may name it (now or after a crash), so it stays.
		names, _ := m.List(testDir)
		if op != "syncdir" && op != "rename" && len(names) != 2 { // CURRENT, MANIFEST-000001
			t.Fatalf("%s failed: directory holds %v", op, names)
		}
	}
}

func TestRefKeepsFilesLive(t *testing.T) {
	m := newTestFS()
	vs := mustCreate(t, m)
	defer vs.Close()
	a := flush(t, vs, "a#1,PUT", "b#1,PUT")
	old := vs.Current() // an iterator's reference
	e := new(VersionEdit)
	e.DeleteFile(0, a)
	if err := vs.LogAndApply(e); err != nil {
		t.Fatal(err)
	}
	if _, ok := vs.LiveFiles()[a]; !ok {
		t.Fatal("table of a referenced version is not live")
	}
	old.Ref()
	old.Unref()
	if _, ok := vs.LiveFiles()[a]; !ok {
		t.Fatal("table not live while a reference remains")
	}
	old.Unref()
	if _, ok := vs.LiveFiles()[a]; ok {
		t.Fatal("table still live after the last reference went")
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("Unref below zero did not panic")
			}
		}()
		old.Unref()
	}()
}
