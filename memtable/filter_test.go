package memtable

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/shale-db/shale/internal/batchrepr"
	"github.com/shale-db/shale/internal/ikey"
)

// TestSizedMemtableAgainstPlain runs the same adds through a memtable
// with a filter (whose filter fills up midway) and one without, and
// compares every Get, of held keys, deleted ones and keys never written.
func TestSizedMemtableAgainstPlain(t *testing.T) {
	m, want := NewSized(nil, 1), New()
	limit := int(m.filter.Load().Limit())
	rng := rand.New(rand.NewPCG(5, 6))
	var keys [][]byte
	for i := range 2 * limit {
		k := fmt.Appendf(nil, "key%07d", rng.IntN(4*limit))
		kind := ikey.KindSet
		if i%7 == 0 {
			kind = ikey.KindDelete
		}
		m.Add(uint64(i+1), kind, k, k)
		want.Add(uint64(i+1), kind, k, k)
		keys = append(keys, k, fmt.Appendf(nil, "absent%d", i))
		if i == limit/2 || i == 2*limit-1 {
			if full := m.filter.Load().Full(); full != (i > limit) {
				t.Fatalf("after %d adds the filter's full is %v", i+1, full)
			}
			sameMemtable(t, m, want, keys, ikey.MaxSeq)
			sameMemtable(t, m, want, keys, uint64(i/2))
		}
	}
}

// BenchmarkGetAbsent looks up keys a memtable of 60,000 entries does not
// hold (16-byte keys, as db_bench's), with and without the filter.
func BenchmarkGetAbsent(b *testing.B) {
	for _, sized := range []bool{false, true} {
		b.Run(fmt.Sprintf("filter=%v", sized), func(b *testing.B) {
			m := New()
			if sized {
				m = NewSized(nil, 8<<20)
			}
			rng := rand.New(rand.NewPCG(1, 2))
			for i := range 60_000 {
				m.Add(uint64(i+1), ikey.KindSet, fmt.Appendf(nil, "%016d", 2*rng.IntN(1_000_000)), benchValue)
			}
			keys := make([][]byte, 4096)
			for i := range keys {
				keys[i] = fmt.Appendf(nil, "%016d", 2*rng.IntN(1_000_000)+1)
			}
			cpu := startCPU(b)
			for i := 0; i < b.N; i++ {
				if _, found, _ := m.Get(keys[i&4095], ikey.MaxSeq); found {
					b.Fatal("found a key never added")
				}
			}
			cpu.stop(0)
		})
	}
}

// TestReadOften checks the count behind ReadOften: Gets, whether or not
// the memtable holds their key or keeps a filter, up to readOftenGets.
func TestReadOften(t *testing.T) {
	for _, m := range []*Memtable{New(), NewSized(nil, 1<<20)} {
		m.Add(1, ikey.KindSet, []byte("held"), nil)
		for i := range readOftenGets - 1 {
			k := []byte("held")
			if i%2 == 1 {
				k = []byte("absent")
			}
			m.Get(k, ikey.MaxSeq)
		}
		if m.ReadOften() {
			t.Fatalf("read often after %d Gets", readOftenGets-1)
		}
		m.Get([]byte("absent"), ikey.MaxSeq)
		m.Get([]byte("absent"), ikey.MaxSeq)
		if !m.ReadOften() || m.gets.Load() != readOftenGets {
			t.Fatalf("after %d Gets: ReadOften %v, count %d", readOftenGets+1, m.ReadOften(), m.gets.Load())
		}
		if m.Filtered() != (m.filter.Load() != nil) {
			t.Fatal("Filtered disagrees with the filter")
		}
	}
}

