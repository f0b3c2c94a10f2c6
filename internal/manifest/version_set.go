package manifest

import (
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/errors"
	"github.com/shale-db/shale/internal/filename"
	"github.com/shale-db/shale/internal/vfs"
	"github.com/shale-db/shale/wal"
)

// VersionSet is the database's file state: the current Version, every
// Version still referenced, the file number counter, the last sequence
// number, the log number, and the open MANIFEST that records changes.
//
// Concurrency: LogAndApply calls are serialized by logMu (the engine makes
// them from one background goroutine) and do their I/O without holding mu,
// so readers never wait for an fsync. mu guards the fields in mu and is
// held only briefly. The file number counter and the last sequence number
// are atomics.
type VersionSet struct {
	fs       vfs.FS
	dir      string
	readOnly bool

	nextFileNum atomic.Uint64 // the number NewFileNum returns next
	// current mirrors mu.current for IsCurrent, which reads take on
	// every release and which must not wait for mu.
	current atomic.Pointer[Version]
	lastSeq atomic.Uint64 // the last sequence number the commit path used

	// logMu serializes LogAndApply and Close and guards the fields below.
	logMu       sync.Mutex
	manifest    vfs.File    // the MANIFEST being appended to; nil if read-only
	manifestLog *wal.Writer // frames records into manifest
	err         error       // sticky: set once a MANIFEST write failed, or on Close
	roll        RollPolicy
	rollAt      int64        // manifestLog's size at which to roll; 0: never
	snapSize    int64        // the size of the snapshot the MANIFEST starts with
	size        atomic.Int64 // manifestLog's size, for ManifestSize
	// marked: the MANIFEST names MarkedComparator (see SetMarked).
	marked atomic.Bool

	mu struct {
		sync.Mutex
		current         *Version              // holds the set's own reference
		live            map[*Version]struct{} // versions with references, current included
		manifestNum     uint64
		logNumber       uint64
		prevLogNumber   uint64
		compactPointers [NumLevels][]byte
	}
}

func newVersionSet(fsys vfs.FS, dir string, readOnly bool) *VersionSet {
	vs := &VersionSet{fs: fsys, dir: dir, readOnly: readOnly}
	vs.mu.live = make(map[*Version]struct{})
	return vs
}

// Create makes the MANIFEST and CURRENT of a new, empty database in dir,
// which must exist and have no CURRENT: MANIFEST-000001 holds one snapshot
// edit (comparator, log number 0, next file number 2, last sequence 0);
// then CURRENT is written atomically and the directory synced. The returned
// set is writable and appends to MANIFEST-000001.
func Create(fsys vfs.FS, dir string) (*VersionSet, error) {
	if _, err := fsys.Stat(filename.Make(dir, filename.Current, 0)); err == nil {
		return nil, errors.Newf("manifest: create: %s already has a CURRENT file", dir)
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, errors.Wrap(err, "manifest: create")
	}
	vs := newVersionSet(fsys, dir, false)
	vs.nextFileNum.Store(1)
	vs.install(new(Version))
	if err := vs.startManifest(); err != nil {
		return nil, err
	}
	return vs, nil
}

