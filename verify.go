package shale

import (
	"bufio"
	"context"
	stderrors "errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path/filepath"
	"strings"

	"github.com/cockroachdb/errors"
	"github.com/shale-db/shale/internal/batchrepr"
	"github.com/shale-db/shale/internal/filename"
	"github.com/shale-db/shale/internal/ikey"
	"github.com/shale-db/shale/internal/manifest"
	"github.com/shale-db/shale/sstable"
	"github.com/shale-db/shale/wal"
)

// Damage is one piece of damage Verify found.
type Damage struct {
	// File is the damaged file's name in the database directory:
	// "000012.ldb", "000013.log", "MANIFEST-000005".
	File string
	// Offset is where in the file the damage is, or -1 where no offset
	// applies (a table's entries out of order, a size that differs).
	Offset int64
	// Reason says what is wrong.
	Reason string
}

func (d Damage) String() string {
	if d.Offset < 0 {
		return d.File + ": " + d.Reason
	}
	return fmt.Sprintf("%s: %s at offset %d", d.File, d.Reason, d.Offset)
}

// VerifyError is the error Verify returns when it found damage: every
// piece of it, in the order found. It matches ErrCorruption.
type VerifyError struct {
	Damage []Damage
}

func (e *VerifyError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "shale: verify: %d problem", len(e.Damage))
	if len(e.Damage) != 1 {
		b.WriteString("s")
	}
	for i, d := range e.Damage {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		b.WriteString(d.String())
	}
	return b.String()
}

func (e *VerifyError) Is(target error) bool { return target == ErrCorruption }

// Verify reads every file the open database depends on, from the file
// system rather than from its caches, and checks what `kvcli check`
// checks of a closed one:
//
//   - the MANIFEST: every record's checksum, and every VersionEdit decodes;
//   - every live table: its size is the MANIFEST's, every block's checksum
//     and decoding (data, index, metaindex, filter and range-deletion
//     blocks), entries in strictly increasing order, and the first and
//     last keys the MANIFEST records;
//   - every write-ahead log still needed (the one taking writes, up to
//     what was appended, and those of memtables waiting for a flush):
//     every record's checksum, and the batch in each.
//
// Writes and reads go on meanwhile; the tables are pinned as an iterator
// pins them. It returns nil if nothing is damaged, a *VerifyError
// (matching ErrCorruption) listing the damage with files and offsets, or
// another error if a file could not be read at all, or ctx's error if ctx
// ends first. Verify reads the whole database once: it costs as much I/O
// as a full scan.
func (db *DB) Verify(ctx context.Context) error {
	if db.isClosed() {
		return ErrClosed
	}
	v := db.vs.Current()
	defer v.Unref()
	vr := &verifier{db: db, ctx: ctx}
	if err := vr.manifest(); err != nil {
		return err
	}
	for level, files := range v.Levels {
		for _, f := range files {
			if err := vr.table(level, f); err != nil {
				return err
			}
		}
	}
	for _, l := range db.liveLogs() {
		if err := vr.log(l); err != nil {
			return err
		}
	}
	if len(vr.damage) > 0 {
		return &VerifyError{Damage: vr.damage}
	}
	return nil
}

// isClosed reports whether Close has been called.
func (db *DB) isClosed() bool {
	db.mu.Lock()
	defer db.mu.Unlock()
	return db.mu.closed
}

// verifyLog is a write-ahead log Verify reads, up to size bytes. A torn
// tail is damage unless tornOK: a read-only DB's newest log may end in one.
type verifyLog struct {
	num    uint64
	size   int64
	tornOK bool
}

