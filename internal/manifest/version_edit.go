package manifest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/cockroachdb/errors"
	"github.com/shale-db/shale/internal/filename"
	"github.com/shale-db/shale/internal/ikey"
)

// NumLevels is the number of levels of the LSM tree. Part of the format
// (LevelDB's and goleveldb's default); do not change.
const NumLevels = 7

// BytewiseComparator is the comparator name recorded in every MANIFEST.
// goleveldb refuses a MANIFEST without it or with another name. Part of the
// format; do not change.
const BytewiseComparator = "leveldb.BytewiseComparator"

// MarkedComparator is the comparator name of a MANIFEST whose tables or
// logs may hold records LevelDB cannot read (range deletions): LevelDB
// checks every edit's comparator against its own at Open, goleveldb the
// last one it reads, and both then refuse the directory rather than
// misread it. The keys are still in bytewise order. Part of the format;
// do not change.
const MarkedComparator = "shale.BytewiseComparator+RangeDeletions"

// Field tags of an encoded VersionEdit. Part of the format (LevelDB's); do
// not change. Tag 8 (large value refs) is retired and decodes as damage.
//
// tagRangeDelFile is shale's: it follows a new file's record (in a marked
// MANIFEST only) to say that the table holds range deletions, with the
// level and file number again. LevelDB and goleveldb fail on it, as they
// refuse the mark.
const (
	tagComparator     = 1
	tagLogNumber      = 2
	tagNextFileNumber = 3
	tagLastSequence   = 4
	tagCompactPointer = 5
	tagDeletedFile    = 6
	tagNewFile        = 7
	tagPrevLogNumber  = 9
	tagRangeDelFile   = 101
)

// CompactPointer records where the next compaction of Level starts: after
// Key, an internal key.
type CompactPointer struct {
	Level int
	Key   []byte
}

// DeletedFile removes table Num from Level.
type DeletedFile struct {
	Level int
	Num   uint64
}

// NewFile adds table Meta to Level.
type NewFile struct {
	Level int
	Meta  *FileMeta
}

// VersionEdit is one change to the VersionSet: LevelDB's VersionEdit. A
// scalar field is present when its Has flag is set (the Set methods set
// both). The zero value is an empty edit.
type VersionEdit struct {
	Comparator     string
	LogNumber      uint64 // WALs numbered below it are no longer needed
	PrevLogNumber  uint64 // 0, or the log being retired (old LevelDB)
	NextFileNumber uint64
	LastSequence   uint64

	HasComparator     bool
	HasLogNumber      bool
	HasPrevLogNumber  bool
	HasNextFileNumber bool
	HasLastSequence   bool

	CompactPointers []CompactPointer
	DeletedFiles    []DeletedFile
	NewFiles        []NewFile
}

// SetComparator records the comparator name.
func (e *VersionEdit) SetComparator(name string) { e.Comparator, e.HasComparator = name, true }

// SetLogNumber records the number of the oldest WAL still needed.
func (e *VersionEdit) SetLogNumber(n uint64) { e.LogNumber, e.HasLogNumber = n, true }

// SetPrevLogNumber records the previous log number (LevelDB writes 0).
func (e *VersionEdit) SetPrevLogNumber(n uint64) { e.PrevLogNumber, e.HasPrevLogNumber = n, true }

// SetNextFileNumber records the next unused file number.
func (e *VersionEdit) SetNextFileNumber(n uint64) { e.NextFileNumber, e.HasNextFileNumber = n, true }

// SetLastSequence records the last sequence number used.
func (e *VersionEdit) SetLastSequence(s uint64) { e.LastSequence, e.HasLastSequence = s, true }

// AddFile appends the addition of table m to level. The edit keeps m.
func (e *VersionEdit) AddFile(level int, m *FileMeta) {
	e.NewFiles = append(e.NewFiles, NewFile{Level: level, Meta: m})
}

// DeleteFile appends the removal of table num from level.
func (e *VersionEdit) DeleteFile(level int, num uint64) {
	e.DeletedFiles = append(e.DeletedFiles, DeletedFile{Level: level, Num: num})
}

// SetCompactPointer appends a compact pointer for level.
func (e *VersionEdit) SetCompactPointer(level int, key []byte) {
	e.CompactPointers = append(e.CompactPointers, CompactPointer{Level: level, Key: key})
}

