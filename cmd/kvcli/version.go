package main

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/shale-db/shale/internal/manifest"
)

// versionState is the result of applying a MANIFEST's VersionEdits in
// order: the live tables and the scalar fields. manifest dump prints it and
// check uses it to know which tables and logs the database needs.
type versionState struct {
	comparator string
	logNum     uint64
	prevLogNum uint64
	nextFile   uint64
	lastSeq    uint64
	edits      int
	tables     map[uint64]liveTable
}

// liveTable is a table the version holds.
type liveTable struct {
	level int
	meta  manifest.FileMeta
}

func newVersionState() *versionState {
	return &versionState{tables: map[uint64]liveTable{}}
}

// apply applies one edit and returns what is inconsistent about it (a
// deleted table that is not there, an added one that already is).
func (s *versionState) apply(e *manifest.VersionEdit) []string {
	s.edits++
	if e.HasComparator {
		s.comparator = e.Comparator
	}
	if e.HasLogNumber {
		s.logNum = e.LogNumber
	}
	if e.HasPrevLogNumber {
		s.prevLogNum = e.PrevLogNumber
	}
	if e.HasNextFileNumber {
		s.nextFile = e.NextFileNumber
	}
	if e.HasLastSequence {
		s.lastSeq = e.LastSequence
	}
	var problems []string
	for _, d := range e.DeletedFiles {
		if t, ok := s.tables[d.Num]; !ok || t.level != d.Level {
			problems = append(problems, fmt.Sprintf("deletes table %06d from L%d, which does not hold it", d.Num, d.Level))
		}
		delete(s.tables, d.Num)
	}
	for _, f := range e.NewFiles {
		if _, ok := s.tables[f.Meta.Num]; ok {
			problems = append(problems, fmt.Sprintf("adds table %06d, which the version already holds", f.Meta.Num))
		}
		s.tables[f.Meta.Num] = liveTable{level: f.Level, meta: *f.Meta}
	}
	return problems
}

// sorted returns the live tables by level, then file number.
func (s *versionState) sorted() []liveTable {
	ts := make([]liveTable, 0, len(s.tables))
	for _, t := range s.tables {
		ts = append(ts, t)
	}
	slices.SortFunc(ts, func(a, b liveTable) int {
		return cmp.Or(cmp.Compare(a.level, b.level), cmp.Compare(a.meta.Num, b.meta.Num))
	})
	return ts
}
