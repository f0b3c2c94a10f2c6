package shale

import (
	stderrors "errors"
	"io"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/cockroachdb/errors"
	"github.com/shale-db/shale/internal/filename"
	"github.com/shale-db/shale/internal/manifest"
	"github.com/shale-db/shale/internal/vfs"
)

// Checkpoint writes a consistent copy of the database into destDir while
// the database stays open and writes go on. The copy holds every write
// acknowledged before Checkpoint began, and no batch in part: it is the
// state at one sequence number. Tables are hard-linked when destDir is on
// the same file system (the source never modifies a table, so the copy is
// unaffected by what the source does later), else copied; the live WALs
// are copied up to the last record written at that sequence number; a new
// MANIFEST names exactly the copied tables. Every file and destDir itself
// are synced before Checkpoint returns.
//
// destDir is created if missing; an existing non-empty destDir is refused.
// The copy opens in shale, goleveldb and LevelDB like any database. If
// Checkpoint fails, what it left in destDir is not a usable copy: remove
// it. The source is unaffected either way; writes wait for Checkpoint only
// while it opens the live WALs and reads the current version (at most one
// MANIFEST write), not while it copies.
func (db *DB) Checkpoint(destDir string) error {
	if err := db.checkOpen(); err != nil {
		return err
	}
	if err := db.prepareDest(destDir); err != nil {
		return err
	}
	cut, err := db.takeCut()
	if err != nil {
		return err
	}
	defer cut.release()
	c := &copier{fs: db.fs, src: db.dir, dst: destDir}
	if err := db.writeCut(c, cut); err != nil {
		return errors.Wrapf(err, "shale: checkpoint to %s", destDir)
	}
	return nil
}

// prepareDest creates destDir, refusing one that exists and has entries,
// and the database's own directory and any inside it.
func (db *DB) prepareDest(destDir string) error {
	switch rel, err := filepath.Rel(resolvePath(db.dir), resolvePath(destDir)); {
	case err != nil:
	case rel == ".":
		return errors.Newf("shale: checkpoint: %s is the database itself", destDir)
	case rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)):
		// The database would hold a directory no database writes, and
		// refuse every later writable Open.
		return errors.Newf("shale: checkpoint: %s is inside the database %s", destDir, db.dir)
	}
	names, err := db.fs.List(destDir)
	switch {
	case err == nil && len(names) > 0:
		return errors.Newf("shale: checkpoint: %s exists and is not empty", destDir)
	case err != nil && !stderrors.Is(err, fs.ErrNotExist):
		return errors.Wrapf(err, "shale: checkpoint: list %s", destDir)
	}
	// The directories MkdirAll creates are durable once each one's
	// parent is synced, from the deepest that existed down.
	dirs := []string{filepath.Clean(destDir)}
	for d := dirs[0]; ; {
		p := filepath.Dir(d)
		if _, err := db.fs.Stat(d); err == nil || p == d {
			break
		}
		dirs, d = append(dirs, p), p
	}
	if err := db.fs.MkdirAll(destDir, 0o755); err != nil {
		return errors.Wrap(err, "shale: checkpoint: create directory")
	}
	for _, d := range dirs[1:] {
		if err := db.syncDirPath(d); err != nil {
			return err
		}
	}
	return nil
}

// cut is the state a checkpoint copies: a version (referenced, so that its
// tables stay on disk), the WALs written since it (open, so that a WAL
// retired meanwhile can still be read) with the bytes to copy of each, and
// the MANIFEST fields that go with them.
type cut struct {
	v              *manifest.Version
	logs           []cutLog
	missing        []uint64 // WALs that could not be opened
	logNum, seq    uint64
	manifestNum    uint64
	nextFileNumber uint64
	// marked: the source's MANIFEST carries the mark (its logs may hold
	// range deletions), and so must the copy's.
	marked bool
}

type cutLog struct {
	num  uint64
	f    vfs.File
	size int64 // -1: the whole file
}

func (c *cut) release() {
	for _, l := range c.logs {
		l.f.Close()
	}
	if c.v != nil {
		c.v.Unref()
	}
}

// takeCut takes the cut in the commit leader's turn, with no write in
// flight: every WAL byte written so far ends a whole record, and every
// acknowledged write is in them. The WALs are opened before the version
// is read: a WAL at or after the version's log number was not retired
// before it was opened, so it can be read.
func (db *DB) takeCut() (*cut, error) {
	c := new(cut)
	take := func() error {
		db.mu.Lock()
		if db.mu.closed {
			db.mu.Unlock()
			return ErrClosed
		}
		if err := db.mu.bgErr; err != nil {
			db.mu.Unlock()
			return err
		}
		var logs []*logFile
		for _, imm := range db.mu.imm {
			logs = append(logs, imm.log)
		}
		if db.mu.log != nil {
			logs = append(logs, db.mu.log)
		}
		db.mu.Unlock()
		for _, l := range logs {
			f, err := db.fs.Open(filename.Make(db.dir, filename.Log, l.num))
			if err != nil {
				// Retired since, and then the version read below covers
				// it; checkLogs fails the cut if not.
				c.missing = append(c.missing, l.num)
				continue
			}
			c.logs = append(c.logs, cutLog{num: l.num, f: f, size: l.size.Load()})
		}
		c.v, c.logNum, c.seq = db.vs.State()
		c.marked = db.vs.Marked()
		return nil
	}
	var err error
	if db.opts.ReadOnly {
		err = db.takeReadOnlyCut(c)
	} else {
		err = db.commit.exclusive(db, take)
	}
	if err == nil {
		err = c.checkLogs()
	}
	if err != nil {
		c.release()
		return nil, err
	}
	c.manifestNum = db.vs.NewFileNum()
	c.nextFileNumber = c.manifestNum + 1
	return c, nil
}

