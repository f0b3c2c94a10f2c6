package shale

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"

	"github.com/cockroachdb/errors"
	"github.com/shale-db/shale/internal/batchrepr"
	"github.com/shale-db/shale/internal/filename"
	"github.com/shale-db/shale/internal/manifest"
	"github.com/shale-db/shale/memtable"
	"github.com/shale-db/shale/wal"
)

// RecoveryReport says what Open found in the write-ahead logs it replayed.
type RecoveryReport struct {
	// Mode is the recovery mode Open used.
	Mode RecoveryMode
	// Logs lists the replayed logs, oldest first.
	Logs []LogRecovery
}

// LogRecovery is what the replay of one write-ahead log found.
type LogRecovery struct {
	// FileNum is the log's number: its name is FileNum as "%06d.log".
	FileNum uint64
	// Records is the number of records (batches) replayed.
	Records int
	// Drops lists the damage skipped, in file order. Each names the
	// offset, the bytes dropped and the reason.
	Drops []wal.Drop
	// TornTail, if not nil, is the incomplete record at the end of the
	// log, as a crash in the middle of a write leaves.
	TornTail *wal.Drop
	// Stopped is set when PointInTime recovery stopped in this log: the
	// rest of it, and every later log, was not replayed.
	Stopped bool
	// MovedTo is where the log was moved, if it had damage; it is kept so
	// that its bytes can still be examined.
	MovedTo string
}

// Damaged reports whether replay dropped anything but a torn tail.
func (l *LogRecovery) Damaged() bool { return len(l.Drops) > 0 || l.Stopped }

// replayResult is what replayLogs hands to the rest of Open.
type replayResult struct {
	report  RecoveryReport
	mem     *memtable.Memtable
	edit    *manifest.VersionEdit // tables written during replay
	lastSeq uint64
	// tableSeq is the last sequence number that is in tables: the
	// MANIFEST's, or that of the last table written during replay.
	tableSeq uint64
	// retired holds the logs already removed during replay (see
	// retireFlushedLogs).
	retired map[uint64]bool
	// carry holds copies of the records in mem, in log order, while they
	// total at most carryLimit bytes; carryOff is set once they did not.
	carry      carried
	carryBytes int64
	carryOff   bool
	// flushing, if not nil, is the table being written from a memtable
	// that filled during replay, while replay goes on into the next.
	flushing *replayFlush
}

// replayFlush is a table being written during replay.
type replayFlush struct {
	done chan struct{}
	meta *manifest.FileMeta
	err  error
}

// startReplayFlush writes mem to a table in the background, then drops
// the caller's reference to it. At most one runs at a time (the caller
// awaits the last first), so replay holds at most two memtables.
func (db *DB) startReplayFlush(res *replayResult, mem *memtable.Memtable) {
	f := &replayFlush{done: make(chan struct{})}
	res.flushing = f
	go func() {
		defer close(f.done)
		f.meta, f.err = db.flushEvents("open", mem, func(job int) (*manifest.FileMeta, error) {
			return db.writeTable(job, mem.NewIter(), mem.RangeDels(), 0)
		})
		mem.Unref()
	}()
}

// awaitReplayFlush waits for the table being written, if any, and adds it
// to the result's edit.
func (db *DB) awaitReplayFlush(res *replayResult) error {
	f := res.flushing
	if f == nil {
		return nil
	}
	<-f.done
	res.flushing = nil
	if f.err != nil {
		return f.err
	}
	if f.meta != nil {
		res.edit.AddFile(0, f.meta)
	}
	return nil
}

// carryLimit is the most WAL bytes Open carries forward into its new log
// rather than write a table: well under the write buffer, so that a
// database reopened for one write at a time does not gain a table per
// Open, and a full memtable is flushed as usual.
func (db *DB) carryLimit() int64 { return db.opts.WriteBufferSize / 4 }

// flushCarriedAt is the WAL bytes carried forward past which Open flushes
// them in the background: it switches the memtable and its new WAL out at
// once, as a full memtable is. Below it, the records stay in the WAL for
// the next writes to join, so that a database reopened for a few writes
// at a time gains no table per Open. Above it, carrying them again at
// every Open would rewrite and replay them (a megabyte after db_bench's
// fill was killed, every later Open), and they take about twice the
// bytes in the WAL that they take in a table.
func (db *DB) flushCarriedAt() int64 { return db.opts.WriteBufferSize / 16 }

