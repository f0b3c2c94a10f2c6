package manifest

import (
	"bytes"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/shale-db/shale/internal/vfs"
)

// memFS is a small in-memory vfs.FS for these tests. It records every
// mutating operation in ops ("create CURRENT", "sync 000002.dbtmp", ...) so
// tests can check the order of durability steps, and fails any operation
// whose record starts with failOp.
type memFS struct {
	mu     sync.Mutex
	files  map[string]*bytes.Buffer // by full path
	ops    []string
	failOp string
}

var _ vfs.FS = (*memFS)(nil)

func newMemFS() *memFS { return &memFS{files: make(map[string]*bytes.Buffer)} }

var errInjected = errors.New("memfs: injected failure")

// op records an operation on name and reports whether it must fail.
func (m *memFS) op(what, name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec := what + " " + filepath.Base(name)
	m.ops = append(m.ops, rec)
	if m.failOp != "" && strings.HasPrefix(rec, m.failOp) {
		return errInjected
	}
	return nil
}

func (m *memFS) setFail(prefix string) { m.mu.Lock(); m.failOp = prefix; m.mu.Unlock() }

func (m *memFS) takeOps() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	ops := m.ops
	m.ops = nil
	return ops
}

// data returns a copy of the file's bytes, or nil if it does not exist.
func (m *memFS) data(name string) []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	if b, ok := m.files[name]; ok {
		return bytes.Clone(b.Bytes())
	}
	return nil
}

func (m *memFS) put(name string, b []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.files[name] = bytes.NewBuffer(bytes.Clone(b))
}

func (m *memFS) Create(name string) (vfs.File, error) {
	if err := m.op("create", name); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	b := new(bytes.Buffer)
	m.files[name] = b
	return &memFile{fs: m, name: name, buf: b}, nil
}

func (m *memFS) Open(name string) (vfs.File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.files[name]
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return &memFile{fs: m, name: name, buf: b, rd: bytes.NewReader(bytes.Clone(b.Bytes()))}, nil
}

func (m *memFS) OpenDir(name string) (vfs.File, error) {
	return &memFile{fs: m, name: name, dir: true}, nil
}

func (m *memFS) Remove(name string) error {
	if err := m.op("remove", name); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.files[name]; !ok {
		return &fs.PathError{Op: "remove", Path: name, Err: fs.ErrNotExist}
	}
	delete(m.files, name)
	return nil
}

func (m *memFS) Rename(oldname, newname string) error {
	if err := m.op("rename", oldname+" "+filepath.Base(newname)); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.files[oldname]
	if !ok {
		return &fs.PathError{Op: "rename", Path: oldname, Err: fs.ErrNotExist}
	}
	delete(m.files, oldname)
	m.files[newname] = b
	return nil
}

func (m *memFS) MkdirAll(string, os.FileMode) error { return nil }

func (m *memFS) List(dir string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var names []string
	for p := range m.files {
		if filepath.Dir(p) == filepath.Clean(dir) {
			names = append(names, filepath.Base(p))
		}
	}
	slices.Sort(names)
	return names, nil
}

func (m *memFS) Stat(name string) (os.FileInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.files[name]
	if !ok {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
	}
	return memInfo{name: filepath.Base(name), size: int64(b.Len())}, nil
}

func (m *memFS) Lock(string, bool) (io.Closer, error) { return io.NopCloser(nil), nil }

// memFile is a file of memFS: written through buf, or read from a snapshot
// taken at Open.
type memFile struct {
	fs   *memFS
	name string
	buf  *bytes.Buffer
	rd   *bytes.Reader
	dir  bool
}

func (f *memFile) Read(p []byte) (int, error) { return f.rd.Read(p) }

func (f *memFile) ReadAt(p []byte, off int64) (int, error) { return f.rd.ReadAt(p, off) }

func (f *memFile) Write(p []byte) (int, error) {
	if err := f.fs.op("write", f.name); err != nil {
		return 0, err
	}
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	return f.buf.Write(p)
}

func (f *memFile) Close() error { return f.fs.op("close", f.name) }

func (f *memFile) Sync() error {
	what := "sync"
	if f.dir {
		what = "syncdir"
	}
	return f.fs.op(what, f.name)
}

func (f *memFile) Stat() (os.FileInfo, error) { return f.fs.Stat(f.name) }

type memInfo struct {
	name string
	size int64
}

func (i memInfo) Name() string       { return i.name }
func (i memInfo) Size() int64        { return i.size }
func (i memInfo) Mode() os.FileMode  { return 0o644 }
func (i memInfo) ModTime() time.Time { return time.Time{} }
func (i memInfo) IsDir() bool        { return false }
func (i memInfo) Sys() any           { return nil }