// Load opens the database state in dir: it reads CURRENT, then replays the
// MANIFEST it names strictly (see ReadEdits). Damage is an error matching
// ErrCorrupt naming the file and offset; a missing CURRENT is an error
// matching os.ErrNotExist. A comparator other than BytewiseComparator is an
// error. Every file number the MANIFEST mentions (its own, the log numbers,
// the tables) is marked used.
//
// Unless readOnly, Load then starts a new MANIFEST (the next file number)
// holding a snapshot of the state, syncs it, and switches CURRENT to it;
// the old MANIFEST (number below ManifestNumber) becomes obsolete for the
// engine to delete. A read-only set writes nothing and refuses LogAndApply.
//
// Load reads only CURRENT and the MANIFEST it names. goleveldb also leaves
// CURRENT.bak (the previous CURRENT) and CURRENT.<n> (a temp file whose
// rename a crash interrupted; the edit it would have published was never
// acknowledged), and LOG.old: they are ignored here, and whatever lists the
// directory must leave them alone too.
func Load(fsys vfs.FS, dir string, readOnly bool) (*VersionSet, error) {
	num, err := readCurrent(fsys, dir)
	if err != nil {
		return nil, err
	}
	s, v, err := replay(fsys, filename.Make(dir, filename.Manifest, num))
	if err != nil {
		return nil, err
	}
	vs := newVersionSet(fsys, dir, readOnly)
	vs.nextFileNum.Store(s.nextFileNum)
	vs.lastSeq.Store(s.lastSeq)
	for _, n := range []uint64{num, s.logNumber, s.prevLogNumber} {
		vs.MarkFileNumUsed(n)
	}
	for _, files := range v.Levels {
		for _, f := range files {
			vs.MarkFileNumUsed(f.Num)
		}
	}
	vs.mu.manifestNum = num
	vs.mu.logNumber, vs.mu.prevLogNumber = s.logNumber, s.prevLogNumber
	vs.mu.compactPointers = s.compactPointers
	vs.marked.Store(s.marked)
	vs.install(v)
	if !readOnly {
		if err := vs.StartWriting(); err != nil {
			return nil, err
		}
	}
	return vs, nil
}

// StartWriting makes a set that Load read read-only a writable one, as a
// writable Load would have returned it: it starts a new MANIFEST holding
// a snapshot and switches CURRENT to it. It lets a caller check the state
// before anything in the directory changes. It must be called before the
// set is shared, at most once.
func (vs *VersionSet) StartWriting() error {
	vs.readOnly = false
	if err := vs.startManifest(); err != nil {
		vs.readOnly = true
		return err
	}
	return nil
}

// install makes v the current version, taking the set's reference on
// it and dropping the one on the previous current version. vs.mu must not
// be held by the caller (the name says the set's state changes under it).
func (vs *VersionSet) install(v *Version) {
	v.vs = vs
	v.refs.Store(1)
	vs.mu.Lock()
	old := vs.mu.current
	vs.mu.current = v
	vs.current.Store(v)
	vs.mu.live[v] = struct{}{}
	vs.mu.Unlock()
	if old != nil {
		old.Unref() // may take vs.mu to drop old from live
	}
}

// releaseVersion forgets v, whose last reference is gone.
func (vs *VersionSet) releaseVersion(v *Version) {
	vs.mu.Lock()
	delete(vs.mu.live, v)
	vs.mu.Unlock()
}

// snapshot returns an edit that recreates the current state from nothing.
func (vs *VersionSet) snapshot() *VersionEdit {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	e := new(VersionEdit)
	e.SetComparator(BytewiseComparator)
	if vs.marked.Load() {
		e.SetComparator(MarkedComparator)
	}
	e.SetLogNumber(vs.mu.logNumber)
	e.SetPrevLogNumber(vs.mu.prevLogNumber)
	e.SetNextFileNumber(vs.nextFileNum.Load())
	e.SetLastSequence(vs.lastSeq.Load())
	for level, k := range vs.mu.compactPointers {
		if k != nil {
			e.SetCompactPointer(level, k)
		}
	}
	for level, files := range vs.mu.current.Levels {
		for _, f := range files {
			e.AddFile(level, f)
		}
	}
	return e
}

// startManifest writes a snapshot to a new MANIFEST, makes it durable, points
// CURRENT at it and makes it the one LogAndApply appends to. Only Create and
// StartWriting call it, before the set is shared.
func (vs *VersionSet) startManifest() error {
	_, err := vs.newManifest()
	return err
}

