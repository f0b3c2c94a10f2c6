package manifest

import (
	"cmp"
	"slices"

	"github.com/shale-db/shale/internal/ikey"
)

// builder applies a run of VersionEdits to a base Version without
// rebuilding the levels after each one (replaying a long MANIFEST stays
// linear). Within one edit deletions apply before additions, as in LevelDB,
// so an edit may move a file between levels; deleting a file that is not
// there is ignored, as in LevelDB and goleveldb.
type builder struct {
	base    *Version
	added   [NumLevels]map[uint64]*FileMeta // per level: files added and not since deleted
	deleted [NumLevels]map[uint64]bool      // per level: base files deleted and not re-added
}

func newBuilder(base *Version) *builder { return &builder{base: base} }

// apply records e's deletions and additions. e must be valid (Validate).
func (b *builder) apply(e *VersionEdit) {
	for _, d := range e.DeletedFiles {
		delete(b.added[d.Level], d.Num)
		if b.deleted[d.Level] == nil {
			b.deleted[d.Level] = make(map[uint64]bool)
		}
		b.deleted[d.Level][d.Num] = true
	}
	for _, f := range e.NewFiles {
		delete(b.deleted[f.Level], f.Meta.Num)
		if b.added[f.Level] == nil {
			b.added[f.Level] = make(map[uint64]*FileMeta)
		}
		b.added[f.Level][f.Meta.Num] = f.Meta
	}
}

// finish returns the new Version (no references, no owner) after checking
// its invariants. Levels no edit touched share the base's slices.
func (b *builder) finish() (*Version, error) {
	v := new(Version)
	for level := range v.Levels {
		base := b.base.Levels[level]
		if len(b.added[level]) == 0 && len(b.deleted[level]) == 0 {
			v.Levels[level] = base
			continue
		}
		files := make([]*FileMeta, 0, len(base)+len(b.added[level]))
		for _, f := range base {
			// An added file of the same number replaces the base one.
			if !b.deleted[level][f.Num] && b.added[level][f.Num] == nil {
				files = append(files, f)
			}
		}
		for _, f := range b.added[level] {
			files = append(files, f)
		}
		sortLevel(level, files)
		if len(files) > 0 {
			v.Levels[level] = files
		}
	}
	if err := v.Check(); err != nil {
		return nil, err
	}
	return v, nil
}

// sortLevel puts files in the order the level's invariant requires: level 0
// by file number descending, other levels by smallest key (then number, so
// the order is total and Check can report an overlap deterministically).
func sortLevel(level int, files []*FileMeta) {
	if level == 0 {
		slices.SortFunc(files, func(a, b *FileMeta) int { return cmp.Compare(b.Num, a.Num) })
		return
	}
	slices.SortFunc(files, func(a, b *FileMeta) int {
		if c := ikey.Compare(a.Smallest, b.Smallest); c != 0 {
			return c
		}
		return cmp.Compare(a.Num, b.Num)
	})
}