// noteCarry keeps a copy of rec for carrying forward, until the records
// kept pass carryLimit.
func (db *DB) noteCarry(res *replayResult, rec []byte) {
	if res.carryOff || db.opts.ReadOnly {
		return
	}
	res.carryBytes += int64(len(rec))
	if res.carryBytes > db.carryLimit() {
		res.carry.release()
		res.carryOff = true
		return
	}
	res.carry.add(rec)
}

// replayLogs replays, in order, every WAL that the MANIFEST has not seen.
// When writable, a memtable that fills during replay is written to a table
// (recorded in the result's edit), so that memory stays bounded. The
// result's memtable comes with a reference for the caller.
func (db *DB) replayLogs() (_ *replayResult, err error) {
	nums, err := db.logsToReplay()
	if err != nil {
		return nil, err
	}
	res := &replayResult{
		report:   RecoveryReport{Mode: db.opts.Recovery},
		mem:      memtable.NewLazy(db.memChunks, db.opts.WriteBufferSize),
		carry:    carried{chunks: db.memChunks},
		edit:     &manifest.VersionEdit{},
		lastSeq:  db.vs.LastSequence(),
		tableSeq: db.vs.LastSequence(),
	}
	defer func() {
		if err != nil {
			res.carry.release()
			res.mem.Unref()
		}
	}()
	newest, err := db.newestLog(nums)
	if err != nil {
		return nil, err
	}
	stopped := false
	for i, num := range nums {
		lr := LogRecovery{FileNum: num}
		if !stopped {
			tail := tornTailOK
			if i < newest {
				tail = func(lastSeq uint64) (bool, error) { return db.continuedAfter(nums[i+1:newest+1], lastSeq) }
			}
			if err := db.replayLog(res, &lr, tail); err != nil {
				// A table still being written is in no edit; the next
				// Open deletes it.
				db.awaitReplayFlush(res)
				return nil, err
			}
			stopped = lr.Stopped
		} else {
			lr.Stopped = true
		}
		res.report.Logs = append(res.report.Logs, lr)
		if i+1 < len(nums) && !stopped {
			if err := db.retireFlushedLogs(res, nums[i+1]); err != nil {
				return nil, err
			}
		}
	}
	if err := db.awaitReplayFlush(res); err != nil {
		return nil, err
	}
	return res, nil
}

// logsToReplay lists the numbers of the WALs at or after the MANIFEST's log
// number, and the one its previous log number names (old LevelDB set it
// while a memtable's log was being compacted; LevelDB replays it),
// ascending, and marks their numbers used.
func (db *DB) logsToReplay() ([]uint64, error) {
	names, err := db.fs.List(db.dir)
	if err != nil {
		return nil, errors.Wrap(err, "shale: list database directory")
	}
	var nums []uint64
	for _, name := range names {
		t, num, ok := filename.Parse(name)
		if !ok {
			continue
		}
		db.vs.MarkFileNumUsed(num)
		if t == filename.Log && (num >= db.vs.LogNumber() || num == db.vs.PrevLogNumber() && num != 0) {
			nums = append(nums, num)
		}
	}
	slices.Sort(nums)
	return nums, nil
}

// newestLog returns the index in nums of the newest log that holds
// anything. Logs after it are empty: a crash can leave a new, empty WAL
// beside the one whose torn tail is then still the legitimate end of the
// writes (Open and a memtable switch create the new WAL before it is used).
func (db *DB) newestLog(nums []uint64) (int, error) {
	for i := len(nums) - 1; i > 0; i-- {
		data, err := db.logHoldsData(filename.Make(db.dir, filename.Log, nums[i]))
		if err != nil {
			return 0, err
		}
		if data {
			return i, nil
		}
	}
	return 0, nil
}

// logHoldsData reports whether log name holds a byte other than zero. Its
// size does not tell: on Linux a WAL is reserved a megabyte at a time
// ahead of its appends (vfs.AppendTo), and only its retirement cuts it to
// what was appended, so a process killed before its WAL's first append
// leaves a megabyte of zeros, which hold no more than an empty file.
func (db *DB) logHoldsData(name string) (bool, error) {
	f, err := db.fs.Open(name)
	if err != nil {
		return false, errors.Wrapf(err, "shale: open log %s", filepath.Base(name))
	}
	defer f.Close()
	buf := make([]byte, wal.BlockSize)
	for {
		n, err := io.ReadFull(f, buf)
		for _, b := range buf[:n] {
			if b != 0 {
				return true, nil
			}
		}
		switch {
		case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
			return false, nil
		case err != nil:
			return false, errors.Wrapf(err, "shale: read log %s", filepath.Base(name))
		}
	}
}

