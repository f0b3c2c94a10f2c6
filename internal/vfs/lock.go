package vfs

import (
	"io"
	"os"
	"slices"
	"sync"

	"github.com/cockroachdb/errors"
)

// held is this process's registry of the OS locks it holds. The kernel's
// answer to a second lock from the same process differs by platform and by
// lock kind (fcntl locks never conflict within a process), so the registry is
// what makes a second Lock in this process fail everywhere. It also keeps us
// from opening and closing another descriptor of a held lock file: on
// platforms where the lock is an fcntl one, closing any descriptor of the
// file would silently drop it.
var held struct {
	sync.Mutex
	locks []*heldLock
}

// heldLock is one OS lock held by this process, shared by refs handles.
type heldLock struct {
	f      *os.File    // the open lock file; releasing closes it
	id     os.FileInfo // the file's identity, compared with os.SameFile
	shared bool
	refs   int // open handles; the OS lock is released when it drops to 0
}

// lockHandle is one successful Lock; Close releases it once.
type lockHandle struct {
	l      *heldLock
	closed bool // guarded by held.Mutex
}

// lockOS is osFS.Lock. Paths are matched by file identity (device and inode,
// or the Windows file index), not spelling, so "d/LOCK" and "d/./LOCK" are the
// same lock. held.Mutex is kept across the open and the lock call; both
// return at once.
func lockOS(name string, shared bool) (io.Closer, error) {
	held.Lock()
	defer held.Unlock()
	if fi, err := os.Stat(name); err == nil {
		if l := findHeldLocked(fi); l != nil {
			if !shared || !l.shared {
				return nil, &heldHere{errors.Wrapf(ErrLocked, "vfs: lock %s: held by this process", name)}
			}
			l.refs++
			return &lockHandle{l: l}, nil
		}
	}
	flag := os.O_RDWR | os.O_CREATE
	if shared {
		flag = os.O_RDONLY | os.O_CREATE // a read lock needs only read access
	}
	f, err := os.OpenFile(name, flag, 0o644)
	if err != nil {
		return nil, err
	}
	if err := lockFile(f, shared); err != nil {
		f.Close()
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		releaseFile(f)
		return nil, err
	}
	l := &heldLock{f: f, id: fi, shared: shared, refs: 1}
	held.locks = append(held.locks, l)
	return &lockHandle{l: l}, nil
}

// findHeldLocked returns the held lock on the file fi describes, or nil.
func findHeldLocked(fi os.FileInfo) *heldLock {
	for _, l := range held.locks {
		if os.SameFile(l.id, fi) {
			return l
		}
	}
	return nil
}

// Close releases this handle; the OS lock goes when the last handle on it
// is closed. Closing twice is harmless: the second call returns nil.
func (h *lockHandle) Close() error {
	held.Lock()
	defer held.Unlock()
	if h.closed {
		return nil
	}
	h.closed = true
	h.l.refs--
	if h.l.refs > 0 {
		return nil
	}
	held.locks = slices.DeleteFunc(held.locks, func(l *heldLock) bool { return l == h.l })
	return releaseFile(h.l.f)
}
