// Package fusetest tests shale on a real kernel file system that fails
// calls: a loopback FUSE file system (go-fuse) over a directory of the
// host, which injects errors on the calls a Controller names and can
// record what a power cut would leave.
//
// Use: Mount a backing directory at a mount point (as root, with
// /dev/fuse: the mount is made with mount(2)), run the code under test
// against the mount point in ANOTHER process (a process that serves a
// FUSE mount and also faults pages of a file on it into memory can
// deadlock against its own garbage collector), arm faults with
// FS.Controller, and read the result on the mount or, after a PowerCut,
// in a fresh directory.
//
// The mount has no writeback cache: each write(2) reaches the daemon
// before it returns, so the daemon's answer (an error, a short count)
// is the writer's; pages dirtied through a shared mapping reach it only
// when the kernel writes them back (at fsync, close, or later).
// Passthrough (the kernel writing to the backing file itself) is off:
// every write goes through the daemon.
//
// An FS is safe for concurrent use.
package fusetest

import (
	"context"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// FS is a mounted fault-injecting loopback file system.
type FS struct {
	backing    string
	mountpoint string
	ctl        Controller
	server     *fuse.Server
	root       *node
	// track records durability; nil unless Options.TrackDurability.
	track *durability
	// nsMu serializes the calls that change names (create, unlink,
	// rename, link, mkdir, rmdir) with directory fsyncs and power cuts.
	nsMu sync.Mutex
}

// Options configure Mount. A nil *Options means the zero value.
type Options struct {
	// TrackDurability records, per file, the content as of its last
	// fsync and, per directory, the entries as of its last fsync, for
	// PowerCut. What is in the backing directory when Mount is called
	// counts as durable.
	TrackDurability bool
	// Debug logs every FUSE request.
	Debug bool
}

// Mount mounts a loopback of backing at mountpoint, with mount(2): it
// needs root (or CAP_SYS_ADMIN) and /dev/fuse, and fails rather than
// fall back to fusermount. Unmount undoes it.
func Mount(mountpoint, backing string, opts *Options) (*FS, error) {
	if opts == nil {
		opts = &Options{}
	}
	backing, err := filepath.Abs(backing)
	if err != nil {
		return nil, err
	}
	f := &FS{backing: backing, mountpoint: mountpoint}
	if opts.TrackDurability {
		if f.track, err = newDurability(backing); err != nil {
			return nil, errors.Wrap(err, "fusetest: track durability")
		}
	}
	lb, err := fs.NewLoopbackRoot(backing)
	if err != nil {
		return nil, errors.Wrapf(err, "fusetest: loopback of %s", backing)
	}
	f.root = &node{LoopbackNode: lb.(*fs.LoopbackNode), fsys: f}
	// No kernel caching of names or attributes: the daemon is asked
	// every time, so that what a test reads after a fault is what the
	// daemon holds.
	var zero time.Duration
	f.server, err = fs.Mount(mountpoint, f.root, &fs.Options{
		EntryTimeout:    &zero,
		AttrTimeout:     &zero,
		NegativeTimeout: &zero,
		MountOptions: fuse.MountOptions{
			DirectMount:       true,
			DirectMountStrict: true,
			FsName:            backing,
			Name:              "shalefault",
			Debug:             opts.Debug,
		},
	})
	if err != nil {
		return nil, errors.Wrapf(err, "fusetest: mount %s", mountpoint)
	}
	return f, nil
}

// Controller returns the FS's fault controller.
func (f *FS) Controller() *Controller { return &f.ctl }

// Mountpoint returns where the FS is mounted.
func (f *FS) Mountpoint() string { return f.mountpoint }

// Backing returns the directory the FS mirrors.
func (f *FS) Backing() string { return f.backing }

// Unmount unmounts the FS and waits for its server to stop.
func (f *FS) Unmount() error {
	if f.server == nil {
		return nil
	}
	err := f.server.Unmount()
	if err == nil {
		f.server = nil
	}
	return errors.Wrapf(err, "fusetest: unmount %s", f.mountpoint)
}

// PowerCut writes into dst, an empty directory, what a power cut now
// would leave of the FS: the names that directory fsyncs made durable,
// each file with its content as of its last fsync or fdatasync. A file
// created and synced whose directory entry was never synced is not
// there; a rename or an unlink not followed by an fsync of the directory
// is undone. The FS needs Options.TrackDurability. Writers should be
// stopped (killed) first: calls served during the cut may or may not
// count.
func (f *FS) PowerCut(dst string) error {
	if f.track == nil {
		return errors.New("fusetest: PowerCut needs Options.TrackDurability")
	}
	f.nsMu.Lock()
	defer f.nsMu.Unlock()
	return f.track.cut(dst)
}

// node is a loopback node that consults the Controller and records
// durability.
type node struct {
	*fs.LoopbackNode
	fsys *FS
}

var (
	_ fs.NodeWrapChilder    = (*node)(nil)
	_ fs.NodeCreater        = (*node)(nil)
	_ fs.NodeOpener         = (*node)(nil)
	_ fs.NodeOpendirHandler = (*node)(nil)
	_ fs.NodeWriter         = (*node)(nil)
	_ fs.NodeWritever       = (*node)(nil)
	_ fs.NodeFsyncer        = (*node)(nil)
	_ fs.NodeAllocater      = (*node)(nil)
	_ fs.NodeSetattrer      = (*node)(nil)
	_ fs.NodeMkdirer        = (*node)(nil)
	_ fs.NodeUnlinker       = (*node)(nil)
	_ fs.NodeRmdirer        = (*node)(nil)
	_ fs.NodeRenamer        = (*node)(nil)
	_ fs.NodeLinker         = (*node)(nil)
	_ fs.NodeCopyFileRanger = (*node)(nil)
)

// WrapChild makes every node of the tree a *node.
func (n *node) WrapChild(ctx context.Context, ops fs.InodeEmbedder) fs.InodeEmbedder {
	return &node{LoopbackNode: ops.(*fs.LoopbackNode), fsys: n.fsys}
}

// rel returns the node's path relative to the root ("." for the root).
func (n *node) rel() string {
	p := n.Path(n.fsys.root.EmbeddedInode())
	if p == "" {
		return "."
	}
	return p
}

// name returns the node's base name ("." for the root).
func (n *node) name() string { return filepath.Base(n.rel()) }

// backingPath returns the backing path of the node's child name.
func (n *node) backingPath(name string) string {
	return filepath.Join(n.fsys.backing, n.rel(), name)
}

func (n *node) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	if _, errno := n.fsys.ctl.check(ctx, OpCreate, name, 0, 0); errno != 0 {
		return nil, nil, 0, errno
	}
	n.fsys.nsMu.Lock()
	defer n.fsys.nsMu.Unlock()
	ch, fh, fuseFlags, errno := n.LoopbackNode.Create(ctx, name, flags, mode, out)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	h, errno := n.fsys.newHandle(fh, n.backingPath(name), flags)
	if errno != 0 {
		fh.(fs.FileReleaser).Release(ctx)
		return nil, nil, 0, errno
	}
	return ch, h, fuseFlags, 0
}