// newManifest is startManifest. On error, named is true if CURRENT may
// name the new MANIFEST all the same (its rename was attempted): the new
// file then stays, and the old one no longer receives the edits that
// count.
func (vs *VersionSet) newManifest() (named bool, err error) {
	num := vs.NewFileNum()
	path := filename.Make(vs.dir, filename.Manifest, num)
	f, err := vs.fs.Create(path)
	if err != nil {
		return false, errors.Wrapf(err, "manifest: create %s", filepath.Base(path))
	}
	keep := false // once CURRENT may name the file, it must stay
	defer func() {
		if err != nil {
			_ = f.Close()
			if !keep {
				_ = vs.fs.Remove(path) // best effort: CURRENT does not name it
			}
		}
	}()
	w := wal.NewWriter(f)
	if err = writeSynced(w, f, vs.snapshot().Encode(nil)); err != nil {
		return false, errors.Wrapf(err, "manifest: write %s", filepath.Base(path))
	}
	// The new file's directory entry is durable before CURRENT names it.
	if err = syncDir(vs.fs, vs.dir); err != nil {
		return false, err
	}
	if keep, err = setCurrent(vs.fs, vs.dir, num); err != nil {
		return keep, err
	}
	vs.manifest, vs.manifestLog = f, w
	vs.snapSize = w.Size()
	vs.size.Store(w.Size())
	vs.setRollAt()
	vs.mu.Lock()
	vs.mu.manifestNum = num
	vs.mu.Unlock()
	return true, nil
}

// RollPolicy says when LogAndApply starts a new MANIFEST.
type RollPolicy struct {
	// MaxSize is the size past which the MANIFEST is replaced by a new
	// one holding a snapshot of the state (or twice that snapshot's size,
	// if larger); 0 means never, as LevelDB, which starts one only at
	// Open.
	MaxSize int64
	// Rolled, if set, is called (with LogAndApply's lock held) after each
	// attempt: with the old and new MANIFEST numbers and the old one's
	// size, or with newNum 0 and the error if the attempt failed. A switch
	// that succeeded but could not close the old MANIFEST comes with
	// newNum and that error.
	Rolled func(oldNum, newNum uint64, oldSize int64, err error)
}

// SetRollPolicy sets when LogAndApply starts a new MANIFEST. It must be
// called before the set is shared; it applies from the next MANIFEST the
// set starts, or at once to the one it appends to.
func (vs *VersionSet) SetRollPolicy(p RollPolicy) {
	vs.roll = p
	vs.setRollAt()
}

// setRollAt sets the size at which the MANIFEST being appended to is
// replaced. It starts as one snapshot of the state; a limit below twice
// that would have every edit start another.
func (vs *VersionSet) setRollAt() {
	vs.rollAt = 0
	if vs.roll.MaxSize > 0 {
		vs.rollAt = max(vs.roll.MaxSize, 2*vs.snapSize)
	}
}

// maybeRoll starts a new MANIFEST when the one LogAndApply appends to has
// outgrown the policy, so that a long-running database's MANIFEST (an
// edit per flush and compaction) stays bounded, and with it the time the
// next Open takes to replay it. The old MANIFEST becomes obsolete, for
// the engine to delete. A failure that leaves CURRENT naming the old one
// is not an error (the edits stay where they were; the next attempt comes
// after the MANIFEST has grown by MaxSize again); one that may have
// switched CURRENT is, sticky, as a failed write is.
func (vs *VersionSet) maybeRoll() {
	if vs.rollAt == 0 || vs.manifestLog.Size() < vs.rollAt {
		return
	}
	old, oldNum, oldSize := vs.manifest, vs.ManifestNumber(), vs.manifestLog.Size()
	named, err := vs.newManifest()
	newNum := uint64(0)
	switch {
	case err == nil:
		newNum = vs.ManifestNumber()
		// Synced after every record: a failed close loses nothing, but
		// is reported with the switch.
		if cerr := old.Close(); cerr != nil {
			err = errors.Wrapf(cerr, "manifest: close %s", filename.Name(filename.Manifest, oldNum))
		}
	case named:
		vs.err = errors.Wrapf(err, "manifest: switch from %s to a new MANIFEST", filename.Name(filename.Manifest, oldNum))
		_ = old.Close()
		vs.manifest, vs.manifestLog = nil, nil
	default:
		vs.rollAt = oldSize + vs.roll.MaxSize
	}
	if vs.roll.Rolled != nil {
		vs.roll.Rolled(oldNum, newNum, oldSize, err)
	}
}

