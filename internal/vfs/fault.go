package vfs

import (
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"sync"

	"github.com/cockroachdb/errors"
)

// Op is a kind of file-system call that FaultFS counts and can fail.
type Op uint8

// The calls FaultFS intercepts. Sync on a handle from OpenDir is OpSyncDir;
// Sync on any other file is OpSync. Read and ReadAt are both OpRead.
const (
	OpCreate Op = iota
	OpOpen
	OpOpenDir
	OpRemove
	OpRename
	OpLink
	OpMkdirAll
	OpList
	OpStat
	OpLock
	OpWrite
	OpSync
	OpSyncDir
	OpRead
	OpClose
	NumOps // the number of kinds above
)

var opNames = [NumOps]string{
	"create", "open", "opendir", "remove", "rename", "link", "mkdirall", "list",
	"stat", "lock", "write", "sync", "syncdir", "read", "close",
}

// String returns the call's name as it appears in injected errors.
func (o Op) String() string {
	if o < NumOps {
		return opNames[o]
	}
	return "op?"
}

// Mutates reports whether a call of this kind can change what the file
// system holds, live or durable: create, write, sync, directory sync,
// rename, link, remove, mkdirall and lock (which may create its file). Reads,
// opens, lists, stats and closes change nothing.
func (o Op) Mutates() bool {
	switch o {
	case OpCreate, OpWrite, OpSync, OpSyncDir, OpRename, OpLink, OpRemove, OpMkdirAll, OpLock:
		return true
	}
	return false
}

// Call is one intercepted call, as an Injector sees it.
type Call struct {
	Op   Op
	Path string // the file or directory the call is on; for a rename or link, the new name
	Old  string // for a rename or link, the old name; empty otherwise
	// Handle, for a call on an open file (write, sync, syncdir, read,
	// close), is the call that opened it: OpCreate (for writing), OpOpen
	// (for reading) or OpOpenDir. It means nothing for other calls.
	Handle Op
	// N is this call's number among the calls of its Op, from 1; Seq its
	// number among all calls, from 1.
	N, Seq int
}

// String describes the call as "op path", or "op old path" for a rename
// or a link.
func (c Call) String() string {
	if c.Old != "" {
		return c.Op.String() + " " + c.Old + " " + c.Path
	}
	return c.Op.String() + " " + c.Path
}

// An Injector decides the fate of each call: nil lets it through, an error
// fails it. It is called with FaultFS's lock held, one call at a time.
type Injector func(Call) error

// ErrInjected is the default error of the Injectors below.
var ErrInjected = errors.New("vfs: injected fault")

// ShortWriteError, returned by an Injector for an OpWrite, makes the write
// go through in part (half of it, rounded down) before it fails with Err:
// what a write that runs out of space in the middle does.
type ShortWriteError struct{ Err error }

func (e *ShortWriteError) Error() string { return "short write: " + e.Err.Error() }
func (e *ShortWriteError) Unwrap() error { return e.Err }

// FailNth fails the nth call of kind op (n from 1) with err, or
// ErrInjected if err is nil.
func FailNth(op Op, n int, err error) Injector {
	err = orInjected(err)
	return func(c Call) error {
		if c.Op == op && c.N == n {
			return err
		}
		return nil
	}
}

// FailSeq fails the nth call of any kind (n from 1) with err, or
// ErrInjected if err is nil.
func FailSeq(n int, err error) Injector {
	err = orInjected(err)
	return func(c Call) error {
		if c.Seq == n {
			return err
		}
		return nil
	}
}

// FailWhen fails every call for which pred holds with err, or ErrInjected
// if err is nil.
func FailWhen(pred func(Call) bool, err error) Injector {
	err = orInjected(err)
	return func(c Call) error {
		if pred(c) {
			return err
		}
		return nil
	}
}

// FailRandomly fails each call of the given kinds (every kind if none are
// given) with probability p, drawn from a generator seeded with seed, so a
// run can be repeated exactly when the calls come in the same order.
func FailRandomly(seed uint64, p float64, err error, ops ...Op) Injector {
	err = orInjected(err)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return func(c Call) error {
		if len(ops) > 0 && !containsOp(ops, c.Op) {
			return nil
		}
		if rng.Float64() < p {
			return err
		}
		return nil
	}
}