// Encode appends the encoding of e to dst and returns the extended slice.
// Fields come in LevelDB's order: comparator, log number, prev log number,
// next file number, last sequence, compact pointers, deleted files, new
// files, each list in its slice order. Levels must be below NumLevels and
// keys valid internal keys (Validate checks); otherwise Decode rejects the
// result.
func (e *VersionEdit) Encode(dst []byte) []byte {
	if e.HasComparator {
		dst = binary.AppendUvarint(dst, tagComparator)
		dst = appendBytes(dst, []byte(e.Comparator))
	}
	dst = appendScalar(dst, e.HasLogNumber, tagLogNumber, e.LogNumber)
	dst = appendScalar(dst, e.HasPrevLogNumber, tagPrevLogNumber, e.PrevLogNumber)
	dst = appendScalar(dst, e.HasNextFileNumber, tagNextFileNumber, e.NextFileNumber)
	dst = appendScalar(dst, e.HasLastSequence, tagLastSequence, e.LastSequence)
	for _, p := range e.CompactPointers {
		dst = binary.AppendUvarint(dst, tagCompactPointer)
		dst = binary.AppendUvarint(dst, uint64(p.Level))
		dst = appendBytes(dst, p.Key)
	}
	for _, d := range e.DeletedFiles {
		dst = binary.AppendUvarint(dst, tagDeletedFile)
		dst = binary.AppendUvarint(dst, uint64(d.Level))
		dst = binary.AppendUvarint(dst, d.Num)
	}
	for _, f := range e.NewFiles {
		dst = binary.AppendUvarint(dst, tagNewFile)
		dst = binary.AppendUvarint(dst, uint64(f.Level))
		dst = binary.AppendUvarint(dst, f.Meta.Num)
		dst = binary.AppendUvarint(dst, uint64(f.Meta.Size))
		dst = appendBytes(dst, f.Meta.Smallest)
		dst = appendBytes(dst, f.Meta.Largest)
		if f.Meta.RangeDels {
			dst = binary.AppendUvarint(dst, tagRangeDelFile)
			dst = binary.AppendUvarint(dst, uint64(f.Level))
			dst = binary.AppendUvarint(dst, f.Meta.Num)
		}
	}
	return dst
}

func appendScalar(dst []byte, has bool, tag, v uint64) []byte {
	if !has {
		return dst
	}
	dst = binary.AppendUvarint(dst, tag)
	return binary.AppendUvarint(dst, v)
}

func appendBytes(dst, b []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(b)))
	return append(dst, b...)
}

// Validate reports whether e can be encoded and decoded back: levels below
// NumLevels, keys at least ikey.TrailerLen bytes, sizes not negative, every
// NewFile with a Meta. Its error does not match ErrCorrupt: an invalid edit
// made in memory is a bug, not damage.
func (e *VersionEdit) Validate() error {
	for _, p := range e.CompactPointers {
		if err := checkLevelKeys(p.Level, p.Key); err != nil {
			return err
		}
	}
	for _, d := range e.DeletedFiles {
		if err := checkLevelKeys(d.Level); err != nil {
			return err
		}
	}
	for _, f := range e.NewFiles {
		if f.Meta == nil {
			return errors.Newf("manifest: new file at level %d without metadata", f.Level)
		}
		if err := checkLevelKeys(f.Level, f.Meta.Smallest, f.Meta.Largest); err != nil {
			return err
		}
		if f.Meta.Size < 0 {
			return errors.Newf("manifest: table %06d has negative size %d", f.Meta.Num, f.Meta.Size)
		}
	}
	return nil
}

func checkLevelKeys(level int, keys ...[]byte) error {
	if level < 0 || level >= NumLevels {
		return errors.Newf("manifest: level %d out of range [0, %d)", level, NumLevels)
	}
	for _, k := range keys {
		if !ikey.Valid(k) {
			return errors.Newf("manifest: internal key %x shorter than %d bytes", k, ikey.TrailerLen)
		}
	}
	return nil
}

// Decode replaces e with the edit encoded in b. It is strict: an unknown
// tag, a truncated or overflowing varint, a level >= NumLevels, a length
// past the end of b, a key shorter than an internal key's trailer or a size
// above math.MaxInt64 is an error matching ErrCorrupt that names the offset
// in b where the bad field starts. A field that appears twice keeps its last
// value, as in LevelDB. e holds no reference to b afterwards.
func (e *VersionEdit) Decode(b []byte) error {
	*e = VersionEdit{}
	d := decoder{b: b}
	for d.off < len(d.b) && d.err == nil {
		d.tagOff = d.off
		if tag := d.uvarint("tag"); d.err == nil {
			d.field(e, tag)
		}
	}
	if d.err != nil {
		*e = VersionEdit{}
	}
	return d.err
}

