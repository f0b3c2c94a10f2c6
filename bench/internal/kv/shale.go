package kv

import (
	"errors"
	"sync"

	"github.com/shale-db/shale"
)

type shaleStore struct{ db *shale.DB }

var _ Store = shaleStore{}

func openShaleWALCompressed(dir string, c Config) (Store, error) {
	return openShaleWith(dir, c, shale.Options{WALCompression: true})
}

func openShale(dir string, c Config) (Store, error) {
	return openShaleWith(dir, c, shale.Options{})
}

func openShaleWith(dir string, c Config, o shale.Options) (Store, error) {
	if c.CacheBytes > 0 {
		o.CacheSize = c.CacheBytes
	}
	db, err := shale.Open(dir, &o)
	if err != nil {
		return nil, err
	}
	return shaleStore{db}, nil
}

func (s shaleStore) Put(k, v []byte, sync bool) error {
	d := shale.NoSync
	if sync {
		d = shale.Sync
	}
	return s.db.Put(k, v, d)
}

// Get reads the value into a pooled buffer with GetAppend, as a program
// that reads values without keeping them would: Pebble's and bbolt's Gets
// here lend the value without a copy, and shale's Get would allocate one.
func (s shaleStore) Get(k []byte) (int, bool, error) {
	bp := valueBufs.Get().(*[]byte)
	v, err := s.db.GetAppend((*bp)[:0], k)
	*bp = v[:0]
	valueBufs.Put(bp)
	if errors.Is(err, shale.ErrNotFound) {
		return 0, false, nil
	}
	return len(v), err == nil, err
}

// valueBufs holds shaleStore.Get's buffers.
var valueBufs = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}

func (s shaleStore) NewBatch() Batch { return &shaleBatch{db: s.db} }

func (s shaleStore) NewIter() (Iter, error) { return s.db.NewIterator(nil), nil }

func (s shaleStore) Close() error { return s.db.Close() }

// Stalls reports shale's three kinds of write stall since Open.
func (s shaleStore) Stalls() map[string]Stall {
	st := s.db.Metrics().Stalls
	kind := func(m shale.StallMetrics) Stall { return Stall{Count: m.Count, Seconds: m.Duration.Seconds()} }
	return map[string]Stall{"slowdown": kind(st.Slowdown), "memtable full": kind(st.MemtableFull), "L0 full": kind(st.L0Full)}
}

// StallSeconds adds up every kind of write stall since Open.
func (s shaleStore) StallSeconds() float64 {
	st := s.db.Metrics().Stalls
	return (st.Slowdown.Duration + st.MemtableFull.Duration + st.L0Full.Duration).Seconds()
}

type shaleBatch struct {
	db *shale.DB
	b  shale.Batch
}

func (b *shaleBatch) Put(k, v []byte) { b.b.Put(k, v) }

func (b *shaleBatch) Commit() error {
	err := b.db.Write(&b.b, shale.NoSync)
	b.b.Reset()
	return err
}
