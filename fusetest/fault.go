package fusetest

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// Op is a kind of file-system call, as the FUSE daemon sees it.
type Op int

const (
	// OpWrite is a WRITE: a write(2) or pwritev(2) (the daemon sees it
	// before the call returns: the mount has no writeback cache), or the
	// writeback of pages dirtied through a shared mapping (the daemon
	// sees it at fsync, close, munmap's later writeback, or whenever the
	// kernel writes dirty pages back).
	OpWrite Op = iota
	// OpFsync is an fsync(2) or fdatasync(2) of a file.
	OpFsync
	// OpFsyncDir is an fsync(2) of a directory.
	OpFsyncDir
	// OpCreate creates a file (open with O_CREAT) or a directory.
	OpCreate
	// OpRename is a rename(2); a Fault's Pattern matches either name.
	OpRename
	// OpAllocate is an fallocate(2).
	OpAllocate
	// OpUnlink is an unlink(2) or rmdir(2).
	OpUnlink
	// OpTruncate is a change of a file's size by (f)truncate(2) or
	// open with O_TRUNC.
	OpTruncate
	numOps
)

var opNames = [numOps]string{"write", "fsync", "fsyncdir", "create", "rename", "fallocate", "unlink", "truncate"}

// String returns the operation's name: "write", "fsync", ...
func (o Op) String() string {
	if o >= 0 && o < numOps {
		return opNames[o]
	}
	return fmt.Sprintf("Op(%d)", int(o))
}

// Fault says which calls fail, and how. The zero Fault fails nothing
// (Err is 0).
type Fault struct {
	// Op is the kind of call that fails.
	Op Op
	// Pattern is matched (filepath.Match) against the base name of the
	// file the call is about; "" matches every name. For OpFsyncDir it
	// is matched against the directory's path relative to the mount's
	// root, "." for the root itself.
	Pattern string
	// Err is what a failing call returns: syscall.EIO, ENOSPC, EDQUOT...
	Err syscall.Errno
	// Short, with OpWrite, makes the first matching write store the
	// first half of its bytes and report that count, without an error;
	// the matching calls after it fail with Err.
	Short bool
	// FromOffset, with OpWrite, spares the bytes before it: a write
	// wholly before it passes (and is not a matching call), a write
	// across it stores the bytes before it and reports that short
	// count, a write at or past it fails with Err. Zero fails every
	// matching write.
	FromOffset int64
	// Times is how many matching calls fail with Err before the fault
	// disarms itself; 0 means every one until Disarm.
	Times int
	// Full makes the fault a full disk (or an exhausted quota): every
	// write, fallocate and creation of any file or directory fails with
	// Err; Op, Pattern, Short and FromOffset are ignored.
	Full bool
}

// Controller arms and disarms faults and counts calls. It is safe for
// concurrent use.
type Controller struct {
	mu struct {
		sync.Mutex
		// fault is the armed fault, nil when none is.
		fault *Fault
		// shortDone is set once a Short fault stored its short count.
		shortDone bool
		// failed counts the calls the armed fault failed.
		failed int
		// log describes the first calls faults failed or cut short.
		log []string
	}
	calls [numOps]atomic.Int64
	// fired counts the calls that faults failed or cut short.
	fired atomic.Int64
	// firstFired is the CLOCK_MONOTONIC time, in nanoseconds, of the
	// first call failed or cut short since the last Arm; 0 if none.
	firstFired atomic.Int64
}

// Arm replaces the armed fault, if any, with f. Calls the daemon is
// already serving are not affected.
func (c *Controller) Arm(f Fault) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mu.fault = &f
	c.mu.shortDone = false
	c.mu.failed = 0
	c.firstFired.Store(0)
}

// Disarm stops failing calls.
func (c *Controller) Disarm() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mu.fault = nil
}

// Calls returns how many calls of kind op the file system has served
// (failed ones included).
func (c *Controller) Calls(op Op) int64 { return c.calls[op].Load() }

// Fired returns how many calls faults have failed or cut short since
// the file system was mounted.
func (c *Controller) Fired() int64 { return c.fired.Load() }

// FirstFired returns the CLOCK_MONOTONIC time (see Now) of the first
// call failed or cut short since the last Arm, and whether there was one.
func (c *Controller) FirstFired() (int64, bool) {
	t := c.firstFired.Load()
	return t, t != 0
}

// maxLog is how many fired calls FiredCalls describes.
const maxLog = 20

// FiredCalls describes the first calls that faults failed or cut short
// since the file system was mounted: operation, name, offset and length
// (for writes), the thread that made the call, and the outcome.
func (c *Controller) FiredCalls() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.mu.log...)
}

// Now returns CLOCK_MONOTONIC in nanoseconds: the clock FirstFired
// reads, the same in every process of the machine.
func Now() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic(err) // cannot fail on Linux
	}
	return ts.Nano()
}

// check counts a call of kind op on name (for OpWrite, of n bytes at
// off) and decides its fate: it returns how many of the n bytes the
// call may store (n unless the call is cut short) and the error it
// fails with (0 if none).
func (c *Controller) check(ctx context.Context, op Op, name string, off int64, n int) (keep int, errno syscall.Errno) {
	return c.checkNames(ctx, op, []string{name}, off, n)
}

// checkNames is check for a call about several names (a rename's two):
// the fault matches if its pattern matches any of them.
func (c *Controller) checkNames(ctx context.Context, op Op, names []string, off int64, n int) (keep int, errno syscall.Errno) {
	c.calls[op].Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	f := c.mu.fault
	if f == nil || f.Err == 0 {
		return n, 0
	}
	defer func() {
		if (keep < n || errno != 0) && len(c.mu.log) < maxLog {
			var pid uint32
			if caller, ok := fuse.FromContext(ctx); ok {
				pid = caller.Pid
			}
			c.mu.log = append(c.mu.log, fmt.Sprintf("%v %s off %d len %d by thread %d: kept %d, %v",
				op, strings.Join(names, " -> "), off, n, pid, keep, errno))
		}
	}()
	if f.Full {
		if op != OpWrite && op != OpAllocate && op != OpCreate {
			return n, 0
		}
		return 0, c.failLocked()
	}
	if op != f.Op || !matchesAny(f.Pattern, names) {
		return n, 0
	}
	if op == OpWrite {
		if f.FromOffset > 0 && off+int64(n) <= f.FromOffset {
			return n, 0
		}
		if f.FromOffset > 0 && off < f.FromOffset {
			c.noteFiredLocked()
			return int(f.FromOffset - off), 0
		}
		if f.Short && !c.mu.shortDone {
			c.mu.shortDone = true
			c.noteFiredLocked()
			return n / 2, 0
		}
	}
	return 0, c.failLocked()
}

// failLocked counts a failed call, disarms the fault after its Times,
// and returns its error.
func (c *Controller) failLocked() syscall.Errno {
	f := c.mu.fault
	c.noteFiredLocked()
	c.mu.failed++
	if f.Times > 0 && c.mu.failed >= f.Times {
		c.mu.fault = nil
	}
	return f.Err
}

func (c *Controller) noteFiredLocked() {
	c.fired.Add(1)
	c.firstFired.CompareAndSwap(0, Now())
}

func matchesAny(pattern string, names []string) bool {
	for _, name := range names {
		if ok, err := filepath.Match(pattern, name); pattern == "" || (ok && err == nil) {
			return true
		}
	}
	return false
}