// writeSynced appends rec as one record and makes it durable.
func writeSynced(w *wal.Writer, f vfs.File, rec []byte) error {
	if err := w.WriteRecord(rec); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Sync()
}

// LogAndApply records e durably and installs the resulting Version. It fills
// in e's next file number from the set; its log number, prev log number and
// last sequence from the set when e has none (a last sequence below the
// set's is raised to it, and one above it becomes the set's); e is
// modified. A flush sets the last sequence of the memtable it wrote, in
// the same edit as the log number that retires that memtable's WAL, so
// that the MANIFEST never records a sequence number above a WAL record it
// still needs: LevelDB's readers refuse such records.
// The new Version shares e's FileMetas and the set keeps its compact
// pointer keys: neither may be modified afterwards.
// It then appends e to the MANIFEST as one record, flushes and syncs it,
// and only then makes the new Version current.
//
// An invalid edit (bad level or key, a file number not yet allocated, a
// log number going backwards, a result breaking the level invariants) is
// refused before anything is written. A failed write or sync is sticky:
// whether the edit reached the disk is unknown after a failed sync, so
// this and every later call return the error and the engine must stop
// changing files (a fresh Load decides). An error that matches
// ErrEditNotWritten says the edit cannot be on disk. Calls are
// serialized; readers are not blocked meanwhile.
func (vs *VersionSet) LogAndApply(e *VersionEdit) error {
	vs.logMu.Lock()
	defer vs.logMu.Unlock()
	if vs.readOnly {
		return errors.Mark(ErrReadOnly, ErrEditNotWritten)
	}
	if vs.err != nil {
		return errors.Mark(vs.err, ErrEditNotWritten) // nothing written after the failure
	}
	base := vs.Current() // stays current: only LogAndApply installs, under logMu
	defer base.Unref()
	if err := vs.fillEdit(e); err != nil {
		return errors.Mark(err, ErrEditNotWritten)
	}
	b := newBuilder(base)
	b.apply(e)
	v, err := b.finish()
	if err != nil {
		return errors.Mark(errors.Wrap(err, "manifest: edit refused"), ErrEditNotWritten)
	}
	name := filename.Name(filename.Manifest, vs.ManifestNumber())
	err = vs.manifestLog.WriteRecord(e.Encode(nil))
	if err == nil {
		err = vs.manifestLog.Flush()
	}
	if err != nil {
		vs.err = errors.Wrapf(err, "manifest: write %s", name)
		return errors.Mark(vs.err, ErrEditNotWritten)
	}
	if err := vs.manifest.Sync(); err != nil {
		vs.err = errors.Wrapf(err, "manifest: sync %s", name)
		return vs.err
	}
	vs.lastSeq.Store(e.LastSequence)
	vs.size.Store(vs.manifestLog.Size())
	vs.mu.Lock()
	vs.mu.logNumber, vs.mu.prevLogNumber = e.LogNumber, e.PrevLogNumber
	for _, p := range e.CompactPointers {
		vs.mu.compactPointers[p.Level] = p.Key
	}
	vs.mu.Unlock()
	vs.install(v)
	vs.maybeRoll()
	return nil
}

