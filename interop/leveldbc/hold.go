//go:build leveldb_cgo

package leveldbc

/*
void* leveldbc_hold_background(void);
void leveldbc_release_background(void*);
*/
import "C"

import (
	"sync"
	"unsafe"
)

// HoldBackgroundWork stops LevelDB's background thread, which every
// database opened here shares (the default Env's), from starting more
// work: flushes and compactions, including those Open schedules, wait
// until release is called. Work already under way finishes first:
// HoldBackgroundWork returns once the thread is held.
//
// It lets a test read a directory exactly as another program left it,
// before LevelDB compacts its tables into its own. While held, a write
// that fills the memtable waits for ever, and so does Close (it waits for
// scheduled work): call release before either. Release is safe to call
// more than once, so a test can also register it with t.Cleanup.
func HoldBackgroundWork() (release func()) {
	h := C.leveldbc_hold_background()
	var once sync.Once
	return func() {
		once.Do(func() { C.leveldbc_release_background(unsafe.Pointer(h)) })
	}
}
