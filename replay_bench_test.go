package shale_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/shale-db/shale"
)

// BenchmarkOpenReplay256MiB (SHALE_REPLAY_BENCH=1): Open of a database
// whose WAL holds 256 MiB of db_bench-like puts (16-byte keys, 100-byte
// values), none flushed, as the record-types issue asks to measure for a
// parallel replay. Each iteration copies nothing: the WAL is replayed by a
// read-only Open, which writes no table, then by a writable one.
func BenchmarkOpenReplay256MiB(b *testing.B) {
	if os.Getenv("SHALE_REPLAY_BENCH") == "" {
		b.Skip("set SHALE_REPLAY_BENCH=1: writes a 256 MiB WAL")
	}
	dir := b.TempDir()
	db, err := shale.Open(dir, &shale.Options{WriteBufferSize: 1 << 30})
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	val := make([]byte, 100)
	var batch shale.Batch
	for i := 0; db.Metrics().WALSize < 256<<20; i++ {
		for j := range val {
			val[j] = byte(rng.Uint32())
		}
		batch.Put(fmt.Appendf(nil, "%016d", rng.Uint64N(1<<40)), val)
		if batch.Len() == 100 {
			if err := db.Write(&batch, shale.NoSync); err != nil {
				b.Fatal(err)
			}
			batch.Reset()
		}
	}
	size := db.Metrics().WALSize
	if err := db.Close(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		ro, err := shale.Open(dir, &shale.Options{ReadOnly: true, WriteBufferSize: 1 << 30})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(time.Since(t0).Seconds(), "s/readonly-open")
		ro.Close()
	}
	b.ReportMetric(float64(size)/(1<<20), "MiB-wal")
}
