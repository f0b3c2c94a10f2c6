package manifest

import (
	"io"
	"path/filepath"
	"strings"

	"github.com/shale-db/shale/internal/vfs"
)

// testFS is the file system of these tests: a vfs.MemFS holding testDir
// (durably),
// seen through a vfs.FaultFS that records every call (for tests of the
// order of durability steps) and fails the calls setFail chooses.
type testFS struct {
	*vfs.FaultFS
	mem *vfs.MemFS
	rec vfs.Recorder
}

func newTestFS() *testFS {
	m := &testFS{mem: vfs.NewMem()}
	if err := m.mem.MkdirAll(testDir, 0o755); err != nil {
		panic(err)
	}
	root, err := m.mem.OpenDir("/") // testDir's entry survives a crash
	if err == nil {
		err = root.Sync()
	}
	if err != nil {
		panic(err)
	}
	root.Close()
	m.FaultFS = vfs.NewFault(m.mem, m.inject(""))
	return m
}

// inject records every call and fails those whose description starts
// with prefix, if it is not empty.
func (m *testFS) inject(prefix string) vfs.Injector {
	fail := vfs.FailWhen(func(c vfs.Call) bool {
		return prefix != "" && strings.HasPrefix(opString(c), prefix)
	}, nil)
	return vfs.Chain(m.rec.Inject, fail)
}

// setFail makes every later call whose description (opString) starts with
// prefix fail with vfs.ErrInjected; "" fails none.
func (m *testFS) setFail(prefix string) { m.SetInjector(m.inject(prefix)) }

// opString describes a call by its kind and base names: "create
// MANIFEST-000001", "sync 000002.dbtmp", "rename 000002.dbtmp CURRENT".
func opString(c vfs.Call) string {
	s := c.Op.String() + " "
	if c.Old != "" {
		s += filepath.Base(c.Old) + " "
	}
	return s + filepath.Base(c.Path)
}

// takeOps returns the calls made since the last takeOps, as opString
// writes them.
func (m *testFS) takeOps() []string {
	var ops []string
	for _, c := range m.rec.Take() {
		ops = append(ops, opString(c))
	}
	return ops
}

// data returns the live contents of name, or nil if it does not exist.
// It bypasses the FaultFS: nothing is recorded or failed.
func (m *testFS) data(name string) []byte {
	f, err := m.mem.Open(name)
	if err != nil {
		return nil
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		panic(err)
	}
	return b
}

// put replaces name's contents with b, durably, bypassing the FaultFS.
func (m *testFS) put(name string, b []byte) {
	f, err := m.mem.Create(name)
	if err == nil {
		_, err = f.Write(b)
	}
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = f.Close()
	}
	if err != nil {
		panic(err)
	}
}