// tornTailOK is the newest log's tailCheck: a crash may cut the writes
// short there.
func tornTailOK(uint64) (bool, error) { return true, nil }

// A tailCheck reports whether a log that ends in a torn write, after
// records up to sequence number lastSeq, ended so in a crash rather than
// through damage.
type tailCheck func(lastSeq uint64) (bool, error)

// continuedAfter is the tailCheck of a log older than the newest, whose
// successors are nums: its torn tail is a crash's if the first record of
// the logs after it comes right after its last one (or repeats it), so that
// no acknowledged write is missing between them. That is what a crash
// inside Open leaves: the old log still ends in the first crash's torn
// tail, and a newer one holds the records Open carried forward from it,
// synced, while the MANIFEST does not yet name it. (A memtable switch
// syncs the retired log before the new one takes a write, so the writes
// of normal operation never leave an older log torn.) Logs after it with
// no whole record (Open's carry cut short before its sync) leave it the
// last log with records, whose tear is a crash's as the newest's is; what
// damage they hold is reported as theirs. A gap in the sequence is damage.
func (db *DB) continuedAfter(nums []uint64, lastSeq uint64) (bool, error) {
	for _, num := range nums {
		seq, ok, err := db.firstSeq(num)
		if err != nil || ok {
			return ok && seq <= lastSeq+1, err
		}
	}
	return true, nil
}

// firstSeq returns the sequence number of the first batch in log num that
// reads whole, if there is one.
func (db *DB) firstSeq(num uint64) (seq uint64, ok bool, err error) {
	name := filename.Make(db.dir, filename.Log, num)
	f, err := db.fs.Open(name)
	if err != nil {
		return 0, false, errors.Wrapf(err, "shale: open log %s", filepath.Base(name))
	}
	defer f.Close()
	r := wal.NewReader(f, wal.Named(filepath.Base(name)))
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			return 0, false, nil
		}
		if err != nil {
			return 0, false, markCorruption(errors.Wrapf(err, "shale: read log %s", filepath.Base(name)))
		}
		if n, verr := batchrepr.ValidateCommitted(rec); verr == nil && n > 0 {
			return batchrepr.Seq(rec), true, nil
		}
	}
}

// replayLog applies one WAL's records to res.mem per the recovery mode;
// tail says whether a torn write at its end is a crash's.
func (db *DB) replayLog(res *replayResult, lr *LogRecovery, tail tailCheck) error {
	name := filename.Make(db.dir, filename.Log, lr.FileNum)
	f, err := db.fs.Open(name)
	if err != nil {
		return errors.Wrapf(err, "shale: open log %s", filepath.Base(name))
	}
	defer f.Close()
	damaged := false
	r := wal.NewReader(f, wal.Named(filepath.Base(name)), wal.OnDrop(func(d wal.Drop) {
		if d.TornTail {
			lr.TornTail = &d
			return
		}
		lr.Drops = append(lr.Drops, d)
		damaged = true
	}))
	for {
		rec, err := r.Next()
		if err != nil && !errors.Is(err, io.EOF) {
			return markCorruption(errors.Wrapf(err, "shale: read log %s", filepath.Base(name)))
		}
		if err != nil && lr.TornTail != nil {
			crash, terr := tail(res.lastSeq)
			if terr != nil {
				return terr
			}
			if !crash {
				// What is missing was acknowledged before a later write.
				d := *lr.TornTail
				d.Reason = "torn write at the end of a log that is not the newest"
				lr.Drops = append(lr.Drops, d)
				damaged = true
			}
		}
		if damaged {
			if stop, err := db.onDamage(lr, name); stop || err != nil {
				return err
			}
			damaged = false
		}
		if err != nil {
			return nil
		}
		if stop, err := db.replayRecord(res, lr, rec, r.LastRecordOffset()); stop || err != nil {
			return err
		}
	}
}

// onDamage applies the recovery mode to damage just found in log lr:
// Strict fails, PointInTime stops, SkipCorrupt goes on.
func (db *DB) onDamage(lr *LogRecovery, name string) (stop bool, err error) {
	switch db.opts.Recovery {
	case Strict:
		d := lr.Drops[0] // Strict stops at the first damage
		return true, errors.Wrapf(ErrCorruption, "shale: %s: %s at offset %d (%d bytes; Strict recovery)",
			filepath.Base(name), d.Reason, d.Offset, d.Bytes)
	case PointInTime:
		lr.Stopped = true
		return true, nil
	}
	return false, nil
}

