package shale_test

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shale-db/shale"
)

// TestStressTinyCache races writers against readers of every kind (Get,
// GetAppend, Has, iterators both ways, snapshots, read-only transactions)
// over a database built to move blocks under them: a block cache that
// holds a few blocks a shard, memtables that flush every few hundred
// writes, tables that compact all the time and a table cache at its
// smallest bound, so that files are closed and reopened under iterators.
//
// Every value names its key and version and ends in a checksum. A reader
// that used a block after its release (shale's test binaries fill freed
// blocks with 0xdd), read a value under another key, saw a key's version
// go back, or a snapshot whose answers changed, fails the test; so does a
// final state, before and after a reopen, other than what the writers
// wrote. It runs for SHALE_STRESS_SECONDS (default 1.5) seconds.
func TestStressTinyCache(t *testing.T) {
	dur := 1500 * time.Millisecond
	if s := os.Getenv("SHALE_STRESS_SECONDS"); s != "" {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("SHALE_STRESS_SECONDS=%q: %v", s, err)
		}
		dur = time.Duration(f * float64(time.Second))
	}
	opts := &shale.Options{
		WriteBufferSize: 16 << 10,
		TargetFileSize:  8 << 10,
		BlockSize:       256,
		CacheSize:       64 << 10,
		MaxOpenFiles:    16,
	}
	db, dir := openDB(t, opts)

	const writers, keysPerWriter = 3, 400
	var (
		stop     atomic.Bool
		failed   atomic.Bool
		failOnce sync.Once
		version  atomic.Int64 // versions grow across every writer
		finals   [writers][keysPerWriter]int64
		wg       sync.WaitGroup
	)
	fail := func(format string, args ...any) {
		failOnce.Do(func() { t.Errorf(format, args...) })
		failed.Store(true)
		stop.Store(true)
	}
	for w := range writers {
		for i := range finals[w] {
			finals[w][i] = -1 // absent
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			var b shale.Batch
			for n := 0; !stop.Load(); n++ {
				i := rng.IntN(keysPerWriter)
				k := stressKey(w*keysPerWriter + i)
				var err error
				switch op := rng.IntN(100); {
				case op < 65:
					v := version.Add(1)
					err = db.Put(k, stressValue(k, v), shale.NoSync)
					finals[w][i] = v
				case op < 75:
					err = db.Delete(k, shale.NoSync)
					finals[w][i] = -1
				case op < 99:
					b.Reset()
					for range 1 + rng.IntN(8) {
						j := rng.IntN(keysPerWriter)
						kj := stressKey(w*keysPerWriter + j)
						if rng.IntN(5) == 0 {
							b.Delete(kj)
							finals[w][j] = -1
						} else {
							v := version.Add(1)
							b.Put(kj, stressValue(kj, v))
							finals[w][j] = v
						}
					}
					d := shale.NoSync
					if n%10 == 0 {
						d = shale.Sync
					}
					err = db.Write(&b, d)
				default:
					// A range deletion of up to 20 of this writer's keys.
					j := rng.IntN(keysPerWriter - 20)
					err = db.DeleteRange(stressKey(w*keysPerWriter+j), stressKey(w*keysPerWriter+j+20), shale.NoSync)
					for d := j; d < j+20; d++ {
						finals[w][d] = -1
					}
				}
				if err != nil {
					fail("writer %d: %v", w, err)
					return
				}
			}
		}()
	}
	total := writers * keysPerWriter
	randKey := func(rng *rand.Rand) []byte { return stressKey(rng.IntN(total)) }

	// Point reads: each reader's versions of a key never go back.
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(100+r), 2))
			seen := make(map[string]int64)
			var buf []byte
			for n := 0; !stop.Load(); n++ {
				k := randKey(rng)
				var v []byte
				var err error
				switch n % 3 {
				case 0:
					v, err = db.Get(k)
				case 1:
					buf, err = db.GetAppend(buf[:0], k)
					v = buf
				default:
					var ok bool
					if ok, err = db.Has(k); err == nil && !ok {
						err = shale.ErrNotFound
					}
					if err == nil {
						continue // Has says nothing of the value
					}
				}
				if errors.Is(err, shale.ErrNotFound) {
					continue
				}
				if err != nil {
					fail("Get(%s): %v", k, err)
					return
				}
				ver, perr := checkStressValue(k, v)
				if perr != nil {
					fail("Get: %v", perr)
					return
				}
				if ver < seen[string(k)] {
					fail("Get(%s) went back from version %d to %d", k, seen[string(k)], ver)
					return
				}
				seen[string(k)] = ver
			}
		}()
	}

	// Iterators, forward and backward, with bounds and seeks.
	wg.Add(1)
	go func() {
		defer wg.Done()
		rng := rand.New(rand.NewPCG(200, 3))
		for n := 0; !stop.Load(); n++ {
			var o *shale.IterOptions
			lo, hi := rng.IntN(total), rng.IntN(total)
			if n%2 == 0 {
				o = &shale.IterOptions{LowerBound: stressKey(min(lo, hi)), UpperBound: stressKey(max(lo, hi) + 1)}
			}
			it := db.NewIterator(o)
			if err := walkStress(it, o, rng, n); err != nil {
				it.Close()
				fail("iterator: %v", err)
				return
			}
			if err := it.Close(); err != nil {
				fail("iterator Close: %v", err)
				return
			}
		}
	}()

	// Snapshots and read-only transactions: the same answers twice, with
	// writes, flushes and compactions in between.
	wg.Add(1)
	go func() {
		defer wg.Done()
		rng := rand.New(rand.NewPCG(300, 4))
		for n := 0; !stop.Load(); n++ {
			keys := make([][]byte, 16)
			for i := range keys {
				keys[i] = randKey(rng)
			}
			type getter interface {
				Get([]byte) ([]byte, error)
				NewIterator(*shale.IterOptions) *shale.Iterator
			}
			read := func(g getter) ([]string, error) {
				out := make([]string, len(keys))
				for i, k := range keys {
					v, err := g.Get(k)
					switch {
					case errors.Is(err, shale.ErrNotFound):
						out[i] = "<absent>"
					case err != nil:
						return nil, err
					default:
						if _, err := checkStressValue(k, v); err != nil {
							return nil, err
						}
						out[i] = string(v)
					}
				}
				return out, nil
			}
			check := func(what string, g getter) {
				first, err := read(g)
				if err != nil {
					fail("%s: %v", what, err)
					return
				}
				time.Sleep(time.Duration(rng.IntN(500)) * time.Microsecond)
				// The same keys again through an iterator each.
				for i, k := range keys {
					it := g.NewIterator(&shale.IterOptions{LowerBound: k, UpperBound: append(bytes.Clone(k), 0)})
					got := "<absent>"
					if it.First() {
						got = string(it.Value())
					}
					err := it.Close()
					if err != nil {
						fail("%s: iterator: %v", what, err)
						return
					}
					if got != first[i] {
						fail("%s: %s read %.40q, then %.40q through an iterator", what, k, first[i], got)
						return
					}
				}
				second, err := read(g)
				if err != nil {
					fail("%s: %v", what, err)
					return
				}
				for i := range keys {
					if first[i] != second[i] {
						fail("%s: %s read %.40q, then %.40q", what, keys[i], first[i], second[i])
						return
					}
				}
			}
			if n%2 == 0 {
				s := db.NewSnapshot()
				check("snapshot", s)
				s.Close()
			} else {
				err := db.View(func(tx *shale.Transaction) error {
					check("transaction", tx)
					return nil
				})
				if err != nil {
					fail("View: %v", err)
				}
			}
		}
	}()

	time.Sleep(dur)
	stop.Store(true)
	wg.Wait()
	if failed.Load() {
		return
	}
	verify := func(when string, db *shale.DB) {
		t.Helper()
		for w := range writers {
			for i, v := range finals[w] {
				k := stressKey(w*keysPerWriter + i)
				got, err := db.Get(k)
				if v < 0 {
					if !errors.Is(err, shale.ErrNotFound) {
						t.Fatalf("%s: Get(%s) = %.40q, %v; want absent", when, k, got, err)
					}
					continue
				}
				if err != nil || !bytes.Equal(got, stressValue(k, v)) {
					t.Fatalf("%s: Get(%s) = %.40q, %v; want version %d", when, k, got, err, v)
				}
			}
		}
	}
	verify("after the race", db)
	m := db.Metrics()
	t.Logf("%d writes; block cache %d hits, %d misses; %d flushes, %d compactions",
		version.Load(), m.BlockCache.Hits, m.BlockCache.Misses, m.Flushes, m.Compactions.Default)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	verify("after a reopen", reopen(t, dir, opts))
}

