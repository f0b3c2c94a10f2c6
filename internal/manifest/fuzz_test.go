package manifest

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/shale-db/shale/internal/filename"
	"github.com/shale-db/shale/internal/ikey"
)

// FuzzDecodeEdit: Decode never panics, and whatever it accepts encodes and
// decodes back to the same edit.
func FuzzDecodeEdit(f *testing.F) {
	f.Add(pinnedEdit().Encode(nil))
	f.Add([]byte{})
	big := new(VersionEdit)
	for l := 0; l < NumLevels; l++ {
		big.AddFile(l, meta(uint64(l+1)<<40, 1<<50, "a\x00#72057594037927935,PUT", "b#0,DEL"))
		big.DeleteFile(l, uint64(l))
		big.SetCompactPointer(l, ikey.ParseString("k#1,PUT"))
	}
	f.Add(big.Encode(nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		var e VersionEdit
		if err := e.Decode(b); err != nil {
			return
		}
		if err := e.Validate(); err != nil {
			t.Fatalf("decoded an invalid edit: %v", err)
		}
		_ = e.String()
		var again VersionEdit
		if err := again.Decode(e.Encode(nil)); err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if !reflect.DeepEqual(e, again) {
			t.Fatalf("round trip changed the edit:\n%s\nto\n%s", e.String(), again.String())
		}
	})
}

// FuzzManifest replays arbitrary bytes as a MANIFEST: Load never panics;
// what it accepts satisfies the Version invariants, and a writable Load's
// snapshot reloads to the same state.
func FuzzManifest(f *testing.F) {
	m := newTestFS()
	vs := mustCreate(f, m)
	f.Add(m.data(manifestPath(1)))
	a := flush(f, vs, "a#1,PUT", "c#1,PUT")
	flush(f, vs, "b#2,PUT", "d#2,PUT")
	e := new(VersionEdit)
	e.DeleteFile(0, a)
	e.AddFile(1, meta(a, 7, "a#1,PUT", "c#1,PUT"))
	if err := vs.LogAndApply(e); err != nil {
		f.Fatal(err)
	}
	vs.Close()
	f.Add(m.data(manifestPath(1)))
	f.Fuzz(func(t *testing.T, b []byte) {
		m := newTestFS()
		m.put(manifestPath(1), b)
		m.put(currentPath, []byte(filename.Name(filename.Manifest, 1)+"\n"))
		ro, err := Load(m, testDir, true)
		if err != nil {
			return
		}
		v := ro.Current()
		if err := v.Check(); err != nil {
			t.Fatalf("loaded a version breaking the invariants: %v", err)
		}
		v.Unref()
		want := state(ro)
		rw, err := Load(m, testDir, false)
		if err != nil {
			t.Fatalf("writable Load after a read-only one succeeded: %v", err)
		}
		rw.Close()
		if !bytes.Equal(m.data(currentPath), []byte(filename.Name(filename.Manifest, rw.ManifestNumber())+"\n")) {
			t.Fatal("CURRENT not switched")
		}
		if got := state(mustLoad(t, m, true)); got != want {
			t.Fatalf("snapshot reloads as\n%s\nwant\n%s", got, want)
		}
	})
}
