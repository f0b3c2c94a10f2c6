package manifest

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"

	"github.com/cockroachdb/errors"
	"github.com/shale-db/shale/internal/filename"
	"github.com/shale-db/shale/internal/vfs"
)

// maxCurrentSize bounds what readCurrent reads: a valid CURRENT is
// "MANIFEST-" plus at most 20 digits and a newline.
const maxCurrentSize = 64

// readCurrent returns the number of the MANIFEST that dir's CURRENT names.
// CURRENT must be exactly "MANIFEST-<digits>\n", as LevelDB requires; a
// missing newline means an incomplete write and is damage, not guessed at.
// A missing CURRENT is an error matching os.ErrNotExist.
func readCurrent(fsys vfs.FS, dir string) (uint64, error) {
	f, err := fsys.Open(filename.Make(dir, filename.Current, 0))
	if err != nil {
		return 0, errors.Wrap(err, "manifest: open CURRENT")
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxCurrentSize+1))
	if err != nil {
		return 0, errors.Wrap(err, "manifest: read CURRENT")
	}
	switch {
	case len(b) == 0:
		return 0, corruptf("manifest: CURRENT is empty")
	case len(b) > maxCurrentSize:
		return 0, corruptf("manifest: CURRENT is longer than %d bytes", maxCurrentSize)
	case b[len(b)-1] != '\n':
		return 0, corruptf("manifest: CURRENT %q does not end with a newline at offset %d (incomplete write?)", b, len(b))
	}
	name := string(b[:len(b)-1])
	t, num, ok := filename.Parse(name)
	if i := bytes.IndexByte(b[:len(b)-1], '\n'); i >= 0 || !ok || t != filename.Manifest {
		return 0, corruptf("manifest: CURRENT %q does not name a MANIFEST", b)
	}
	return num, nil
}

// setCurrent points dir's CURRENT at MANIFEST-num atomically and durably:
// write a temporary file, sync it, rename it over CURRENT, sync the
// directory. On failure CURRENT names the old MANIFEST or the new one,
// never anything else. renamed reports whether the rename was attempted:
// from then on CURRENT may name MANIFEST-num (now, or after a crash), so
// the caller must keep that file whatever the error.
func setCurrent(fsys vfs.FS, dir string, num uint64) (renamed bool, err error) {
	tmp := filename.Make(dir, filename.Temp, num)
	defer func() {
		if err != nil {
			_ = fsys.Remove(tmp) // best effort: an orphan temp file is harmless
		}
	}()
	f, err := fsys.Create(tmp)
	if err != nil {
		return false, errors.Wrap(err, "manifest: create CURRENT temp file")
	}
	content := fmt.Sprintf("%s\n", filename.Name(filename.Manifest, num))
	if _, err = io.WriteString(f, content); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return false, errors.Wrapf(err, "manifest: write %s", filepath.Base(tmp))
	}
	if err = fsys.Rename(tmp, filename.Make(dir, filename.Current, 0)); err != nil {
		return true, errors.Wrap(err, "manifest: rename CURRENT")
	}
	return true, syncDir(fsys, dir)
}

// syncDir makes dir's entries durable.
func syncDir(fsys vfs.FS, dir string) error {
	d, err := fsys.OpenDir(dir)
	if err != nil {
		return errors.Wrap(err, "manifest: open directory")
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return errors.Wrap(err, "manifest: sync directory")
}
