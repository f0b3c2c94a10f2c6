package manifest

import (
	"io"
	"path/filepath"

	"github.com/cockroachdb/errors"
	"github.com/shale-db/shale/internal/ikey"
	"github.com/shale-db/shale/internal/vfs"
	"github.com/shale-db/shale/wal"
)

// ReadEdits reads the MANIFEST at path strictly and calls fn with each
// VersionEdit in order; fn must not keep e past the call. A torn tail (a
// last record never completely written) ends the file quietly, as an edit
// that was never fully written was never acknowledged. Any other damage,
// in the log framing or in an edit, is an error matching ErrCorrupt that
// names the file, the record and the offset. An error from fn is returned
// as is and stops the reading. kvcli's manifest dump and Load use it.
func ReadEdits(fsys vfs.FS, path string, fn func(e *VersionEdit) error) error {
	name := filepath.Base(path)
	f, err := fsys.Open(path)
	if err != nil {
		return errors.Wrapf(err, "manifest: open %s", name)
	}
	defer f.Close()
	r := wal.NewReader(f, wal.Strict(), wal.Named(name))
	var e VersionEdit
	for i := 0; ; i++ {
		rec, err := r.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			if errors.Is(err, wal.ErrCorrupt) {
				// The wal error names the file and offset.
				return corruptWrap(err, "manifest: replay record %d", i)
			}
			return errors.Wrapf(err, "manifest: read %s", name)
		}
		if err := e.Decode(rec); err != nil {
			return corruptWrap(err, "manifest: %s: record %d at offset %d", name, i, r.LastRecordOffset())
		}
		if err := fn(&e); err != nil {
			return err
		}
	}
}

// replayState accumulates the edits of a MANIFEST.
type replayState struct {
	name            string // base name of the MANIFEST, for errors
	b               *builder
	compactPointers [NumLevels][]byte
	logNumber       uint64
	prevLogNumber   uint64
	nextFileNum     uint64
	lastSeq         uint64
	hasLogNumber    bool
	hasNextFileNum  bool
	hasLastSeq      bool
	// marked: the last comparator named was MarkedComparator.
	marked bool
}

func (s *replayState) apply(e *VersionEdit) error {
	if e.HasComparator {
		switch e.Comparator {
		case BytewiseComparator:
			s.marked = false
		case MarkedComparator:
			s.marked = true
		default:
			return errors.Newf("manifest: %s: comparator %q does not match %q", s.name, e.Comparator, BytewiseComparator)
		}
	}
	if e.HasLogNumber {
		s.logNumber, s.hasLogNumber = e.LogNumber, true
	}
	if e.HasPrevLogNumber {
		s.prevLogNumber = e.PrevLogNumber
	}
	if e.HasNextFileNumber {
		s.nextFileNum, s.hasNextFileNum = e.NextFileNumber, true
	}
	if e.HasLastSequence {
		s.lastSeq, s.hasLastSeq = e.LastSequence, true
	}
	for _, p := range e.CompactPointers {
		s.compactPointers[p.Level] = p.Key // Decode gave us our own copy
	}
	s.b.apply(e)
	return nil
}

// replay reads the MANIFEST at path and returns its final state and Version
// (not yet owned by a VersionSet).
func replay(fsys vfs.FS, path string) (*replayState, *Version, error) {
	name := filepath.Base(path)
	s := &replayState{name: name, b: newBuilder(new(Version))}
	if err := ReadEdits(fsys, path, s.apply); err != nil {
		return nil, nil, err
	}
	switch {
	case !s.hasNextFileNum:
		return nil, nil, corruptf("manifest: %s: no next file number entry", name)
	case !s.hasLogNumber:
		return nil, nil, corruptf("manifest: %s: no log number entry", name)
	case !s.hasLastSeq:
		return nil, nil, corruptf("manifest: %s: no last sequence entry", name)
	case s.lastSeq > ikey.MaxSeq:
		return nil, nil, corruptf("manifest: %s: last sequence %d above the maximum", name, s.lastSeq)
	}
	v, err := s.b.finish()
	if err != nil {
		return nil, nil, corruptWrap(err, "manifest: %s: replayed version is inconsistent", name)
	}
	return s, v, nil
}
