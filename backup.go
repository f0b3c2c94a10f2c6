package shale

import (
	"archive/tar"
	"io"
	"path/filepath"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/shale-db/shale/internal/filename"
	"github.com/shale-db/shale/internal/manifest"
	"github.com/shale-db/shale/internal/vfs"
)

// Backup writes the same consistent state as Checkpoint to w, as one tar
// stream (PAX format, which GNU and BSD tar read) of the files Checkpoint
// would create: the tables, the live WALs cut at one sequence number, a
// MANIFEST and CURRENT. The
// database stays open and writes go on meanwhile. To restore, unpack the
// stream into an empty directory (tar -x -C DIR) and Open that directory.
// w is not closed; if Backup fails, what it wrote is not a usable backup.
func (db *DB) Backup(w io.Writer) error {
	if err := db.checkOpen(); err != nil {
		return err
	}
	cut, err := db.takeCut()
	if err != nil {
		return err
	}
	defer cut.release()
	if err := db.writeTar(w, cut); err != nil {
		return errors.Wrap(err, "shale: backup")
	}
	return nil
}

// writeTar writes the cut's files to w as a tar stream.
func (db *DB) writeTar(w io.Writer, k *cut) error {
	tw := tar.NewWriter(w)
	now := time.Now()
	for _, files := range k.v.Levels {
		for _, f := range files {
			name := db.tableName(f.Num)
			src, err := db.fs.Open(filepath.Join(db.dir, name))
			if err != nil {
				return errors.Wrapf(err, "open %s", name)
			}
			err = tarFile(tw, name, src, -1, now)
			if cerr := src.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		}
	}
	for _, l := range k.logs {
		if err := tarFile(tw, filename.Name(filename.Log, l.num), l.f, l.size, now); err != nil {
			return err
		}
	}
	// The MANIFEST and CURRENT are written to memory, then copied.
	mem := vfs.NewMem()
	if err := mem.MkdirAll("/m", 0o755); err != nil {
		return err
	}
	err := manifest.WriteState(mem, "/m", manifest.DirState{
		Version: k.v, LogNumber: k.logNum, LastSequence: k.seq,
		ManifestNum: k.manifestNum, NextFileNumber: k.nextFileNumber, Marked: k.marked,
	})
	if err != nil {
		return err
	}
	for _, name := range []string{filename.Name(filename.Manifest, k.manifestNum), filename.Name(filename.Current, 0)} {
		f, err := mem.Open(filepath.Join("/m", name))
		if err != nil {
			return err
		}
		if err := tarFile(tw, name, f, -1, now); err != nil {
			return err
		}
	}
	return tw.Close()
}

// tarFile writes the first size bytes of f (all of it if size < 0) as the
// regular file name.
func tarFile(tw *tar.Writer, name string, f vfs.File, size int64, mtime time.Time) error {
	if size < 0 {
		st, err := f.Stat()
		if err != nil {
			return errors.Wrapf(err, "stat %s", name)
		}
		size = st.Size()
	}
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: name, Size: size, Mode: 0o644, ModTime: mtime, Format: tar.FormatPAX}
	if err := tw.WriteHeader(hdr); err != nil {
		return errors.Wrapf(err, "tar header %s", name)
	}
	n, err := io.Copy(tw, io.NewSectionReader(f, 0, size))
	if err == nil && n != size {
		err = errors.Newf("%s: read %d bytes of %d", name, n, size)
	}
	return errors.Wrapf(err, "tar %s", name)
}