func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if flags&syscall.O_TRUNC != 0 {
		if _, errno := n.fsys.ctl.check(ctx, OpTruncate, n.name(), 0, 0); errno != 0 {
			return nil, 0, errno
		}
	}
	fh, fuseFlags, errno := n.LoopbackNode.Open(ctx, flags)
	if errno != 0 {
		return nil, 0, errno
	}
	h, errno := n.fsys.newHandle(fh, filepath.Join(n.fsys.backing, n.rel()), flags)
	if errno != 0 {
		fh.(fs.FileReleaser).Release(ctx)
		return nil, 0, errno
	}
	return h, fuseFlags, 0
}

func (n *node) OpendirHandle(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	fh, fuseFlags, errno := n.LoopbackNode.OpendirHandle(ctx, flags)
	if errno != 0 {
		return nil, 0, errno
	}
	ds, ok := fh.(loopbackDir)
	if !ok {
		return fh, fuseFlags, 0 // not what this go-fuse version returned when written
	}
	return &dirHandle{loopbackDir: ds, n: n}, fuseFlags, 0
}

func (n *node) Write(ctx context.Context, f fs.FileHandle, data []byte, off int64) (uint32, syscall.Errno) {
	return n.Writev(ctx, f, [][]byte{data}, off)
}

// Writev writes data at off, or the part of it that the controller
// lets through, and records what changed.
func (n *node) Writev(ctx context.Context, f fs.FileHandle, data [][]byte, off int64) (uint32, syscall.Errno) {
	h, ok := f.(*handle)
	if !ok {
		return 0, syscall.EBADF
	}
	total := 0
	for _, d := range data {
		total += len(d)
	}
	keep, errno := n.fsys.ctl.check(ctx, OpWrite, n.name(), off, total)
	if errno != 0 {
		return 0, errno
	}
	if keep < total {
		data = cut(data, keep)
	}
	w, errno := h.lf.Writev(ctx, data, off)
	if n.fsys.track != nil && w > 0 {
		n.fsys.track.changed(h.id, off, off+int64(w))
	}
	return w, errno
}