// Chain returns an Injector that passes each call to every one of injs, in
// order, and fails it with the first error any of them returned. Every
// Injector sees every call, so a Recorder in a chain misses nothing.
func Chain(injs ...Injector) Injector {
	return func(c Call) error {
		var first error
		for _, inj := range injs {
			if err := inj(c); err != nil && first == nil {
				first = err
			}
		}
		return first
	}
}

// Recorder keeps every call that reaches its Inject method, failed or not,
// in order: an operation log for tests that check which calls were made.
// The zero value is ready; it is safe for concurrent use.
type Recorder struct {
	mu    sync.Mutex
	calls []Call
}

// Inject is an Injector that records c and fails nothing.
func (r *Recorder) Inject(c Call) error {
	r.mu.Lock()
	r.calls = append(r.calls, c)
	r.mu.Unlock()
	return nil
}

// Calls returns the calls recorded so far, oldest first.
func (r *Recorder) Calls() []Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// Take returns the calls recorded so far and forgets them.
func (r *Recorder) Take() []Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	calls := r.calls
	r.calls = nil
	return calls
}

func containsOp(ops []Op, op Op) bool {
	for _, o := range ops {
		if o == op {
			return true
		}
	}
	return false
}

func orInjected(err error) error {
	if err == nil {
		return ErrInjected
	}
	return err
}

// FaultFS wraps an FS, counts its calls by kind and fails the ones its
// Injector chooses. A failed call does nothing (but a short write, which
// writes part of its data) and returns an *os.PathError (an *os.LinkError
// for a rename or a link), as the os package would, whose Err is the injected error;
// so errors.Is sees both the injected error and, for an injected
// syscall.Errno, what the os package would have said. Safe for concurrent
// use.
type FaultFS struct {
	fs     FS
	mu     sync.Mutex
	inject Injector
	counts [NumOps]int
	total  int
}

var _ FS = (*FaultFS)(nil)

// NewFault returns fs with faults chosen by inject (nil: none yet).
func NewFault(fs FS, inject Injector) *FaultFS {
	return &FaultFS{fs: fs, inject: inject}
}

// SetInjector replaces the Injector; nil stops injecting. Counts go on.
func (f *FaultFS) SetInjector(inject Injector) {
	f.mu.Lock()
	f.inject = inject
	f.mu.Unlock()
}

// Count returns how many calls of kind op were made so far, failed or not.
func (f *FaultFS) Count(op Op) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.counts[op]
}

// Total returns how many calls of every kind were made so far.
func (f *FaultFS) Total() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.total
}

// check counts a call and returns its injected error, nil if none.
func (f *FaultFS) check(op Op, path string) error {
	return f.checkCall(Call{Op: op, Path: path})
}

// checkCall counts c (filling in N and Seq) and returns its injected
// error, nil if none.
func (f *FaultFS) checkCall(c Call) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.counts[c.Op]++
	f.total++
	if f.inject == nil {
		return nil
	}
	c.N, c.Seq = f.counts[c.Op], f.total
	return f.inject(c)
}

func pathError(op Op, path string, err error) error {
	return &os.PathError{Op: op.String(), Path: path, Err: err}
}

// call runs a call with no result but an error.
func (f *FaultFS) call(op Op, path string, fn func() error) error {
	if err := f.check(op, path); err != nil {
		return pathError(op, path, err)
	}
	return fn()
}

func (f *FaultFS) openFile(op Op, name string, fn func(string) (File, error)) (File, error) {
	if err := f.check(op, name); err != nil {
		return nil, pathError(op, name, err)
	}
	file, err := fn(name)
	if err != nil {
		return nil, err
	}
	return &faultFile{File: file, fs: f, path: name, opened: op}, nil
}

// Create is an OpCreate call of the FS underneath.
func (f *FaultFS) Create(name string) (File, error) { return f.openFile(OpCreate, name, f.fs.Create) }

// Open is an OpOpen call of the FS underneath.
func (f *FaultFS) Open(name string) (File, error) { return f.openFile(OpOpen, name, f.fs.Open) }

