package tablecache

import (
	"sync"

	"github.com/cockroachdb/errors"
	"github.com/shale-db/shale/internal/vfs"
)

// tableFile is the file under a table's Reader. The cache closes it when
// it evicts the table to stay within its bound, even if the table is still
// in use (an iterator over more tables than the bound holds them all):
// a read after that opens the file for that one read and closes it again,
// so that the number of files open never depends on how many tables an
// iterator spans.
//
// A table is deleted from disk only once no reader holds it (the engine
// waits for its readers), so reopening finds the file. A table Evict drops
// because it is being deleted is not closed under its users.
type tableFile struct {
	fs   vfs.FS
	name string

	mu sync.RWMutex
	f  vfs.File // nil once closed
}

// ReadAt reads from the open file or, once it is closed, from a file
// opened for this read alone.
func (t *tableFile) ReadAt(p []byte, off int64) (int, error) {
	t.mu.RLock()
	if t.f != nil {
		n, err := t.f.ReadAt(p, off)
		t.mu.RUnlock()
		return n, err
	}
	t.mu.RUnlock()
	f, err := t.fs.Open(t.name)
	if err != nil {
		return 0, errors.Wrap(err, "tablecache: reopen table")
	}
	n, err := f.ReadAt(p, off)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = cerr
	}
	return n, err
}

// Close closes the file if it is open; later reads open it again.
func (t *tableFile) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.f == nil {
		return nil
	}
	err := t.f.Close()
	t.f = nil
	return err
}