// replayRecord decodes one WAL record as a batch and applies it. A record
// whose checksum held but whose batch is malformed is damage like any
// other.
func (db *DB) replayRecord(res *replayResult, lr *LogRecovery, rec []byte, off int64) (stop bool, err error) {
	n, err := batchrepr.ValidateCommitted(rec)
	if err != nil {
		lr.Drops = append(lr.Drops, wal.Drop{Offset: off, Bytes: int64(len(rec)), Reason: fmt.Sprintf("malformed batch: %v", err)})
		return db.onDamage(lr, filename.Make(db.dir, filename.Log, lr.FileNum))
	}
	if n == 0 {
		return false, nil
	}
	seq := batchrepr.Seq(rec)
	if err := res.mem.Apply(rec, seq); err != nil {
		return true, markCorruption(err)
	}
	lr.Records++
	res.lastSeq = max(res.lastSeq, seq+uint64(n)-1)
	db.noteCarry(res, rec)
	if !db.opts.ReadOnly && res.mem.ApproximateSize() >= db.opts.WriteBufferSize {
		// The table is written beside the replay of what follows.
		if err := db.awaitReplayFlush(res); err != nil {
			return true, err
		}
		db.startReplayFlush(res, res.mem)
		res.mem = memtable.NewLazy(db.memChunks, db.opts.WriteBufferSize)
		res.tableSeq = res.lastSeq
		res.carry.release()
		res.carryBytes, res.carryOff = 0, false
	}
	return false, nil
}

// retireFlushedLogs records the tables replay wrote and removes the logs
// replayed so far, when those tables hold all of them: the memtable filled
// exactly at the end of the last one, as it usually does (it filled there
// before, when the log was written). next is the next log to replay. Open
// then needs free space for one write buffer's table at a time, not for a
// table of every log while all the logs are still there: on a full disk
// that is the difference between an Open that succeeds and one that
// fails. Logs with damage or a torn tail are left for retireLogs.
func (db *DB) retireFlushedLogs(res *replayResult, next uint64) error {
	// Strict refuses at damage further on, and a refused Open leaves the
	// logs as they were.
	if db.opts.ReadOnly || db.opts.Recovery == Strict || !res.mem.Empty() ||
		(res.flushing == nil && len(res.edit.NewFiles) == 0) {
		return nil
	}
	var logs []uint64
	for i := range res.report.Logs {
		lr := &res.report.Logs[i]
		if res.retired[lr.FileNum] {
			continue
		}
		if lr.Damaged() || lr.TornTail != nil || lr.Records == 0 {
			return nil
		}
		logs = append(logs, lr.FileNum)
	}
	// The edit's last sequence is the tables'; every record of the logs
	// kept must be above it. A later log may repeat records already
	// replayed (an Open that carried them forward and then crashed), and
	// LevelDB's readers refuse a record below the last sequence.
	if first, ok, err := db.firstSeq(next); err != nil || (ok && first <= res.tableSeq) {
		return nil // a damaged log is replay's to judge, not this shortcut's
	}
	if err := db.awaitReplayFlush(res); err != nil {
		return err
	}
	edit := res.edit
	for _, nf := range edit.NewFiles {
		if nf.Meta.RangeDels && !db.vs.Marked() {
			if err := db.vs.SetMarked(true); err != nil { // before a live table holds one
				return err
			}
		}
	}
	edit.SetLogNumber(next)
	edit.SetPrevLogNumber(0)
	edit.SetLastSequence(res.tableSeq)
	if err := db.logAndApply(edit); err != nil {
		// As in finishRecovery: the tables stay if the edit may be on disk.
		db.openEditMayBeDurable = !errors.Is(err, manifest.ErrEditNotWritten)
		return err
	}
	for _, nf := range edit.NewFiles {
		db.releaseOutputNums(nf.Meta.Num)
	}
	res.edit = &manifest.VersionEdit{}
	if res.retired == nil {
		res.retired = make(map[uint64]bool)
	}
	job := db.events.newJob()
	for _, num := range logs {
		res.retired[num] = true
		if err := db.removeLog(job, num); err != nil {
			return errors.Wrap(err, "shale: remove replayed log")
		}
	}
	return db.syncDir()
}