// field decodes the value of one field with the given tag into e.
func (d *decoder) field(e *VersionEdit, tag uint64) {
	switch tag {
	case tagComparator:
		e.SetComparator(string(d.bytes("comparator")))
	case tagLogNumber:
		e.SetLogNumber(d.fileNum("log number", filename.MaxNum))
	case tagPrevLogNumber:
		e.SetPrevLogNumber(d.fileNum("prev log number", filename.MaxNum))
	case tagNextFileNumber:
		e.SetNextFileNumber(d.fileNum("next file number", filename.MaxNum+1))
	case tagLastSequence:
		e.SetLastSequence(d.uvarint("last sequence"))
	case tagCompactPointer:
		level := d.level()
		key := d.ikey("compact pointer")
		e.SetCompactPointer(level, key)
	case tagDeletedFile:
		level := d.level()
		e.DeleteFile(level, d.fileNum("deleted file number", filename.MaxNum))
	case tagNewFile:
		level := d.level()
		m := &FileMeta{Num: d.fileNum("new file number", filename.MaxNum)}
		m.Size = d.size()
		m.Smallest = d.ikey("smallest key")
		m.Largest = d.ikey("largest key")
		e.AddFile(level, m)
	case tagRangeDelFile:
		level := d.level()
		num := d.fileNum("range-deletion file number", filename.MaxNum)
		if d.err != nil {
			return
		}
		n := len(e.NewFiles)
		if n == 0 || e.NewFiles[n-1].Level != level || e.NewFiles[n-1].Meta.Num != num {
			d.err = corruptf("manifest: version edit: range-deletion mark for table %06d at offset %d follows no record of it", num, d.tagOff)
			return
		}
		e.NewFiles[n-1].Meta.RangeDels = true
	default:
		d.err = corruptf("manifest: version edit: unknown tag %d at offset %d", tag, d.tagOff)
	}
}

// decoder reads fields from b[off:]. After the first failure err is set and
// every read returns a zero value.
type decoder struct {
	b      []byte
	off    int
	tagOff int // offset of the tag of the field being decoded
	err    error
}

func (d *decoder) fail(what string, at int, why string) {
	if d.err == nil {
		d.err = corruptf("manifest: version edit: %s at offset %d: %s", what, at, why)
	}
}

func (d *decoder) uvarint(what string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b[d.off:])
	switch {
	case n == 0:
		d.fail(what, d.off, "truncated varint")
		return 0
	case n < 0:
		d.fail(what, d.off, "varint overflows 64 bits")
		return 0
	}
	d.off += n
	return v
}

// fileNum reads a file number, at most limit (filename.MaxNum, or one
// above it for the next file number): past it, files would have numbers
// that filename.Parse does not read back, and past 2^64 the counter would
// wrap to zero and reuse the numbers of live files.
func (d *decoder) fileNum(what string, limit uint64) uint64 {
	at := d.off
	v := d.uvarint(what)
	if d.err == nil && v > limit {
		d.fail(what, at, fmt.Sprintf("%d is above the largest file number, %d", v, limit))
		return 0
	}
	return v
}

func (d *decoder) level() int {
	at := d.off
	v := d.uvarint("level")
	if d.err == nil && v >= NumLevels {
		d.fail("level", at, "level out of range")
		return 0
	}
	return int(v)
}

func (d *decoder) size() int64 {
	at := d.off
	v := d.uvarint("file size")
	if d.err == nil && v > math.MaxInt64 {
		d.fail("file size", at, "size out of range")
		return 0
	}
	return int64(v)
}

// bytes reads a length-prefixed string; the result aliases d.b.
func (d *decoder) bytes(what string) []byte {
	at := d.off
	n := d.uvarint(what + " length")
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)-d.off) {
		d.fail(what, at, "length past the end of the edit")
		return nil
	}
	b := d.b[d.off : d.off+int(n)]
	d.off += int(n)
	return b
}

// ikey reads a length-prefixed internal key into a new slice.
func (d *decoder) ikey(what string) []byte {
	at := d.off
	k := d.bytes(what)
	if d.err != nil {
		return nil
	}
	if !ikey.Valid(k) {
		d.fail(what, at, "shorter than an internal key")
		return nil
	}
	return bytes.Clone(k)
}