// fillEdit validates e and completes its scalar fields from the set.
func (vs *VersionSet) fillEdit(e *VersionEdit) error {
	if err := e.Validate(); err != nil {
		return err
	}
	if e.HasComparator && (e.Comparator != BytewiseComparator || vs.marked.Load()) {
		return errors.Newf("manifest: edit names comparator %q (the mark is SetMarked's)", e.Comparator)
	}
	next := vs.nextFileNum.Load()
	for _, f := range e.NewFiles {
		if f.Meta.Num >= next {
			return errors.Newf("manifest: edit adds table %06d, a number never allocated", f.Meta.Num)
		}
		if f.Meta.RangeDels && !vs.marked.Load() {
			return errors.Newf("manifest: edit adds table %06d, which holds range deletions, to an unmarked MANIFEST", f.Meta.Num)
		}
	}
	logNum, prevLogNum := vs.LogNumber(), vs.prevLogNumber()
	if !e.HasLogNumber {
		e.SetLogNumber(logNum)
	} else if e.LogNumber < logNum || e.LogNumber >= next {
		return errors.Newf("manifest: edit log number %d outside [%d, %d)", e.LogNumber, logNum, next)
	}
	if !e.HasPrevLogNumber {
		e.SetPrevLogNumber(prevLogNum)
	}
	e.SetNextFileNumber(next)
	if last := vs.lastSeq.Load(); !e.HasLastSequence || e.LastSequence < last {
		e.SetLastSequence(last)
	}
	return nil
}

// Marked reports whether the MANIFEST carries MarkedComparator.
func (vs *VersionSet) Marked() bool { return vs.marked.Load() }

// SetMarked puts the mark on or takes it off. On: an edit naming
// MarkedComparator is appended and synced, so that LevelDB and goleveldb
// refuse the directory before anything they would misread is written.
// Off: a new MANIFEST is started whose edits never named it (an edit
// naming BytewiseComparator again would satisfy goleveldb, which reads
// the last, but not LevelDB, which checks each); the caller takes it off
// only once no live table or log holds a range deletion. A set that is
// already so does nothing.
func (vs *VersionSet) SetMarked(on bool) error {
	vs.logMu.Lock()
	defer vs.logMu.Unlock()
	switch {
	case vs.readOnly:
		return ErrReadOnly
	case vs.err != nil:
		return vs.err
	case on == vs.marked.Load():
		return nil
	}
	if on {
		var e VersionEdit
		e.SetComparator(MarkedComparator)
		if err := writeSynced(vs.manifestLog, vs.manifest, e.Encode(nil)); err != nil {
			vs.err = errors.Wrapf(err, "manifest: write %s", filename.Name(filename.Manifest, vs.ManifestNumber()))
			return vs.err
		}
		vs.size.Store(vs.manifestLog.Size())
		vs.marked.Store(true)
		return nil
	}
	v := vs.Current()
	has := v.HasRangeDels()
	v.Unref()
	if has {
		return errors.New("manifest: the mark stays while a table holds range deletions")
	}
	vs.marked.Store(false)
	old, oldNum := vs.manifest, vs.ManifestNumber()
	named, err := vs.newManifest()
	switch {
	case err == nil:
		_ = old.Close() // synced after every record
		if vs.roll.Rolled != nil {
			vs.roll.Rolled(oldNum, vs.ManifestNumber(), 0, nil)
		}
		return nil
	case named:
		vs.err = errors.Wrapf(err, "manifest: switch from %s to an unmarked MANIFEST", filename.Name(filename.Manifest, oldNum))
		_ = old.Close()
		vs.manifest, vs.manifestLog = nil, nil
		return vs.err
	}
	vs.marked.Store(true) // the old MANIFEST, marked, is still the one
	return err
}

// Current returns the current Version with a reference the caller must
// release with Unref. Safe for concurrent use.
func (vs *VersionSet) Current() *Version {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	v := vs.mu.current
	v.Ref()
	return v
}

// IsCurrent reports whether v is the current Version. Safe for concurrent
// use.
func (vs *VersionSet) IsCurrent(v *Version) bool { return vs.current.Load() == v }

