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
	// Guarded by db.mu: the snapshot's place in db.mu.snapshots, and
	// whether it is there (open).
	prev, next *Snapshot
	listed     bool
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
	return s.db.get(nil, key, s)
}

// Has is DB.Has as of the snapshot.
func (s *Snapshot) Has(key []byte) (bool, error) {
	return found(withValueBuf(func(buf []byte) ([]byte, error) { return s.db.get(buf, key, s) }))
}

// GetAppend is DB.GetAppend as of the snapshot.
func (s *Snapshot) GetAppend(dst, key []byte) ([]byte, error) {
	return s.db.get(dst, key, s)
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

// snapshotList is the set of open snapshots, guarded by DB.mu: a doubly
// linked list in the order they were taken, which is also the order of
// their sequence numbers (NewSnapshot reads the visible sequence number,
// which only grows, under the same lock that appends to the list; add
// keeps the order regardless). So the oldest is the first, and add,
// remove, has and oldest each cost O(1) however many are open. (A map
// cost oldest a walk over all of them, and Close calls oldest: closing n
// snapshots cost O(n²) under DB.mu.)
type snapshotList struct {
	head, tail *Snapshot
}

func (l *snapshotList) add(s *Snapshot) {
	// After the last one taken with a sequence number no greater than
	// s's: always the tail while sequence numbers only grow, and still
	// ordered if they ever did not.
	after := l.tail
	for after != nil && after.seq > s.seq {
		after = after.prev
	}
	s.prev, s.listed = after, true
	if after != nil {
		s.next, after.next = after.next, s
	} else {
		s.next, l.head = l.head, s
	}
	if s.next != nil {
		s.next.prev = s
	} else {
		l.tail = s
	}
}

func (l *snapshotList) remove(s *Snapshot) {
	if !s.listed {
		return
	}
	if s.prev != nil {
		s.prev.next = s.next
	} else {
		l.head = s.next
	}
	if s.next != nil {
		s.next.prev = s.prev
	} else {
		l.tail = s.prev
	}
	s.prev, s.next, s.listed = nil, nil, false
}

func (l *snapshotList) has(s *Snapshot) bool { return s.listed }

// oldest returns the smallest sequence number an open snapshot reads at,
// or def if there is none. Compaction keeps what that sequence can see.
func (l *snapshotList) oldest(def uint64) uint64 {
	if l.head != nil {
		return min(def, l.head.seq)
	}
	return def
}
