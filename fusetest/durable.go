package fusetest

import (
	"io"
	"math"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/cockroachdb/errors"
)

// durability records what a power cut would leave of the file system:
// for each file, its content as of its last fsync or fdatasync; for each
// directory, its entries as of its last fsync. A file is known by an id
// of the tracker's own, not by its backing inode number, which the
// backing file system reuses once a file is gone while an old directory
// state may still name it.
//
// Callers hold FS.nsMu around the namespace calls (created, unlinked,
// renamed, fsyncDir, cut), so that a directory's listing and the
// inode-to-id map agree.
type durability struct {
	backing string
	mu      struct {
		sync.Mutex
		nextID uint64
		// byIno maps a backing inode number to the id of the file it
		// holds now: an entry goes when the inode's last link does.
		byIno map[uint64]uint64
		files map[uint64]*fileState
		// dirs maps a directory's path relative to the root ("." for
		// the root) to its entries as of its last fsync.
		dirs map[string]map[string]dirEntry
	}
}

// dirEntry is a durable name: a file's id, or a directory.
type dirEntry struct {
	id  uint64
	dir bool
}

// fileState is one file's durable content and what changed since.
type fileState struct {
	mu sync.Mutex
	// image is the content as of the last fsync.
	image []byte
	// dirty is the hull [lo, hi) of the bytes changed since; empty
	// when lo >= hi.
	lo, hi int64
}

// newDurability starts tracking the tree at backing, taking what is
// there now as durable.
func newDurability(backing string) (*durability, error) {
	d := &durability{backing: backing}
	d.mu.byIno = map[uint64]uint64{}
	d.mu.files = map[uint64]*fileState{}
	d.mu.dirs = map[string]map[string]dirEntry{}
	err := filepath.Walk(backing, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(backing, p)
		if err != nil {
			return err
		}
		return d.fsyncDir(rel, true)
	})
	if err != nil {
		return nil, err
	}
	return d, nil
}

// idLocked returns the id of the backing inode ino, making one if it
// has none. A new id's durable content is the file's content now when
// existing is set (a file that was there before tracking began), else
// empty, with the whole file dirty.
func (d *durability) idLocked(ino uint64, path string, existing bool) (uint64, error) {
	if id, ok := d.mu.byIno[ino]; ok {
		return id, nil
	}
	d.mu.nextID++
	id := d.mu.nextID
	fs := &fileState{lo: 0, hi: math.MaxInt64}
	if existing {
		b, err := os.ReadFile(path)
		if err != nil {
			return 0, err
		}
		fs.image, fs.lo, fs.hi = b, 0, 0
	}
	d.mu.byIno[ino] = id
	d.mu.files[id] = fs
	return id, nil
}

// opened returns the id of the file open as fd, at path.
func (d *durability) opened(fd int, path string) (uint64, error) {
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return 0, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.idLocked(st.Ino, path, false)
}

func (d *durability) file(id uint64) *fileState {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.mu.files[id]
}

// changed records that [off, end) of file id changed (end may be
// math.MaxInt64: everything from off on).
func (d *durability) changed(id uint64, off, end int64) {
	fs := d.file(id)
	if fs == nil || end <= off {
		return
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.lo >= fs.hi {
		fs.lo, fs.hi = off, end
		return
	}
	fs.lo, fs.hi = min(fs.lo, off), max(fs.hi, end)
}

// fsyncFile makes file id's content, read from fd, durable.
func (d *durability) fsyncFile(id uint64, fd int) error {
	fs := d.file(id)
	if fs == nil {
		return nil
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return err
	}
	size := st.Size
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.lo >= fs.hi && int64(len(fs.image)) == size {
		return nil
	}
	if fs.lo < fs.hi {
		// Bytes from lo on are read again below; those past size are gone.
		fs.image = fs.image[:min(int64(len(fs.image)), fs.lo, size)]
	} else {
		fs.image = fs.image[:min(int64(len(fs.image)), size)]
	}
	for int64(len(fs.image)) < size {
		fs.image = append(fs.image, make([]byte, size-int64(len(fs.image)))...)
	}
	if fs.lo < fs.hi && fs.lo < size {
		end := min(fs.hi, size)
		if _, err := preadFull(fd, fs.image[fs.lo:end], fs.lo); err != nil {
			return err
		}
	}
	fs.lo, fs.hi = 0, 0
	return nil
}

func preadFull(fd int, b []byte, off int64) (int, error) {
	n := 0
	for n < len(b) {
		m, err := syscall.Pread(fd, b[n:], off+int64(n))
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return n, err
		}
		if m == 0 {
			return n, io.ErrUnexpectedEOF
		}
		n += m
	}
	return n, nil
}

// unlinkedLocked forgets the inode ino's id if the inode had nlink links
// before one went: the backing file system may reuse the number.
func (d *durability) unlinkedLocked(ino uint64, nlink uint64) {
	if nlink <= 1 {
		delete(d.mu.byIno, ino)
	}
}

// unlinking is called, under FS.nsMu, before the name at path goes
// (unlink, or the target of a rename): it returns a function to call
// once it went.
func (d *durability) unlinking(path string) func() {
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil || st.Mode&syscall.S_IFMT == syscall.S_IFDIR {
		return func() {}
	}
	return func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		d.unlinkedLocked(st.Ino, uint64(st.Nlink))
	}
}

// fsyncDir makes the entries of the directory rel (relative to the
// root) durable, as they are now. existing is set for directories that
// were there before tracking began: files it finds with no id are taken
// as durable too.
func (d *durability) fsyncDir(rel string, existing bool) error {
	dir := filepath.Join(d.backing, rel)
	names, err := readDirNames(dir)
	if err != nil {
		return err
	}
	entries := make(map[string]dirEntry, len(names))
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, name := range names {
		p := filepath.Join(dir, name)
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			return err
		}
		switch st.Mode & syscall.S_IFMT {
		case syscall.S_IFDIR:
			entries[name] = dirEntry{dir: true}
			if _, ok := d.mu.dirs[filepath.Join(rel, name)]; !ok {
				d.mu.dirs[filepath.Join(rel, name)] = map[string]dirEntry{}
			}
		case syscall.S_IFREG:
			id, err := d.idLocked(st.Ino, p, existing)
			if err != nil {
				return err
			}
			entries[name] = dirEntry{id: id}
		}
	}
	d.mu.dirs[rel] = entries
	return nil
}

// mkdir records a new directory: empty as far as a power cut knows.
func (d *durability) mkdir(rel string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.mu.dirs[rel] = map[string]dirEntry{}
}

func readDirNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

// cut writes into dst, an empty directory, what a power cut now would
// leave: the durable names of the root, recursively, each file with its
// durable content.
func (d *durability) cut(dst string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cutDirLocked(".", dst)
}

func (d *durability) cutDirLocked(rel, dst string) error {
	for name, e := range d.mu.dirs[rel] {
		p := filepath.Join(dst, name)
		if e.dir {
			if err := os.Mkdir(p, 0o755); err != nil {
				return err
			}
			if err := d.cutDirLocked(filepath.Join(rel, name), p); err != nil {
				return err
			}
			continue
		}
		fs := d.mu.files[e.id]
		if fs == nil {
			return errors.Newf("fusetest: %s names file %d, which is not tracked", filepath.Join(rel, name), e.id)
		}
		fs.mu.Lock()
		err := os.WriteFile(p, fs.image, 0o644)
		fs.mu.Unlock()
		if err != nil {
			return err
		}
	}
	return nil
}