// LiveFiles returns the numbers of the tables in every Version that still
// has a reference, the current one included. Tables not in it, and not
// being written by the engine (numbers it allocated since), may be deleted.
//
// Only the list of versions is read under vs.mu, which every read takes
// (Current): their files are walked after it is released. A version's
// levels never change once it is installed, and a version released
// meanwhile only keeps its files in the answer, as if it had been released
// just after the call.
func (vs *VersionSet) LiveFiles() map[uint64]struct{} {
	vs.mu.Lock()
	versions := make([]*Version, 0, len(vs.mu.live))
	for v := range vs.mu.live {
		versions = append(versions, v)
	}
	vs.mu.Unlock()
	n := 0
	if len(versions) > 0 {
		for _, files := range versions[0].Levels {
			n += len(files)
		}
	}
	live := make(map[uint64]struct{}, n)
	for _, v := range versions {
		for _, files := range v.Levels {
			for _, f := range files {
				live[f.Num] = struct{}{}
			}
		}
	}
	return live
}

// NewFileNum allocates a file number, never returned before by this set nor
// recorded in its MANIFEST. Atomic.
func (vs *VersionSet) NewFileNum() uint64 { return vs.nextFileNum.Add(1) - 1 }

// PeekFileNum returns the number NewFileNum would return now. Atomic.
func (vs *VersionSet) PeekFileNum() uint64 { return vs.nextFileNum.Load() }

// MarkFileNumUsed makes sure NewFileNum never returns n or less (for example
// for WAL numbers found on disk). Atomic.
func (vs *VersionSet) MarkFileNumUsed(n uint64) {
	for {
		cur := vs.nextFileNum.Load()
		if cur > n || vs.nextFileNum.CompareAndSwap(cur, n+1) {
			return
		}
	}
}

// LastSequence returns the last sequence number used. Atomic.
func (vs *VersionSet) LastSequence() uint64 { return vs.lastSeq.Load() }

// SetLastSequence records s as the last sequence number the tables hold:
// Open calls it once recovery has placed the replayed writes (the commit
// path keeps its own count; a flush's edit carries its memtable's last).
// LogAndApply records an edit's value, or this one where the edit has
// none or a smaller one. Atomic.
func (vs *VersionSet) SetLastSequence(s uint64) { vs.lastSeq.Store(s) }

// LogNumber returns the number of the oldest WAL still needed: WALs below it
// are reflected in tables and may be deleted.
func (vs *VersionSet) LogNumber() uint64 {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	return vs.mu.logNumber
}

// PrevLogNumber returns the MANIFEST's previous log number: 0, or (in a
// database of an old LevelDB) a WAL below LogNumber still to be replayed.
func (vs *VersionSet) PrevLogNumber() uint64 { return vs.prevLogNumber() }

func (vs *VersionSet) prevLogNumber() uint64 {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	return vs.mu.prevLogNumber
}

// ManifestSize returns the size of the MANIFEST LogAndApply appends to, or
// 0 for a read-only set. Atomic.
func (vs *VersionSet) ManifestSize() int64 { return vs.size.Load() }

// ManifestWritten returns the number of the MANIFEST being written and
// how many bytes of it are written, complete records all, as of one
// moment (between edits).
func (vs *VersionSet) ManifestWritten() (num uint64, size int64) {
	vs.logMu.Lock()
	defer vs.logMu.Unlock()
	return vs.ManifestNumber(), vs.size.Load()
}

// ManifestNumber returns the number of the MANIFEST that CURRENT names.
// Other MANIFESTs in the directory are obsolete once Create or a writable
// Load has returned.
func (vs *VersionSet) ManifestNumber() uint64 {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	return vs.mu.manifestNum
}

// CompactPointer returns the internal key after which the next compaction
// of level should start, or nil. The slice must not be modified.
func (vs *VersionSet) CompactPointer(level int) []byte {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	return vs.mu.compactPointers[level]
}

// Close closes the MANIFEST. Later LogAndApply calls fail; Current and the
// other readers keep working. Safe to call twice.
func (vs *VersionSet) Close() error {
	vs.logMu.Lock()
	defer vs.logMu.Unlock()
	if vs.manifest == nil {
		return nil
	}
	err := vs.manifest.Close()
	vs.manifest, vs.manifestLog = nil, nil
	if vs.err == nil {
		vs.err = errors.New("manifest: version set closed")
	}
	return errors.Wrap(err, "manifest: close")
}
