package manifest

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/shale-db/shale/internal/ikey"
)

// String formats e for people (kvcli manifest dump): one field per line in
// encoding order, file numbers as %06d, keys as "ukey#seq,KIND" with user
// keys that are not printable quoted Go-style. For example:
//
//	comparator: leveldb.BytewiseComparator
//	log-number: 5
//	next-file-number: 7
//	last-sequence: 42
//	deleted-file: L0 000004
//	new-file: L1 000006 812B [a#3,PUT .. k#9,DEL]
func (e *VersionEdit) String() string {
	var sb strings.Builder
	if e.HasComparator {
		fmt.Fprintf(&sb, "comparator: %s\n", e.Comparator)
	}
	scalars := []struct {
		has  bool
		name string
		v    uint64
	}{
		{e.HasLogNumber, "log-number", e.LogNumber},
		{e.HasPrevLogNumber, "prev-log-number", e.PrevLogNumber},
		{e.HasNextFileNumber, "next-file-number", e.NextFileNumber},
		{e.HasLastSequence, "last-sequence", e.LastSequence},
	}
	for _, s := range scalars {
		if s.has {
			fmt.Fprintf(&sb, "%s: %d\n", s.name, s.v)
		}
	}
	for _, p := range e.CompactPointers {
		fmt.Fprintf(&sb, "compact-pointer: L%d %s\n", p.Level, keyString(p.Key))
	}
	for _, d := range e.DeletedFiles {
		fmt.Fprintf(&sb, "deleted-file: L%d %06d\n", d.Level, d.Num)
	}
	for _, f := range e.NewFiles {
		if f.Meta == nil {
			fmt.Fprintf(&sb, "new-file: L%d <nil>\n", f.Level)
			continue
		}
		fmt.Fprintf(&sb, "new-file: L%d %s\n", f.Level, f.Meta)
	}
	return sb.String()
}

// keyString formats an internal key as ikey.String does when its user key
// is printable text, and with the user key quoted otherwise, so that binary
// keys cannot garble a terminal.
func keyString(k []byte) string {
	if !ikey.Valid(k) {
		return ikey.String(k)
	}
	u := ikey.UserKey(k)
	if printable(u) {
		return ikey.String(k)
	}
	return fmt.Sprintf("%s#%d,%s", strconv.Quote(string(u)), ikey.Seq(k), ikey.KindOf(k))
}

func printable(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for _, r := range string(b) {
		if !strconv.IsPrint(r) || r == '"' || r == '#' {
			return false
		}
	}
	return true
}