// cut returns the first keep bytes of data.
func cut(data [][]byte, keep int) [][]byte {
	var out [][]byte
	for _, d := range data {
		if keep <= 0 {
			break
		}
		d = d[:min(len(d), keep)]
		out = append(out, d)
		keep -= len(d)
	}
	return out
}

// Fsync serves fsync and fdatasync of a file. It does not sync the
// backing file: what is durable is what the FS records.
func (n *node) Fsync(ctx context.Context, f fs.FileHandle, flags uint32) syscall.Errno {
	if n.StableAttr().Mode&syscall.S_IFMT == syscall.S_IFDIR {
		return n.fsyncDir(ctx)
	}
	if _, errno := n.fsys.ctl.check(ctx, OpFsync, n.name(), 0, 0); errno != 0 {
		return errno
	}
	h, ok := f.(*handle)
	if !ok || n.fsys.track == nil {
		return 0
	}
	return fs.ToErrno(n.fsys.track.fsyncFile(h.id, h.fd))
}

func (n *node) Allocate(ctx context.Context, f fs.FileHandle, off uint64, size uint64, mode uint32) syscall.Errno {
	if _, errno := n.fsys.ctl.check(ctx, OpAllocate, n.name(), int64(off), int(size)); errno != 0 {
		return errno
	}
	h, ok := f.(*handle)
	if !ok {
		return syscall.EBADF
	}
	errno := h.lf.Allocate(ctx, off, size, mode)
	if errno == 0 && n.fsys.track != nil {
		n.fsys.track.changed(h.id, int64(off), int64(off+size))
	}
	return errno
}

func (n *node) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	size, truncating := in.GetSize()
	if truncating {
		if _, errno := n.fsys.ctl.check(ctx, OpTruncate, n.name(), int64(size), 0); errno != 0 {
			return errno
		}
	}
	if h, ok := f.(*handle); ok {
		// LoopbackNode.Setattr uses the handle when it is a
		// FileSetattrer; hand it the loopback file itself.
		f = h.lf
		if truncating && n.fsys.track != nil {
			defer n.fsys.track.changed(h.id, int64(size), 1<<63-1)
		}
	} else if truncating && n.fsys.track != nil {
		p := filepath.Join(n.fsys.backing, n.rel())
		fd, err := syscall.Open(p, syscall.O_RDONLY, 0)
		if err != nil {
			return fs.ToErrno(err)
		}
		id, err := n.fsys.track.opened(fd, p)
		syscall.Close(fd)
		if err != nil {
			return fs.ToErrno(err)
		}
		defer n.fsys.track.changed(id, int64(size), 1<<63-1)
	}
	return n.LoopbackNode.Setattr(ctx, f, in, out)
}

func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if _, errno := n.fsys.ctl.check(ctx, OpCreate, name, 0, 0); errno != 0 {
		return nil, errno
	}
	n.fsys.nsMu.Lock()
	defer n.fsys.nsMu.Unlock()
	ch, errno := n.LoopbackNode.Mkdir(ctx, name, mode, out)
	if errno == 0 && n.fsys.track != nil {
		n.fsys.track.mkdir(filepath.Join(n.rel(), name))
	}
	return ch, errno
}

func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	if _, errno := n.fsys.ctl.check(ctx, OpUnlink, name, 0, 0); errno != 0 {
		return errno
	}
	n.fsys.nsMu.Lock()
	defer n.fsys.nsMu.Unlock()
	done := func() {}
	if n.fsys.track != nil {
		done = n.fsys.track.unlinking(n.backingPath(name))
	}
	errno := n.LoopbackNode.Unlink(ctx, name)
	if errno == 0 {
		done()
	}
	return errno
}

func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno {
	if _, errno := n.fsys.ctl.check(ctx, OpUnlink, name, 0, 0); errno != 0 {
		return errno
	}
	n.fsys.nsMu.Lock()
	defer n.fsys.nsMu.Unlock()
	return n.LoopbackNode.Rmdir(ctx, name)
}

