package shale

import (
	"github.com/shale-db/shale/internal/ikey"
	"github.com/shale-db/shale/internal/manifest"
)

// NumLevels is the number of levels of tables.
const NumLevels = manifest.NumLevels

// TableInfo describes one table file of the database.
type TableInfo struct {
	Level   int
	FileNum uint64 // the file is FileNum as "%06d.ldb"
	Size    int64  // bytes
	// Smallest and Largest are the table's smallest and largest user keys.
	Smallest, Largest []byte
	// LargestSeqNum is the sequence number of the table's newest entry.
	LargestSeqNum uint64
}

// Stats is a description of the database's files and memory at one moment.
type Stats struct {
	// Tables lists the live tables, by level, then in key order (level 0:
	// newest first).
	Tables []TableInfo
	// LogNum is the number of the write-ahead log taking writes (0 when
	// read-only).
	LogNum uint64
	// MemtableSize is the approximate size in bytes of the memtables.
	MemtableSize int64
	// LastSequence is the sequence number of the newest write.
	LastSequence uint64
}

// Stats returns a description of the database's files and memory.
func (db *DB) Stats() (Stats, error) {
	rs, err := db.acquire(nil)
	if err != nil {
		return Stats{}, err
	}
	defer db.release(rs)
	s := Stats{LastSequence: rs.seq}
	for _, m := range rs.memtables() {
		s.MemtableSize += m.ApproximateSize()
	}
	db.mu.Lock()
	if db.mu.log != nil {
		s.LogNum = db.mu.log.num
	}
	db.mu.Unlock()
	for level, files := range rs.v.Levels {
		for _, f := range files {
			s.Tables = append(s.Tables, TableInfo{
				Level: level, FileNum: f.Num, Size: f.Size,
				Smallest:      append([]byte(nil), ikey.UserKey(f.Smallest)...),
				Largest:       append([]byte(nil), ikey.UserKey(f.Largest)...),
				LargestSeqNum: f.LargestSeq,
			})
		}
	}
	return s, nil
}