// TestLazyFilter fills a memtable made by NewLazy, then reads it often
// enough to start the build of its filter while a writer keeps adding
// keys, and checks that the filter, once it answers, holds every key
// written before, during and after the build (a Get finds each), still
// rules most absent keys out, and that a memtable made with no buffer size
// never builds one.
func TestLazyFilter(t *testing.T) {
	{
		m := NewLazy(nil, 0)
		m.Add(1, ikey.KindSet, []byte("k"), nil)
		for range 2 * readOftenGets {
			m.Get([]byte("absent"), ikey.MaxSeq)
		}
		if m.Filtered() || m.wfilter != nil {
			t.Fatal("a memtable made with no buffer size built a filter")
		}
	}

	m := NewLazy(nil, 4<<20)
	key := func(i int) []byte { return fmt.Appendf(nil, "key%08d", i) }
	// The writers' keys sort before every other: once the build's walk
	// has passed the start of the index, it meets none of them, and only
	// their writer can put them in the filter.
	wkey := func(i int) []byte { return fmt.Appendf(nil, "a%08d", i) }
	const before = 20 * buildFilterRun
	for i := range before {
		m.Add(uint64(i+1), ikey.KindSet, key(2*i), nil)
	}
	if m.Filtered() {
		t.Fatal("filtered before any Get")
	}
	// Between the build's runs, more keys are written, of which the walk
	// meets none; and a writer goes on adding beside the build, and
	// stops a while after the filter answers.
	var between [][]byte
	testHookFilterRun = func(hm *Memtable) {
		if hm != m {
			return
		}
		if hm.Filtered() {
			t.Error("the filter answers Gets before the walk is done")
		}
		for range 3 {
			k := fmt.Appendf(nil, "0%08d", len(between))
			hm.Add(uint64(1<<40+len(between)), ikey.KindSet, k, nil)
			between = append(between, k)
		}
	}
	defer func() { testHookFilterRun = nil }()
	// The writer applies batches of 1 to 600 entries (one at a time,
	// sorted and appended, in chunks), up to 100,000 keys: well inside
	// the filter's limit however long a slow run makes the build.
	written := make(chan int)
	stop := make(chan struct{})
	go func() {
		i := 0
		for n := 1; ; n = n%600 + 37 {
			select {
			case <-stop:
				written <- i
				return
			default:
			}
			if i+n > 100_000 {
				time.Sleep(100 * time.Microsecond)
				continue
			}
			repr := make([]byte, batchrepr.HeaderLen)
			for j := i; j < i+n; j++ {
				repr = batchrepr.AppendPut(repr, wkey(j), nil)
			}
			batchrepr.SetCount(repr, uint32(n))
			if err := m.Apply(repr, uint64(before+i+1)); err != nil {
				t.Error(err)
			}
			i += n
		}
	}()
	for range readOftenGets {
		if _, found, _ := m.Get(key(1), ikey.MaxSeq); found {
			t.Fatal("found a key never added")
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for !m.Filtered() {
		if time.Now().After(deadline) {
			t.Fatal("the filter was not built within 10 s")
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(5 * time.Millisecond)
	close(stop)
	n := <-written
	f := m.filter.Load()
	if f.Full() {
		t.Fatalf("the filter is full after %d keys (limit %d)", before+n, f.Limit())
	}
	if len(between) == 0 {
		t.Fatal("the build ran in one run")
	}
	for i, k := range between {
		if _, found, _ := m.Get(k, ikey.MaxSeq); !found {
			t.Fatalf("key %d of the %d written between the build's runs not found through the filter", i, len(between))
		}
	}
	for i := range n {
		if _, found, _ := m.Get(wkey(i), ikey.MaxSeq); !found {
			t.Fatalf("key %d of the %d written beside the build not found through the filter", i, n)
		}
	}
	absentPass := 0
	for i := range before {
		if _, found, _ := m.Get(key(2*i), ikey.MaxSeq); !found {
			t.Fatalf("key %d of the %d written before the build not found through the filter", i, before)
		}
		if f.MayContain(key(2*i + 1)) {
			absentPass++
		}
	}
	if absentPass > before/10 {
		t.Fatalf("the filter passes %d of %d absent keys", absentPass, before)
	}
	// The Ref the build took is given back (just after it publishes).
	for m.refs.Load() != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("%d references after the build, want 1", m.refs.Load())
		}
		time.Sleep(time.Millisecond)
	}
}

// TestLazyFilterOutlivesOwner drops the memtable's last other reference,
// and closes its pool, while the build walks: the build's own reference
// keeps the chunks it reads until it ends, and then gives them back.
func TestLazyFilterOutlivesOwner(t *testing.T) {
	c := NewChunks(1 << 20)
	m := NewLazy(c, 8<<20)
	for i := range 10 * buildFilterRun {
		k := fmt.Appendf(nil, "k%08d", i)
		m.Add(uint64(i+1), ikey.KindSet, k, k)
	}
	walking, resume := make(chan struct{}), make(chan struct{})
	var once sync.Once
	testHookFilterRun = func(hm *Memtable) {
		if hm == m {
			once.Do(func() { close(walking); <-resume })
		}
	}
	defer func() { testHookFilterRun = nil }()
	for range readOftenGets {
		m.Get([]byte("absent"), ikey.MaxSeq)
	}
	<-walking
	m.Unref()
	c.Close()
	if held, _ := c.Stats(); held == 0 {
		t.Fatal("the chunks went back while the build was walking them")
	}
	close(resume)
	deadline := time.Now().Add(10 * time.Second)
	for held, _ := c.Stats(); held != 0; held, _ = c.Stats() {
		if time.Now().After(deadline) {
			t.Fatalf("%d chunks still held 10 s after the build resumed", held)
		}
		time.Sleep(time.Millisecond)
	}
}
