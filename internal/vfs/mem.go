package vfs

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/cockroachdb/errors"
)

// MemFS is an in-memory FS for tests that remembers what was made durable,
// so a test can simulate a crash (power loss) with CrashClone.
//
// The durability model, exactly:
//
//   - Every file has live contents and durable contents. Writes change the
//     live contents; File.Sync sets the durable contents to the live ones.
//     Create on an existing file truncates its live contents (the same file,
//     as O_TRUNC does), not its durable ones.
//   - Every directory has live entries and durable entries (name to file or
//     directory). Create, Link, Lock (creating a lock file), MkdirAll,
//     Rename and Remove change only live entries; syncing a handle on the
//     directory (OpenDir or Open, then Sync) sets its durable entries to its
//     live ones. A rename between directories is durable in each directory
//     on that directory's own sync; until both are synced, a crash may show
//     the file under both names or neither.
//   - A hard link (Link) is one more entry for the same file: the names
//     share its contents, live and durable, and each entry is durable on
//     its own directory's sync. After a crash, the names that survived
//     still share one file.
//   - The root directory always exists. A directory created by MkdirAll
//     survives a crash only if its parent was synced after the creation.
//   - Data and entries are independent: a file whose entry is durable but
//     which was never synced survives empty; a synced file whose entry is not
//     durable is gone.
//
// CrashClone returns the file system a restart after a crash (a power loss)
// would find: each directory holds its durable entries, reached from the
// root through durable entries only, and each file its durable contents.
// Locks are not carried over, and nothing else about the old one is, so the
// clone may be used as a fresh start. Open handles on the original keep
// working on it.
//
// CrashCloneWith crashes as real file systems do, where some of what was
// written and never synced may reach the disk anyway. Its model differs from
// CrashClone's in one thing, the unsynced appended bytes of a file: when a
// file's live contents extend its durable contents, the n bytes past them.
// (A file truncated, or written within its durable contents, since its last
// Sync has none: it keeps its durable contents in every mode.) Per file,
// with k drawn uniformly from 0..n:
//
//   - CrashDropUnsynced keeps none of them: CrashClone's model.
//   - CrashKeepPrefix keeps the first k: the writes that were written back
//     before the crash, cut at any byte.
//   - CrashZeroTail keeps the first j, then k-j zero bytes: the file's size
//     reached the disk before the last of its data did, as XFS or ext4 in
//     data=writeback mode can leave it. Data reaches the disk in whole
//     sectors, so j is drawn uniformly from 0 and the values in 1..k at
//     which the file's kept data ends on a multiple of CrashSectorSize.
//   - CrashAny chooses one of the three above, each with probability 1/3.
//
// Directory entries follow the same rules in every mode. The draws come from
// a generator seeded with seed, files visited in the order of their paths,
// so a crash can be repeated exactly; a file with two names draws once.
//
// Paths are cleaned with path/filepath and taken relative to the root
// ("/a/b", "a/b" and "a/./b" are the same file); both / and the platform's
// separator work. Errors are *fs.PathError values wrapping the io/fs and
// syscall errors the os package would report (errors.Is(err,
// fs.ErrNotExist) works). MemFS is safe for concurrent use: one mutex guards
// the whole tree.
type MemFS struct {
	mu struct {
		sync.Mutex
		root  *memNode
		locks map[*memNode]*memLock // lock files currently held
	}
}

var _ FS = (*MemFS)(nil)

// memNode is a file or a directory. All fields are guarded by MemFS.mu.
type memNode struct {
	dir bool
	// For a file: data is the live contents, synced the contents at the last
	// Sync. synced may share data's backing array; bytes below len(synced)
	// are never written in place, so that sharing is safe (see write).
	data, synced []byte
	// rewritten is set when the live contents were truncated or written
	// below len(synced) since the last Sync: they no longer extend the
	// durable contents, and a crash keeps the durable ones whole.
	rewritten bool
	// For a directory: children are the live entries, durable the entries
	// as of the last Sync of the directory.
	children, durable map[string]*memNode
}

