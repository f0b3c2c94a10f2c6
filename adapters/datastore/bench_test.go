package datastore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	ds "github.com/ipfs/go-datastore"
	dsq "github.com/ipfs/go-datastore/query"
	leveldb "github.com/ipfs/go-ds-leveldb"
	pebbleds "github.com/ipfs/go-ds-pebble"
	"github.com/shale-db/shale/adapters/datastore"
)

// The benchmarks run one workload over three datastores, as sub-benchmarks
// (BenchmarkGet/shale, BenchmarkGet/leveldb, BenchmarkGet/pebble), each in
// a new directory with its store's default options. Durability differs,
// as the stores are shipped: go-ds-leveldb syncs every Put, Delete and
// batch; this package and go-ds-pebble sync none until Sync. BenchmarkPutSync
// puts and then calls Sync each time, which makes every store's writes
// durable one by one.
const (
	benchValueSize = 256  // bytes of every value
	benchPrefixes  = 1000 // prefixes of the loaded store
	benchPerPrefix = 100  // keys under each prefix
	benchBatchSize = 100  // puts in one batch of BenchmarkBatch
	benchLoadBatch = 1000 // puts in one batch of the load
	benchLoaded    = benchPrefixes * benchPerPrefix
	benchSeed      = 0x5eed0 // the same keys and order for every store
)

type benchStore struct {
	name string
	open func(dir string) (ds.Batching, error)
}

var benchStores = []benchStore{
	{"shale", func(dir string) (ds.Batching, error) { return datastore.New(dir, nil) }},
	{"leveldb", func(dir string) (ds.Batching, error) { return leveldb.NewDatastore(dir, nil) }},
	{"pebble", func(dir string) (ds.Batching, error) { return pebbleds.NewDatastore(dir) }},
}

// eachStore runs bench as one sub-benchmark per store, on a new store.
func eachStore(b *testing.B, bench func(b *testing.B, d ds.Batching)) {
	for _, s := range benchStores {
		b.Run(s.name, func(b *testing.B) {
			d, err := s.open(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			defer func() {
				if err := d.Close(); err != nil {
					b.Error(err)
				}
			}()
			bench(b, d)
		})
	}
}

// mix spreads i over 64 bits, so that consecutive puts land in random
// places of the key space.
func mix(i uint64) uint64 {
	i ^= i >> 33
	i *= 0xff51afd7ed558ccd
	i ^= i >> 33
	i *= 0xc4ceb9fe1a85ec53
	return i ^ i>>33
}

// loadedKey is the i-th key of the loaded store: benchPerPrefix keys
// under each of benchPrefixes prefixes.
func loadedKey(i int) ds.Key {
	return ds.NewKey(fmt.Sprintf("/p%04d/%016x", i/benchPerPrefix, mix(uint64(i))))
}

// load fills d with benchLoaded keys, in batches, in random order.
func load(b *testing.B, d ds.Batching) {
	ctx := context.Background()
	v := value(1, benchValueSize)
	order := rand.New(rand.NewPCG(benchSeed, 1)).Perm(benchLoaded)
	for start := 0; start < benchLoaded; start += benchLoadBatch {
		batch, err := d.Batch(ctx)
		if err != nil {
			b.Fatal(err)
		}
		for _, i := range order[start:min(start+benchLoadBatch, benchLoaded)] {
			if err := batch.Put(ctx, loadedKey(i), v); err != nil {
				b.Fatal(err)
			}
		}
		if err := batch.Commit(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPut(b *testing.B) {
	eachStore(b, func(b *testing.B, d ds.Batching) {
		ctx, v := context.Background(), value(2, benchValueSize)
		b.SetBytes(benchValueSize)
		var i uint64
		for b.Loop() {
			i++
			if err := d.Put(ctx, ds.NewKey(fmt.Sprintf("/put/%016x", mix(i))), v); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkPutSync(b *testing.B) {
	eachStore(b, func(b *testing.B, d ds.Batching) {
		ctx, v := context.Background(), value(3, benchValueSize)
		b.SetBytes(benchValueSize)
		var i uint64
		for b.Loop() {
			i++
			k := ds.NewKey(fmt.Sprintf("/put/%016x", mix(i)))
			if err := d.Put(ctx, k, v); err != nil {
				b.Fatal(err)
			}
			if err := d.Sync(ctx, k); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkGet(b *testing.B) {
	eachStore(b, func(b *testing.B, d ds.Batching) {
		load(b, d)
		ctx, rng := context.Background(), rand.New(rand.NewPCG(benchSeed, 2))
		for b.Loop() {
			if _, err := d.Get(ctx, loadedKey(rng.IntN(benchLoaded))); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkHas asks for a present key and an absent one in turn.
func BenchmarkHas(b *testing.B) {
	eachStore(b, func(b *testing.B, d ds.Batching) {
		load(b, d)
		ctx, rng := context.Background(), rand.New(rand.NewPCG(benchSeed, 3))
		var n int
		for b.Loop() {
			i := rng.IntN(benchLoaded)
			k, want := loadedKey(i), true
			if n++; n%2 == 0 {
				k, want = ds.NewKey(fmt.Sprintf("/p%04d/absent%d", i/benchPerPrefix, i)), false
			}
			if ok, err := d.Has(ctx, k); err != nil || ok != want {
				b.Fatalf("has %s = %v, %v", k, ok, err)
			}
		}
	})
}

// BenchmarkPrefixQuery reads the benchPerPrefix keys and values under one
// prefix of the loaded store.
func BenchmarkPrefixQuery(b *testing.B) {
	eachStore(b, func(b *testing.B, d ds.Batching) {
		load(b, d)
		ctx, rng := context.Background(), rand.New(rand.NewPCG(benchSeed, 4))
		b.SetBytes(benchPerPrefix * benchValueSize)
		for b.Loop() {
			res, err := d.Query(ctx, dsq.Query{Prefix: fmt.Sprintf("/p%04d", rng.IntN(benchPrefixes))})
			if err != nil {
				b.Fatal(err)
			}
			es, err := res.Rest()
			if err != nil || len(es) != benchPerPrefix {
				b.Fatalf("query: %d results, %v", len(es), err)
			}
		}
	})
}

// BenchmarkBatch commits batches of benchBatchSize puts.
func BenchmarkBatch(b *testing.B) {
	eachStore(b, func(b *testing.B, d ds.Batching) {
		ctx, v := context.Background(), value(4, benchValueSize)
		b.SetBytes(benchBatchSize * benchValueSize)
		var i uint64
		for b.Loop() {
			batch, err := d.Batch(ctx)
			if err != nil {
				b.Fatal(err)
			}
			for range benchBatchSize {
				i++
				if err := batch.Put(ctx, ds.NewKey(fmt.Sprintf("/batch/%016x", mix(i))), v); err != nil {
					b.Fatal(err)
				}
			}
			if err := batch.Commit(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
}
