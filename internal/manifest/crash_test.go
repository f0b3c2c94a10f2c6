package manifest

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"

	"github.com/shale-db/shale/internal/vfs"
)

// crashImages is a vfs.FaultFS over a vfs.MemFS that takes crash images
// just before every call that changes the file system, in every crash mode,
// so a test can restart from each moment.
type crashImages struct {
	mem    *vfs.MemFS
	fs     *vfs.FaultFS
	images []crashImage
}

type crashImage struct {
	name string // the moment and the crash mode
	fs   *vfs.MemFS
}

func newCrashImages() *crashImages {
	c := &crashImages{mem: vfs.NewMem()}
	c.fs = vfs.NewFault(c.mem, func(call vfs.Call) error {
		if call.Op.Mutates() {
			c.snap("before " + opString(call))
		}
		return nil
	})
	return c
}

// crashSeeds is the number of crashes drawn per moment in each mode that
// draws.
const crashSeeds = 2

// snap takes the images of this moment: one that drops every unsynced
// byte, and crashSeeds in each other mode.
func (c *crashImages) snap(moment string) {
	for mode := range vfs.NumCrashModes {
		n := crashSeeds
		if mode == vfs.CrashDropUnsynced {
			n = 1
		}
		for range n {
			seed := uint64(len(c.images))
			c.images = append(c.images, crashImage{
				name: fmt.Sprintf("%s (%s crash, seed %d)", moment, mode, seed),
				fs:   c.mem.CrashCloneWith(mode, seed),
			})
		}
	}
}

// TestCrashAtEveryStep restarts from crash images taken before every file
// system change made by Create, LogAndApply (of small edits and of one that
// spans blocks) and a writable Load, and after the last, in every crash
// mode: each image loads to the state before the
// step or the state after it, and once a step has returned, to the state
// after it.
func TestCrashAtEveryStep(t *testing.T) {
	c := newCrashImages()
	if err := c.mem.MkdirAll(testDir, 0o755); err != nil {
		t.Fatal(err)
	}
	root, _ := c.mem.OpenDir("/")
	if err := root.Sync(); err != nil {
		t.Fatal(err)
	}
	root.Close()

	const none = "no database"
	prev := none
	checked := 0
	check := func(step string, after string) {
		t.Helper()
		c.snap("after " + step)
		for i, img := range c.images {
			got := none
			vs, err := Load(img.fs, testDir, true)
			if err == nil {
				got = state(vs)
			} else if !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("%s: crash image %s: %v", step, img.name, err)
			}
			last := i >= len(c.images)-1-(int(vfs.NumCrashModes)-1)*crashSeeds
			if got != after && (last || got != prev) {
				t.Fatalf("%s: crash image %s loads\n%s\nwant\n%s\nor\n%s", step, img.name, got, prev, after)
			}
		}
		checked += len(c.images)
		c.images = nil
		prev = after
	}

	vs := mustCreate(t, c.fs)
	check("Create", state(vs))
	for _, k := range []string{"a", "b", "c"} {
		flush(t, vs, k+"#1,PUT", k+"#0,PUT")
		check("LogAndApply", state(vs))
	}
	big := new(VersionEdit) // about 35 KiB: fragments over blocks and sectors
	for j := 0; j < 1000; j++ {
		big.AddFile(3, meta(vs.NewFileNum(), 1, fmt.Sprintf("k%05d#1,PUT", j), fmt.Sprintf("k%05d#0,DEL", j)))
	}
	if err := vs.LogAndApply(big); err != nil {
		t.Fatal(err)
	}
	check("a large LogAndApply", state(vs))
	vs.Close()
	vs = mustLoad(t, c.fs, false)
	check("writable Load", state(vs))
	flush(t, vs, "d#1,PUT", "d#0,PUT")
	check("LogAndApply on the new MANIFEST", state(vs))
	vs.Close()
	t.Logf("%d crash images loaded", checked)
}

// TestLoadAfterZeroedTail: a crash during a LogAndApply can leave the new
// MANIFEST size on disk with the last sectors of the edit zero (XFS, ext4
// with data=writeback). The edit was never acknowledged: Load must return
// the state before it, not fail on damage, or the database never opens
// again.
func TestLoadAfterZeroedTail(t *testing.T) {
	var before string
	var images []*vfs.MemFS
	m := newTestFS()
	vs := mustCreate(t, m)
	defer vs.Close()
	flush(t, vs, "a#1,PUT", "a#0,PUT")
	big := new(VersionEdit) // about 35 KiB: over a block boundary
	for j := 0; j < 1000; j++ {
		big.AddFile(3, meta(vs.NewFileNum(), 1, fmt.Sprintf("k%05d#1,PUT", j), fmt.Sprintf("k%05d#0,DEL", j)))
	}
	before = state(vs)
	m.SetInjector(func(c vfs.Call) error {
		if c.Op == vfs.OpSync && c.Path == manifestPath(1) { // the edit is written, not synced
			for seed := range uint64(20) {
				images = append(images, m.mem.CrashCloneWith(vfs.CrashZeroTail, seed))
			}
		}
		return nil
	})
	if err := vs.LogAndApply(big); err != nil {
		t.Fatal(err)
	}
	after := state(vs)
	if len(images) == 0 {
		t.Fatal("no crash image taken")
	}
	for seed, img := range images {
		vs, err := Load(img, testDir, true)
		if err != nil {
			t.Fatalf("seed %d: Load after the crash: %v", seed, err)
		}
		if got := state(vs); got != before && got != after {
			t.Fatalf("seed %d: Load after the crash gives\n%s\nwant the state before the edit", seed, got)
		}
	}
}