// memLock is a held lock on a MemFS lock file.
type memLock struct {
	shared bool
	refs   int
}

// NewMem returns an empty in-memory file system: just the root directory.
func NewMem() *MemFS {
	m := &MemFS{}
	m.mu.root = newDir()
	m.mu.locks = make(map[*memNode]*memLock)
	return m
}

func newDir() *memNode {
	return &memNode{dir: true, children: map[string]*memNode{}, durable: map[string]*memNode{}}
}

// splitPath returns the elements of name below the root; none for the root.
func splitPath(name string) []string {
	p := filepath.ToSlash(filepath.Clean(name))
	p = strings.TrimPrefix(p, filepath.ToSlash(filepath.VolumeName(name)))
	p = strings.Trim(p, "/")
	if p == "" || p == "." {
		return nil
	}
	return strings.Split(p, "/")
}

// findLocked returns the node name refers to.
func (m *MemFS) findLocked(op, name string) (*memNode, error) {
	n := m.mu.root
	for _, elem := range splitPath(name) {
		if !n.dir {
			return nil, &fs.PathError{Op: op, Path: name, Err: syscall.ENOTDIR}
		}
		if n = n.children[elem]; n == nil {
			return nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
		}
	}
	return n, nil
}

// parentLocked returns the directory that holds name's entry and the
// entry's name. name must not be the root.
func (m *MemFS) parentLocked(op, name string) (*memNode, string, error) {
	elems := splitPath(name)
	if len(elems) == 0 {
		return nil, "", &fs.PathError{Op: op, Path: name, Err: syscall.EINVAL}
	}
	dir, err := m.findLocked(op, filepath.Dir(filepath.Clean(name)))
	if err == nil && !dir.dir {
		err = &fs.PathError{Op: op, Path: name, Err: syscall.ENOTDIR}
	}
	return dir, elems[len(elems)-1], err
}

// Create creates name for reading and writing, truncating it if it exists.
func (m *MemFS) Create(name string) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.createLocked("create", name)
	if err != nil {
		return nil, err
	}
	n.data = nil // a fresh array: the durable contents keep the old one
	n.rewritten = n.rewritten || len(n.synced) > 0
	return &memFile{fs: m, n: n, name: name, writable: true}, nil
}

// createLocked returns the file name, adding an empty one if it is absent.
func (m *MemFS) createLocked(op, name string) (*memNode, error) {
	dir, base, err := m.parentLocked(op, name)
	if err != nil {
		return nil, err
	}
	n := dir.children[base]
	if n == nil {
		n = &memNode{}
		dir.children[base] = n
	}
	if n.dir {
		return nil, &fs.PathError{Op: op, Path: name, Err: syscall.EISDIR}
	}
	return n, nil
}

// Open opens the file or directory name for reading.
func (m *MemFS) Open(name string) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.findLocked("open", name)
	if err != nil {
		return nil, err
	}
	return &memFile{fs: m, n: n, name: name}, nil
}

// OpenDir opens the directory name, so that Sync makes its entries durable.
func (m *MemFS) OpenDir(name string) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.findLocked("opendir", name)
	if err != nil {
		return nil, err
	}
	if !n.dir {
		return nil, &fs.PathError{Op: "opendir", Path: name, Err: syscall.ENOTDIR}
	}
	return &memFile{fs: m, n: n, name: name}, nil
}

// Remove removes the file or empty directory name. Open handles on a
// removed file keep working.
func (m *MemFS) Remove(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	dir, base, err := m.parentLocked("remove", name)
	if err != nil {
		return err
	}
	n := dir.children[base]
	if n == nil {
		return &fs.PathError{Op: "remove", Path: name, Err: fs.ErrNotExist}
	}
	if n.dir && len(n.children) > 0 {
		return &fs.PathError{Op: "remove", Path: name, Err: syscall.ENOTEMPTY}
	}
	delete(dir.children, base)
	return nil
}

