package manifest

import (
	"errors"
	"io/fs"
	"testing"

	"github.com/shale-db/shale/internal/vfs"
)

// crashFS is a vfs.MemFS that takes a crash image (CrashClone) after every
// change it is asked to make, so a test can restart from each moment.
type crashFS struct {
	*vfs.MemFS
	images []*vfs.MemFS
}

func (c *crashFS) snap() { c.images = append(c.images, c.CrashClone()) }

func (c *crashFS) Create(name string) (vfs.File, error) {
	f, err := c.MemFS.Create(name)
	c.snap()
	if err != nil {
		return nil, err
	}
	return crashFile{f, c}, nil
}

func (c *crashFS) OpenDir(name string) (vfs.File, error) {
	f, err := c.MemFS.OpenDir(name)
	if err != nil {
		return nil, err
	}
	return crashFile{f, c}, nil
}

func (c *crashFS) Rename(oldname, newname string) error {
	defer c.snap()
	return c.MemFS.Rename(oldname, newname)
}

func (c *crashFS) Remove(name string) error {
	defer c.snap()
	return c.MemFS.Remove(name)
}

type crashFile struct {
	vfs.File
	c *crashFS
}

func (f crashFile) Write(p []byte) (int, error) {
	defer f.c.snap()
	return f.File.Write(p)
}

func (f crashFile) Sync() error {
	defer f.c.snap()
	return f.File.Sync()
}

// TestCrashAtEveryStep restarts from a crash image taken after every file
// system change made by Create, LogAndApply and a writable Load: each image
// loads to the state before the step or the state after it, and once a step
// has returned, to the state after it.
func TestCrashAtEveryStep(t *testing.T) {
	c := &crashFS{MemFS: vfs.NewMem()}
	if err := c.MkdirAll(testDir, 0o755); err != nil {
		t.Fatal(err)
	}
	root, _ := c.OpenDir("/")
	if err := root.Sync(); err != nil {
		t.Fatal(err)
	}
	root.Close()
	c.images = nil

	const none = "no database"
	prev := none
	check := func(step string, after string) {
		t.Helper()
		for i, img := range c.images {
			got := none
			vs, err := Load(img, testDir, true)
			if err == nil {
				got = state(vs)
			} else if !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("%s: crash image %d: %v", step, i, err)
			}
			last := i == len(c.images)-1
			if got != after && (last || got != prev) {
				t.Fatalf("%s: crash image %d of %d loads\n%s\nwant\n%s\nor\n%s", step, i, len(c.images), got, prev, after)
			}
		}
		c.images = nil
		prev = after
	}

	vs := mustCreate(t, c)
	check("Create", state(vs))
	for _, k := range []string{"a", "b", "c"} {
		flush(t, vs, k+"#1,PUT", k+"#0,PUT")
		check("LogAndApply", state(vs))
	}
	vs.Close()
	vs = mustLoad(t, c, false)
	check("writable Load", state(vs))
	flush(t, vs, "d#1,PUT", "d#0,PUT")
	check("LogAndApply on the new MANIFEST", state(vs))
	vs.Close()
}
