package vfs

import (
	"path/filepath"
	"testing"
)

// A WAL that nothing is appended to (a reader's Open creates one) keeps no
// populated window: the window after the first is prepared at the first
// copy into the mapping, not at creation.
func TestAppenderPreparesAtFirstAppend(t *testing.T) {
	f, err := OS().Create(filepath.Join(t.TempDir(), "000001.log"))
	if err != nil {
		t.Fatal(err)
	}
	ap, err := AppendTo(f)
	if err != nil {
		t.Fatal(err)
	}
	a, ok := ap.(*mappedAppender)
	if !ok {
		t.Skipf("no mapped appends on this file system (%T)", ap)
	}
	if a.next != nil || a.started {
		t.Fatal("the next window is prepared before any append")
	}
	h := [7]byte{6: fullFragment}
	if err := a.WriteFragment(&h, []byte("payload")); err != nil {
		t.Fatal(err)
	}
	if a.next == nil {
		t.Fatal("the next window is not being prepared after the first append")
	}
	if err := a.Finish(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}
