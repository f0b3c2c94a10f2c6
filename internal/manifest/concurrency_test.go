package manifest

import (
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/shale-db/shale/internal/filename"
	"github.com/shale-db/shale/internal/vfs"
)

// TestConcurrentUse runs the engine's pattern under the race detector: one
// goroutine logs flushes and compactions, one commits (sequence numbers),
// readers take and release versions and check that the files they hold are
// live, and several goroutines allocate file numbers.
func TestConcurrentUse(t *testing.T) {
	vs := mustCreate(t, newTestFS())
	defer vs.Close()
	var stop atomic.Bool
	var wg sync.WaitGroup
	var failed atomic.Value
	fail := func(err error) { failed.CompareAndSwap(nil, err) }
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				if err := readLive(vs); err != nil {
					fail(err)
				}
			}
		}()
	}
	wg.Add(1)
	go func() { // the commit path
		defer wg.Done()
		for !stop.Load() {
			vs.SetLastSequence(vs.LastSequence() + 1)
		}
	}()
	allocated := make(chan uint64, 4000)
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 1000; j++ {
				allocated <- vs.NewFileNum()
			}
		}()
	}
	for i := 0; i < 40; i++ {
		a := flush(t, vs, fmt.Sprintf("k%02d#2,PUT", i), fmt.Sprintf("k%02d#1,PUT", i))
		e := new(VersionEdit)
		e.DeleteFile(0, a)
		e.AddFile(1, meta(a, 1, fmt.Sprintf("k%02d#2,PUT", i), fmt.Sprintf("k%02d#1,PUT", i)))
		if err := vs.LogAndApply(e); err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	wg.Wait()
	close(allocated)
	if err, _ := failed.Load().(error); err != nil {
		t.Fatal(err)
	}
	seen := make(map[uint64]bool)
	for n := range allocated {
		if seen[n] {
			t.Fatalf("file number %d allocated twice", n)
		}
		seen[n] = true
	}
	if n := len(vs.LiveFiles()); n != 40 {
		t.Fatalf("%d live tables, want 40", n)
	}
}

// readLive is a reader's step: take the current version and check that its
// tables are live.
func readLive(vs *VersionSet) error {
	v := vs.Current()
	defer v.Unref()
	live := vs.LiveFiles()
	for _, files := range v.Levels {
		for _, f := range files {
			if _, ok := live[f.Num]; !ok {
				return fmt.Errorf("table %06d of a referenced version not live", f.Num)
			}
		}
	}
	_ = vs.LogNumber()
	return nil
}

// TestOSRoundTrip runs Create, LogAndApply and Load on the real file system.
func TestOSRoundTrip(t *testing.T) {
	dir := t.TempDir()
	fsys := vfs.OS()
	vs, err := Create(fsys, dir)
	if err != nil {
		t.Fatal(err)
	}
	flush(t, vs, "a#1,PUT", "b#1,PUT")
	want := state(vs)
	if err := vs.Close(); err != nil {
		t.Fatal(err)
	}
	if err := vs.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	for _, readOnly := range []bool{false, true} {
		vs, err := Load(fsys, dir, readOnly)
		if err != nil {
			t.Fatal(err)
		}
		if got := state(vs); got != want {
			t.Fatalf("reloaded (read-only %v):\n%s\nwant\n%s", readOnly, got, want)
		}
		vs.Close()
	}
	names, err := fsys.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if typ, _, _ := filename.Parse(n); typ == filename.Temp {
			t.Fatalf("temporary file %s left in %s", n, filepath.Base(dir))
		}
	}
}