// walkStress moves it one of four ways and checks what it passes over:
// keys in order and within o's bounds, each value its key's.
func walkStress(it *shale.Iterator, o *shale.IterOptions, rng *rand.Rand, n int) error {
	var lo, hi []byte
	if o != nil {
		lo, hi = o.LowerBound, o.UpperBound
	}
	forward := n%4 < 2
	var ok bool
	switch n % 4 {
	case 0:
		ok = it.First()
	case 1:
		ok = it.SeekGE(stressKey(rng.IntN(1200)))
	case 2:
		ok = it.Last()
	default:
		ok = it.SeekLT(stressKey(rng.IntN(1200)))
	}
	var prev []byte
	for steps := 0; ok && steps < 300; steps++ {
		k := it.Key()
		if (lo != nil && bytes.Compare(k, lo) < 0) || (hi != nil && bytes.Compare(k, hi) >= 0) {
			return fmt.Errorf("key %s outside [%s, %s)", k, lo, hi)
		}
		if prev != nil && (bytes.Compare(prev, k) >= 0) == forward {
			return fmt.Errorf("key %s after %s (forward %v)", k, prev, forward)
		}
		if _, err := checkStressValue(k, it.Value()); err != nil {
			return err
		}
		prev = append(prev[:0], k...)
		if forward {
			ok = it.Next()
		} else {
			ok = it.Prev()
		}
	}
	return it.Err()
}

func stressKey(i int) []byte { return fmt.Appendf(nil, "k%05d", i) }

// stressValue is key/version/padding/ then the checksum of all that, in
// hex. The padding's length varies with the version, up to a few blocks.
func stressValue(key []byte, version int64) []byte {
	v := fmt.Appendf(nil, "%s/%d/%s/", key, version, strings.Repeat("p", int(version*37%700)))
	return fmt.Appendf(v, "%08x", crc32.ChecksumIEEE(v))
}

// checkStressValue returns the version v holds, or an error if v is not
// one of key's values.
func checkStressValue(key, v []byte) (int64, error) {
	if len(v) < 8 {
		return 0, fmt.Errorf("%s: value %q too short", key, v)
	}
	body, sum := v[:len(v)-8], v[len(v)-8:]
	if want := fmt.Appendf(nil, "%08x", crc32.ChecksumIEEE(body)); !bytes.Equal(sum, want) {
		return 0, fmt.Errorf("%s: value %.60q fails its checksum", key, v)
	}
	parts := bytes.SplitN(body, []byte("/"), 3)
	if len(parts) != 3 || !bytes.Equal(parts[0], key) {
		return 0, fmt.Errorf("%s: value %.60q is another key's", key, v)
	}
	ver, err := strconv.ParseInt(string(parts[1]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: value %.60q: %v", key, v, err)
	}
	return ver, nil
}