// takeReadOnlyCut is takeCut for a read-only DB: nothing changes the
// directory, so the cut is the MANIFEST's state and every WAL it needs,
// whole.
func (db *DB) takeReadOnlyCut(c *cut) error {
	c.v, c.logNum, c.seq = db.vs.State()
	c.marked = db.vs.Marked()
	nums, err := db.logsToReplay()
	if err != nil {
		return err
	}
	for _, num := range nums {
		f, err := db.fs.Open(filename.Make(db.dir, filename.Log, num))
		if err != nil {
			return errors.Wrap(err, "shale: checkpoint: open log")
		}
		c.logs = append(c.logs, cutLog{num: num, f: f, size: -1})
		// An old LevelDB's previous log, below the log number, holds
		// writes no table has (Open replayed it): the copy starts its
		// logs there, so that checkLogs keeps it and the copy's Open
		// replays it. No other log lies between it and the log number.
		if num < c.logNum {
			c.logNum = num
		}
	}
	return nil
}

// checkLogs drops the WALs below the log number (flushed before the
// version was read) and makes sure none the version needs is missing.
func (c *cut) checkLogs() error {
	kept := c.logs[:0]
	for _, l := range c.logs {
		if l.num < c.logNum {
			l.f.Close()
			continue
		}
		kept = append(kept, l)
	}
	c.logs = kept
	for _, num := range c.missing {
		if num >= c.logNum {
			return errors.Newf("shale: checkpoint: log %06d is needed but could not be opened", num)
		}
	}
	return nil
}

// writeCut writes the cut into c.dst: tables, WALs, MANIFEST and CURRENT,
// each synced, then the directory.
func (db *DB) writeCut(c *copier, k *cut) error {
	for _, files := range k.v.Levels {
		for _, f := range files {
			if err := c.linkOrCopy(db.tableName(f.Num)); err != nil {
				return err
			}
		}
	}
	for _, l := range k.logs {
		name := filename.Name(filename.Log, l.num)
		if err := c.copyFile(name, l.f, l.size); err != nil {
			return err
		}
	}
	if err := c.syncDir(); err != nil {
		return err
	}
	return manifest.WriteState(db.fs, c.dst, manifest.DirState{
		Version: k.v, LogNumber: k.logNum, LastSequence: k.seq,
		ManifestNum: k.manifestNum, NextFileNumber: k.nextFileNumber, Marked: k.marked,
	})
}

// tableName returns the name of table num in the database directory:
// NNNNNN.ldb, or NNNNNN.sst if only that exists (LevelDB's old name).
func (db *DB) tableName(num uint64) string {
	name := filename.Name(filename.Table, num)
	if _, err := db.fs.Stat(filepath.Join(db.dir, name)); err != nil {
		sst := name[:len(name)-len(filepath.Ext(name))] + ".sst"
		if _, err := db.fs.Stat(filepath.Join(db.dir, sst)); err == nil {
			return sst
		}
	}
	return name
}

// copier copies files from src to dst on fs.
type copier struct {
	fs       vfs.FS
	src, dst string
	noLink   bool // a link failed once: copy from then on
}

// linkOrCopy hard-links name from src into dst, or copies it if linking
// fails (another file system, or one without hard links).
func (c *copier) linkOrCopy(name string) error {
	if !c.noLink {
		if err := c.fs.Link(filepath.Join(c.src, name), filepath.Join(c.dst, name)); err == nil {
			return nil
		}
		c.noLink = true
	}
	f, err := c.fs.Open(filepath.Join(c.src, name))
	if err != nil {
		return errors.Wrapf(err, "open %s", name)
	}
	defer f.Close()
	return c.copyFile(name, f, -1)
}

// copyFile writes the first size bytes of src (all of it if size < 0)
// to dst/name and syncs it.
func (c *copier) copyFile(name string, src vfs.File, size int64) error {
	out, err := c.fs.Create(filepath.Join(c.dst, name))
	if err != nil {
		return errors.Wrapf(err, "create %s", name)
	}
	var r io.Reader = io.NewSectionReader(src, 0, 1<<62)
	if size >= 0 {
		r = io.NewSectionReader(src, 0, size)
	}
	n, err := io.Copy(out, r)
	if err == nil && size >= 0 && n != size {
		err = errors.Newf("%s: copied %d bytes of %d", name, n, size)
	}
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return errors.Wrapf(err, "copy %s", name)
}

func (c *copier) syncDir() error {
	d, err := c.fs.OpenDir(c.dst)
	if err != nil {
		return errors.Wrap(err, "open directory")
	}
	err = d.Sync()
	return errors.CombineErrors(errors.Wrap(err, "sync directory"), d.Close())
}

// resolvePath returns p made absolute, with the symbolic links in the
// longest part of it that exists resolved: two names of one directory
// then compare equal.
func resolvePath(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return filepath.Clean(p)
	}
	rest := ""
	for d := abs; ; {
		if r, err := filepath.EvalSymlinks(d); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(d)
		if parent == d {
			return abs
		}
		rest = filepath.Join(filepath.Base(d), rest)
		d = parent
	}
}