// retireLogs removes the replayed logs now that their writes are in a
// table; a log with damage is moved to lost/ instead, durably, so that its
// bytes can still be examined after a power loss.
func (db *DB) retireLogs(rec *replayResult) error {
	lost := filepath.Join(db.dir, "lost")
	movedAny := false
	for i := range rec.report.Logs {
		lr := &rec.report.Logs[i]
		if rec.retired[lr.FileNum] {
			continue
		}
		name := filename.Make(db.dir, filename.Log, lr.FileNum)
		if keep, err := db.keepInLost(lr, name); err != nil || !keep {
			if err != nil {
				return err
			}
			continue
		}
		if !movedAny {
			if err := db.fs.MkdirAll(lost, 0o755); err != nil {
				return errors.Wrap(err, "shale: create lost/")
			}
			if err := db.syncDir(); err != nil { // lost/ itself is durable
				return err
			}
			movedAny = true
		}
		lr.MovedTo = filepath.Join(lost, filepath.Base(name))
		if err := db.fs.Rename(name, lr.MovedTo); err != nil {
			return errors.Wrap(err, "shale: move damaged log to lost/")
		}
	}
	if movedAny {
		if err := db.syncDirPath(lost); err != nil {
			return err
		}
	}
	job := db.events.newJob()
	for _, lr := range rec.report.Logs {
		if lr.MovedTo == "" && !rec.retired[lr.FileNum] {
			if err := db.removeLog(job, lr.FileNum); err != nil {
				return errors.Wrap(err, "shale: remove replayed log")
			}
		}
	}
	db.recovery = rec.report
	return db.syncDir()
}

// keepInLost reports whether replayed log lr, named name, goes to lost/
// rather than being deleted: it had damage, or it holds no valid record
// yet is not all zeros (see logHoldsData), so that it may not be a log of
// ours at all, unless it is one whose first write a kill cut short (see
// tornFirstWrite).
func (db *DB) keepInLost(lr *LogRecovery, name string) (bool, error) {
	if lr.Damaged() {
		return true, nil
	}
	if lr.Records > 0 {
		return false, nil
	}
	data, err := db.logHoldsData(name)
	if err != nil || !data {
		return false, err
	}
	if lr.TornTail != nil && lr.TornTail.Offset == 0 {
		if torn, err := db.tornFirstWrite(name); err != nil || torn {
			return false, err
		}
	}
	st, err := db.fs.Stat(name)
	if err != nil {
		return false, errors.Wrap(err, "shale: stat log")
	}
	db.opts.Logger.Warn("shale: log holds no valid record; moved to lost/", "log", lr.FileNum, "bytes", st.Size())
	return true, nil
}

// tornFirstWrite reports whether log name, whose torn tail starts at its
// first byte, is a log of ours whose first write a kill cut short: it
// starts with a header that a Writer writes at a record's start, and it
// ends in zeros, as a log reserved ahead of its appends does (vfs.AppendTo
// zeroes a megabyte ahead). A kill can cut a write short: Linux can stop a
// large write between pages once the writer has a fatal signal pending.
// A crash test's kill left such a log (a torn tail from offset 0 over all
// of its 1 MiB and 4 KiB, not all zeros): what it held was a write never
// acknowledged, and it is dropped as any torn tail is.
func (db *DB) tornFirstWrite(name string) (bool, error) {
	f, err := db.fs.Open(name)
	if err != nil {
		return false, errors.Wrapf(err, "shale: open log %s", filepath.Base(name))
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return false, errors.Wrapf(err, "shale: stat log %s", filepath.Base(name))
	}
	var h [wal.HeaderSize]byte
	if _, err := f.ReadAt(h[:], 0); err != nil || !wal.StartsRecord(h[:]) {
		return false, nil
	}
	tail := make([]byte, min(st.Size()-wal.HeaderSize, 4096))
	if _, err := f.ReadAt(tail, st.Size()-int64(len(tail))); err != nil {
		return false, nil
	}
	for _, b := range tail {
		if b != 0 {
			return false, nil
		}
	}
	return len(tail) > 0, nil
}

// logRecovery logs what recovery found, one line per log with damage.
func (db *DB) logRecovery() {
	for _, lr := range db.recovery.Logs {
		for _, d := range lr.Drops {
			db.opts.Logger.Warn("shale: recovery dropped damaged bytes", "log", lr.FileNum,
				"offset", d.Offset, "bytes", d.Bytes, "reason", d.Reason, "mode", db.opts.Recovery.String())
		}
		if lr.Stopped {
			db.opts.Logger.Warn("shale: point-in-time recovery stopped", "log", lr.FileNum)
		}
		if lr.TornTail != nil {
			db.opts.Logger.Info("shale: log ends in a torn write", "log", lr.FileNum,
				"offset", lr.TornTail.Offset, "bytes", lr.TornTail.Bytes)
		}
		db.opts.Logger.Info("shale: replayed log", "log", lr.FileNum, "records", lr.Records)
	}
}