// OpenDir is an OpOpenDir call of the FS underneath; Sync on the handle it
// returns is an OpSyncDir call.
func (f *FaultFS) OpenDir(name string) (File, error) {
	return f.openFile(OpOpenDir, name, f.fs.OpenDir)
}

// Remove is an OpRemove call of the FS underneath.
func (f *FaultFS) Remove(name string) error {
	return f.call(OpRemove, name, func() error { return f.fs.Remove(name) })
}

// Rename is an OpRename call of the FS underneath.
func (f *FaultFS) Rename(oldname, newname string) error {
	return f.twoNames(OpRename, oldname, newname, f.fs.Rename)
}

// Link is an OpLink call of the FS underneath.
func (f *FaultFS) Link(oldname, newname string) error {
	return f.twoNames(OpLink, oldname, newname, f.fs.Link)
}

// twoNames runs a call on two names, a rename or a link.
func (f *FaultFS) twoNames(op Op, oldname, newname string, fn func(string, string) error) error {
	if err := f.checkCall(Call{Op: op, Path: newname, Old: oldname}); err != nil {
		return &os.LinkError{Op: op.String(), Old: oldname, New: newname, Err: err}
	}
	return fn(oldname, newname)
}

// MkdirAll is an OpMkdirAll call of the FS underneath.
func (f *FaultFS) MkdirAll(dir string, perm os.FileMode) error {
	return f.call(OpMkdirAll, dir, func() error { return f.fs.MkdirAll(dir, perm) })
}

// List is an OpList call of the FS underneath.
func (f *FaultFS) List(dir string) ([]string, error) {
	if err := f.check(OpList, dir); err != nil {
		return nil, pathError(OpList, dir, err)
	}
	return f.fs.List(dir)
}

// Stat is an OpStat call of the FS underneath.
func (f *FaultFS) Stat(name string) (os.FileInfo, error) {
	if err := f.check(OpStat, name); err != nil {
		return nil, pathError(OpStat, name, err)
	}
	return f.fs.Stat(name)
}

// Lock is an OpLock call of the FS underneath.
func (f *FaultFS) Lock(name string, shared bool) (io.Closer, error) {
	if err := f.check(OpLock, name); err != nil {
		return nil, pathError(OpLock, name, err)
	}
	return f.fs.Lock(name, shared)
}

// faultFile is a File of a FaultFS.
type faultFile struct {
	File
	fs   *FaultFS
	path string
	// opened is how the file was opened: OpCreate, OpOpen or OpOpenDir
	// (whose Sync is OpSyncDir).
	opened Op
}

// check counts a call on the file and returns its injected error.
func (f *faultFile) check(op Op) error {
	return f.fs.checkCall(Call{Op: op, Path: f.path, Handle: f.opened})
}

func (f *faultFile) Write(p []byte) (int, error) {
	if err := f.check(OpWrite); err != nil {
		var sw *ShortWriteError
		if errors.As(err, &sw) {
			n, werr := f.File.Write(p[:len(p)/2])
			if werr != nil {
				return n, werr
			}
			return n, pathError(OpWrite, f.path, sw.Err)
		}
		return 0, pathError(OpWrite, f.path, err)
	}
	return f.File.Write(p)
}

func (f *faultFile) Read(p []byte) (int, error) {
	if err := f.check(OpRead); err != nil {
		return 0, pathError(OpRead, f.path, err)
	}
	return f.File.Read(p)
}

func (f *faultFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.check(OpRead); err != nil {
		return 0, pathError(OpRead, f.path, err)
	}
	return f.File.ReadAt(p, off)
}

func (f *faultFile) Sync() error {
	op := OpSync
	if f.opened == OpOpenDir {
		op = OpSyncDir
	}
	if err := f.check(op); err != nil {
		return pathError(op, f.path, err)
	}
	return f.File.Sync()
}

// Close always closes the file underneath, so that a failed Close leaks
// nothing; an injected failure is reported after it.
func (f *faultFile) Close() error {
	injected := f.check(OpClose)
	err := f.File.Close()
	if injected != nil {
		return pathError(OpClose, f.path, injected)
	}
	return err
}
