package shale

import (
	"bytes"
	stderrors "errors"
	"testing"

	"github.com/shale-db/shale/internal/filename"
	"github.com/shale-db/shale/internal/vfs"
)

// FuzzRecoverLog opens a database whose newest WAL holds arbitrary bytes,
// in each recovery mode. Open must not panic; SkipCorrupt and PointInTime
// must open whatever the log holds (damage is dropped and reported, never
// fatal); Strict may fail only with ErrCorruption; and a database that
// opened answers a full scan and opens again with no damage left.
func FuzzRecoverLog(f *testing.F) {
	// Seeds: logs the engine itself writes.
	fs := vfs.NewMem()
	o, _ := (&Options{}).withDefaults()
	db, err := open("/db", o, fs)
	if err != nil {
		f.Fatal(err)
	}
	for i := range 20 {
		var b Batch
		b.Put(bytes.Repeat([]byte{byte('a' + i)}, i), bytes.Repeat([]byte{'v'}, i*200))
		if i%3 == 0 {
			b.Delete([]byte("a"))
		}
		db.Write(&b, NoSync)
	}
	logNum := db.mu.log.num
	db.Close()
	seed := memFile(f, fs, filename.Make("/db", filename.Log, logNum))
	for _, mode := range []RecoveryMode{SkipCorrupt, PointInTime, Strict} {
		f.Add(seed, uint8(mode))
		f.Add(seed[:len(seed)/2], uint8(mode))
		damaged := bytes.Clone(seed)
		damaged[len(damaged)/3] ^= 0x40
		f.Add(damaged, uint8(mode))
	}
	f.Fuzz(func(t *testing.T, log []byte, m uint8) {
		mode := RecoveryMode(m % 3)
		fs := vfs.NewMem()
		o, _ := (&Options{Recovery: mode}).withDefaults()
		db, err := open("/db", o, fs)
		if err != nil {
			t.Fatal(err)
		}
		num := db.mu.log.num
		db.Close()
		w, err := fs.Create(filename.Make("/db", filename.Log, num))
		if err != nil {
			t.Fatal(err)
		}
		w.Write(log)
		w.Close()
		db, err = open("/db", o, fs)
		if err != nil {
			if mode != Strict || !stderrors.Is(err, ErrCorruption) {
				t.Fatalf("%v Open of an arbitrary log: %v", mode, err)
			}
			return
		}
		it := db.NewIterator(nil)
		for ok := it.First(); ok; ok = it.Next() {
		}
		if err := it.Close(); err != nil {
			t.Fatalf("scan after recovery: %v", err)
		}
		db.Close()
		db, err = open("/db", o, fs)
		if err != nil {
			t.Fatalf("second Open: %v", err)
		}
		for _, lr := range db.Recovery().Logs {
			if lr.Damaged() {
				t.Fatalf("damage met again at the second Open: %+v", lr)
			}
		}
		db.Close()
	})
}