// liveLogs lists the logs the open database still needs: those of the
// memtables waiting for a flush (finished) and the one taking writes (up
// to what has been appended); for a read-only DB, the logs it replayed,
// whole, as they are on disk.
func (db *DB) liveLogs() []verifyLog {
	if db.opts.ReadOnly {
		var logs []verifyLog
		for _, lr := range db.recovery.Logs {
			if lr.MovedTo == "" {
				// A torn tail recovery accepted (the newest log's, or one
				// a later log continues) is no damage; one it judged
				// damage is among its Drops.
				logs = append(logs, verifyLog{lr.FileNum, math.MaxInt64, lr.TornTail != nil})
			}
		}
		return logs
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	var logs []verifyLog
	for _, imm := range db.mu.imm {
		logs = append(logs, verifyLog{num: imm.log.num, size: imm.log.size.Load()})
	}
	if db.mu.log != nil {
		logs = append(logs, verifyLog{num: db.mu.log.num, size: db.mu.log.size.Load()})
	}
	return logs
}

// verifier accumulates what Verify finds.
type verifier struct {
	db     *DB
	ctx    context.Context
	damage []Damage
}

// verifyPollEvery is how many table entries Verify reads between looks
// at its context.
const verifyPollEvery = 4096

func (vr *verifier) add(file string, off int64, format string, args ...any) {
	vr.damage = append(vr.damage, Damage{File: file, Offset: off, Reason: fmt.Sprintf(format, args...)})
}

// addErr records err, met reading file, as damage if it is damage (it
// names an offset, or matches ErrCorruption), and returns it otherwise.
func (vr *verifier) addErr(file string, err error) error {
	var te *sstable.TableError
	var we *wal.CorruptionError
	switch {
	case errors.As(err, &te):
		vr.add(file, te.Offset, "%s", te.Reason)
	case errors.As(err, &we):
		vr.add(file, we.Offset, "%s (%d bytes)", we.Reason, we.Bytes)
	case stderrors.Is(markCorruption(err), ErrCorruption):
		vr.add(file, -1, "%v", err)
	default:
		return errors.Wrapf(err, "shale: verify %s", file)
	}
	return nil
}

// manifest reads the MANIFEST up to what has been written of it. A
// MANIFEST replaced meanwhile is read as it was: its file stays open.
func (vr *verifier) manifest() error {
	vs := vr.db.vs
	for attempt := 0; ; attempt++ {
		num, size := vs.ManifestWritten()
		tornOK := false
		if vr.db.opts.ReadOnly {
			// Loaded, not written: read it whole, as Load did, which
			// takes a torn last edit for one never completed.
			size, tornOK = math.MaxInt64, true
		}
		name := filename.Name(filename.Manifest, num)
		err := vr.readLog(name, size, tornOK, func(rec []byte, off int64) {
			var e manifest.VersionEdit
			if err := e.Decode(rec); err != nil {
				vr.add(name, off, "undecodable VersionEdit: %v", err)
			}
		})
		if stderrors.Is(err, fs.ErrNotExist) && attempt < 3 {
			continue // replaced between the number and the open
		}
		return err
	}
}

// log reads WAL num up to size. A log deleted meanwhile (its memtable was
// flushed) is needed no more.
func (vr *verifier) log(l verifyLog) error {
	name := filename.Name(filename.Log, l.num)
	err := vr.readLog(name, l.size, l.tornOK, func(rec []byte, off int64) {
		if _, err := batchrepr.ValidateCommitted(rec); err != nil {
			vr.add(name, off, "malformed batch: %v", err)
		}
	})
	if stderrors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// readLog reads the records of the log-format file name up to size bytes
// (written and complete: a record cut short there is damage, unless
// tornOK).
func (vr *verifier) readLog(name string, size int64, tornOK bool, fn func(rec []byte, off int64)) error {
	if err := vr.ctx.Err(); err != nil {
		return err
	}
	f, err := vr.db.fs.Open(filepath.Join(vr.db.dir, name))
	if err != nil {
		return err
	}
	defer f.Close()
	r := wal.NewReader(bufio.NewReaderSize(io.NewSectionReader(f, 0, size), wal.BlockSize), wal.Named(name),
		wal.OnDrop(func(d wal.Drop) {
			if !d.TornTail || !tornOK {
				vr.add(name, d.Offset, "%s (%d bytes dropped)", d.Reason, d.Bytes)
			}
		}))
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return vr.addErr(name, err)
		}
		fn(rec, r.LastRecordOffset())
	}
}

// table verifies live table f of level.
func (vr *verifier) table(level int, f *manifest.FileMeta) error {
	if err := vr.ctx.Err(); err != nil {
		return err
	}
	name := filename.Name(filename.Table, f.Num)
	file, err := vr.db.fs.Open(filepath.Join(vr.db.dir, name))
	if err != nil {
		if stderrors.Is(err, fs.ErrNotExist) {
			vr.add(name, -1, "missing: the MANIFEST lists it in L%d", level)
			return nil
		}
		return errors.Wrapf(err, "shale: verify %s", name)
	}
	defer file.Close()
	st, err := file.Stat()
	if err != nil {
		return errors.Wrapf(err, "shale: verify %s", name)
	}
	if st.Size() != f.Size {
		vr.add(name, -1, "file is %d bytes, the MANIFEST says %d", st.Size(), f.Size)
		return nil
	}
	t, err := sstable.Open(file, f.Size, sstable.ReaderOptions{FileName: name})
	if err != nil {
		return vr.addErr(name, err)
	}
	defer t.Close()
	l, err := t.Layout()
	if err != nil {
		return vr.addErr(name, err)
	}
	sound := true
	for _, b := range l.Blocks {
		if b.Err != nil {
			if err := vr.addErr(name, b.Err); err != nil {
				return err
			}
			sound = false
		}
	}
	for _, m := range l.MetaIndex {
		if !m.Valid {
			vr.add(name, int64(l.Footer.MetaIndex.Offset), "metaindex entry %q is not a block handle", m.Name)
			sound = false
		}
	}
	if !sound {
		return nil
	}
	return vr.entries(name, t, f)
}

// entries reads every entry of table t (f in the MANIFEST): in strictly
// increasing order, spanning the keys the MANIFEST records.
func (vr *verifier) entries(name string, t *sstable.Reader, f *manifest.FileMeta) error {
	it := t.NewIter()
	defer it.Close()
	var first, prev []byte
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		if n%verifyPollEvery == 0 {
			if err := vr.ctx.Err(); err != nil {
				return err
			}
		}
		k := it.Key()
		if !ikey.Valid(k) {
			vr.add(name, -1, "entry %d: malformed internal key %x", n, k)
			return nil
		}
		if n > 0 && ikey.Compare(prev, k) >= 0 {
			vr.add(name, -1, "entry %d is not after entry %d", n, n-1)
			return nil
		}
		if n == 0 {
			first = append(first, k...)
		}
		prev = append(prev[:0], k...)
		n++
	}
	if err := it.Err(); err != nil {
		return vr.addErr(name, err)
	}
	if n == 0 {
		if !f.RangeDels { // a table of range deletions only has no entries
			vr.add(name, -1, "table has no entries, the MANIFEST lists it with keys")
		}
		return nil
	}
	// A table's range deletions may widen its bounds past its entries.
	switch {
	case f.RangeDels && (ikey.Compare(first, f.Smallest) < 0 || ikey.Compare(prev, f.Largest) > 0):
		vr.add(name, -1, "its entries reach outside the range the MANIFEST records for it")
	case !f.RangeDels && (ikey.Compare(first, f.Smallest) != 0 || ikey.Compare(prev, f.Largest) != 0):
		vr.add(name, -1, "its keys are not the range the MANIFEST records for it")
	}
	return nil
}
