package shale

// Snapshot is a consistent, read-only view of the database at the moment
// NewSnapshot was called: later writes are invisible to it. A snapshot pins
// only a sequence number; compaction keeps every version a snapshot can
// see. Close it when done, or the database keeps those versions forever.
//
// A Snapshot is safe for concurrent use.
type Snapshot struct {
	db  *DB
	seq uint64
}

// NewSnapshot returns a snapshot of the database as of now.
func (db *DB) NewSnapshot() *Snapshot {
	db.mu.Lock()
	defer db.mu.Unlock()
	// Taken under the lock that compactions read the snapshot list under:
	// a compaction either sees this snapshot or started before its
	// sequence number was visible.
	s := &Snapshot{db: db, seq: db.visibleSeq.Load()}
	db.mu.snapshots.add(s)
	return s
}

// Get returns a copy of the value key had when the snapshot was taken, or
// an error matching ErrNotFound.
func (s *Snapshot) Get(key []byte) ([]byte, error) {
	return s.db.get(key, s)
}

// NewIterator returns an iterator over the snapshot's view, with the same
// bounds and guarantees as DB.NewIterator.
func (s *Snapshot) NewIterator(o *IterOptions) *Iterator {
	return s.db.newIterator(o, s)
}

// Close releases the snapshot. It is safe to call more than once, also
// after the DB is closed: a Close with nothing left to release returns
// nil. Get and NewIterator on a closed snapshot fail with ErrClosed.
func (s *Snapshot) Close() error {
	s.db.mu.Lock()
	defer s.db.mu.Unlock()
	s.db.mu.snapshots.remove(s)
	// Versions only this snapshot kept may now be dropped: if it was the
	// oldest and writes came after it, compaction's horizon moves. (A
	// schedule on every Close cost a read-only transaction of two Gets
	// a sixth of its time.)
	if s.db.mu.snapshots.oldest(s.db.visibleSeq.Load()) > s.seq {
		s.db.maybeScheduleLocked()
	}
	return nil
}

// snapshotList is the set of open snapshots, guarded by DB.mu.
type snapshotList struct {
	m map[*Snapshot]struct{}
}

func (l *snapshotList) add(s *Snapshot) {
	if l.m == nil {
		l.m = make(map[*Snapshot]struct{})
	}
	l.m[s] = struct{}{}
}

func (l *snapshotList) remove(s *Snapshot) {
	delete(l.m, s)
}

func (l *snapshotList) has(s *Snapshot) bool {
	_, ok := l.m[s]
	return ok
}

// oldest returns the smallest sequence number an open snapshot reads at,
// or def if there is none. Compaction keeps what that sequence can see.
func (l *snapshotList) oldest(def uint64) uint64 {
	for s := range l.m {
		def = min(def, s.seq)
	}
	return def
}