func (n *node) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	if _, errno := n.fsys.ctl.checkNames(ctx, OpRename, []string{name, newName}, 0, 0); errno != 0 {
		return errno
	}
	np, ok := newParent.(*node)
	if !ok {
		return syscall.EXDEV
	}
	n.fsys.nsMu.Lock()
	defer n.fsys.nsMu.Unlock()
	done := func() {}
	if n.fsys.track != nil && flags&unixRenameExchange == 0 {
		done = n.fsys.track.unlinking(np.backingPath(newName))
	}
	errno := n.LoopbackNode.Rename(ctx, name, np.LoopbackNode, newName, flags)
	if errno == 0 {
		done()
	}
	return errno
}

// unixRenameExchange is RENAME_EXCHANGE: nothing is unlinked.
const unixRenameExchange = 2

func (n *node) Link(ctx context.Context, target fs.InodeEmbedder, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if _, errno := n.fsys.ctl.check(ctx, OpCreate, name, 0, 0); errno != 0 {
		return nil, errno
	}
	t, ok := target.(*node)
	if !ok {
		return nil, syscall.EXDEV
	}
	n.fsys.nsMu.Lock()
	defer n.fsys.nsMu.Unlock()
	return n.LoopbackNode.Link(ctx, t.LoopbackNode, name, out)
}

// CopyFileRange declines, so that the kernel copies with WRITEs this FS
// sees.
func (n *node) CopyFileRange(ctx context.Context, fhIn fs.FileHandle, offIn uint64, out *fs.Inode, fhOut fs.FileHandle, offOut uint64, len uint64, flags uint64) (uint32, syscall.Errno) {
	return 0, syscall.ENOSYS
}

// fsyncDir serves the fsync of a directory.
func (n *node) fsyncDir(ctx context.Context) syscall.Errno {
	rel := n.rel()
	if _, errno := n.fsys.ctl.check(ctx, OpFsyncDir, rel, 0, 0); errno != 0 {
		return errno
	}
	if n.fsys.track == nil {
		return 0
	}
	n.fsys.nsMu.Lock()
	defer n.fsys.nsMu.Unlock()
	return fs.ToErrno(n.fsys.track.fsyncDir(rel, false))
}

// handle is an open file. It deliberately does not implement
// fs.FilePassthroughFder, so that the kernel never writes to the
// backing file behind the daemon's back.
type handle struct {
	lf *fs.LoopbackFile
	fd int
	// id is the file's id in FS.track; 0 when not tracking.
	id uint64
}

var (
	_ fs.FileReader    = (*handle)(nil)
	_ fs.FileReleaser  = (*handle)(nil)
	_ fs.FileFlusher   = (*handle)(nil)
	_ fs.FileGetattrer = (*handle)(nil)
	_ fs.FileLseeker   = (*handle)(nil)
)

// newHandle wraps the loopback file fh of the backing file at path,
// opened with flags.
func (f *FS) newHandle(fh fs.FileHandle, path string, flags uint32) (*handle, syscall.Errno) {
	lf, ok := fh.(*fs.LoopbackFile)
	if !ok {
		return nil, syscall.EIO
	}
	fd, ok := lf.PassthroughFd()
	if !ok {
		return nil, syscall.EBADF
	}
	h := &handle{lf: lf, fd: fd}
	if f.track != nil {
		id, err := f.track.opened(fd, path)
		if err != nil {
			return nil, fs.ToErrno(err)
		}
		h.id = id
		if flags&syscall.O_TRUNC != 0 {
			f.track.changed(id, 0, 1<<63-1)
		}
	}
	return h, 0
}

func (h *handle) Read(ctx context.Context, buf []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	return h.lf.Read(ctx, buf, off)
}

func (h *handle) Release(ctx context.Context) syscall.Errno { return h.lf.Release(ctx) }

func (h *handle) Flush(ctx context.Context) syscall.Errno { return h.lf.Flush(ctx) }

func (h *handle) Getattr(ctx context.Context, out *fuse.AttrOut) syscall.Errno {
	return h.lf.Getattr(ctx, out)
}

func (h *handle) Lseek(ctx context.Context, off uint64, whence uint32) (uint64, syscall.Errno) {
	return h.lf.Lseek(ctx, off, whence)
}

// loopbackDir is what go-fuse's loopback directory handle offers
// besides Fsyncdir.
type loopbackDir interface {
	fs.FileReaddirenter
	fs.FileSeekdirer
	fs.FileReleasedirer
}

// dirHandle is an open directory whose fsync the FS serves.
type dirHandle struct {
	loopbackDir
	n *node
}

var _ fs.FileFsyncdirer = (*dirHandle)(nil)

func (d *dirHandle) Fsyncdir(ctx context.Context, flags uint32) syscall.Errno {
	return d.n.fsyncDir(ctx)
}