// Rename moves oldname's entry to newname, replacing a file there (or an
// empty directory, if oldname is a directory).
func (m *MemFS) Rename(oldname, newname string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	fail := func(err error) error { return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: err} }
	odir, obase, err := m.parentLocked("rename", oldname)
	if err != nil {
		return err
	}
	n := odir.children[obase]
	if n == nil {
		return fail(fs.ErrNotExist)
	}
	ndir, nbase, err := m.parentLocked("rename", newname)
	if err != nil {
		return err
	}
	if old := ndir.children[nbase]; old != nil && old != n {
		switch {
		case n.dir != old.dir && old.dir:
			return fail(syscall.EISDIR)
		case n.dir != old.dir:
			return fail(syscall.ENOTDIR)
		case old.dir && len(old.children) > 0:
			return fail(syscall.ENOTEMPTY)
		}
	}
	if n.dir && m.isWithinLocked(newname, n) {
		return fail(syscall.EINVAL) // a directory into itself
	}
	delete(odir.children, obase)
	ndir.children[nbase] = n
	return nil
}

// Link adds newname as a second entry for the file oldname: the two names
// share one file, its contents and its durability, while each entry is
// durable on its own directory's sync. It fails if newname exists, or (with
// EPERM, as on Linux) if oldname is a directory.
func (m *MemFS) Link(oldname, newname string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	fail := func(err error) error { return &os.LinkError{Op: "link", Old: oldname, New: newname, Err: err} }
	n, err := m.findLocked("link", oldname)
	if err != nil {
		return fail(errors.Unwrap(err))
	}
	if n.dir {
		return fail(syscall.EPERM)
	}
	dir, base, err := m.parentLocked("link", newname)
	if err != nil {
		return fail(errors.Unwrap(err))
	}
	if dir.children[base] != nil {
		return fail(fs.ErrExist)
	}
	dir.children[base] = n
	return nil
}

// isWithinLocked reports whether the path to name passes through dir.
func (m *MemFS) isWithinLocked(name string, dir *memNode) bool {
	n := m.mu.root
	for _, elem := range splitPath(filepath.Dir(filepath.Clean(name))) {
		if n == dir {
			return true
		}
		if n = n.children[elem]; n == nil {
			return false
		}
	}
	return n == dir
}

// MkdirAll creates dir and any missing parents; perm is ignored. A new
// directory is durable only once its parent is synced.
func (m *MemFS) MkdirAll(dir string, perm os.FileMode) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.mu.root
	for _, elem := range splitPath(dir) {
		c := n.children[elem]
		if c == nil {
			c = newDir()
			n.children[elem] = c
		}
		if !c.dir {
			return &fs.PathError{Op: "mkdir", Path: dir, Err: syscall.ENOTDIR}
		}
		n = c
	}
	return nil
}

// List returns the names of the live entries in dir, sorted.
func (m *MemFS) List(dir string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.findLocked("readdir", dir)
	if err != nil {
		return nil, err
	}
	if !n.dir {
		return nil, &fs.PathError{Op: "readdir", Path: dir, Err: syscall.ENOTDIR}
	}
	names := make([]string, 0, len(n.children))
	for name := range n.children {
		names = append(names, name)
	}
	slices.Sort(names)
	return names, nil
}

// Stat returns the metadata of name; Size is the live size.
func (m *MemFS) Stat(name string) (os.FileInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.findLocked("stat", name)
	if err != nil {
		return nil, err
	}
	return n.infoLocked(name), nil
}

// Lock takes the lock file name, creating it (not truncating it) if needed.
// The semantics are FS.Lock's, within this MemFS: shared holders coexist, an
// exclusive holder excludes every other, and a held lock fails at once with
// an error matching ErrLocked. Closing the returned Closer releases it;
// closing twice is harmless.
func (m *MemFS) Lock(name string, shared bool) (io.Closer, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.createLocked("lock", name)
	if err != nil {
		return nil, err
	}
	if l := m.mu.locks[n]; l != nil {
		if !shared || !l.shared {
			return nil, lockedError(name)
		}
		l.refs++
	} else {
		m.mu.locks[n] = &memLock{shared: shared, refs: 1}
	}
	return &memLockHandle{fs: m, n: n}, nil
}
