package fusetest_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/shale-db/shale"
)

// workload makes the writes of the tests: write i of goroutine g is a
// Put of one new key or a batch of 2 to 5 new keys, so that every write
// has keys of its own and its presence after a reopen says whether it
// survived, whole or not.
type workload struct {
	Seed uint64
	// SyncEvery: 1 makes every write Sync, 0 none, k one in k (drawn).
	SyncEvery int
}

// write is one write of a workload.
type write struct {
	g, i   int
	keys   []string
	values []string
	sync   bool
}

func (w workload) write(g, i int) write {
	r := rand.New(rand.NewPCG(w.Seed^uint64(g)<<40, uint64(i)))
	wr := write{g: g, i: i}
	switch {
	case w.SyncEvery == 1:
		wr.sync = true
	case w.SyncEvery > 1:
		wr.sync = r.IntN(w.SyncEvery) == 0
	}
	n := 1
	if r.IntN(3) == 0 {
		n = 2 + r.IntN(4) // a batch
	}
	for j := range n {
		size := 40 + r.IntN(600)
		if r.IntN(24) == 0 {
			// Over 8 KiB: on Linux, today's WAL writes such a fragment
			// with pwritev rather than copy it into its mapping.
			size = 9000 + r.IntN(12000)
		}
		prefix := fmt.Sprintf("%d.%d.%d:", g, i, j)
		v := strings.Repeat(prefix, size/len(prefix)+1)[:size]
		wr.keys = append(wr.keys, writeKey(g, i, j))
		wr.values = append(wr.values, v)
	}
	return wr
}

func writeKey(g, i, j int) string { return fmt.Sprintf("g%02d/%07d/%d", g, i, j) }

func (wr write) durability() shale.Durability {
	if wr.sync {
		return shale.Sync
	}
	return shale.NoSync
}

// apply writes wr: a Put when it has one key, else a Batch.
func (wr write) apply(db *shale.DB) error {
	if len(wr.keys) == 1 {
		return db.Put([]byte(wr.keys[0]), []byte(wr.values[0]), wr.durability())
	}
	var b shale.Batch
	for j := range wr.keys {
		b.Put([]byte(wr.keys[j]), []byte(wr.values[j]))
	}
	return db.Write(&b, wr.durability())
}

// presence says how much of a write a database holds.
type presence int

const (
	absent  presence = iota
	whole            // every key, with its value
	partial          // some keys and not others: a torn batch
	wrong            // a key with another value
)

func (p presence) String() string {
	return [...]string{"absent", "whole", "partial", "wrong value"}[p]
}

// presenceIn reads wr's keys with Get.
func (wr write) presenceIn(db *shale.DB) (presence, error) {
	found := 0
	for j, k := range wr.keys {
		v, err := db.Get([]byte(k))
		if errors.Is(err, shale.ErrNotFound) {
			continue
		}
		if err != nil {
			return absent, fmt.Errorf("get %s: %w", k, err)
		}
		if !bytes.Equal(v, []byte(wr.values[j])) {
			return wrong, nil
		}
		found++
	}
	return presenceOf(found, len(wr.keys)), nil
}

// presenceInMap is presenceIn for the content of a database read into m.
func (wr write) presenceInMap(m map[string]string) presence {
	found := 0
	for j, k := range wr.keys {
		v, ok := m[k]
		if !ok {
			continue
		}
		if v != wr.values[j] {
			return wrong
		}
		found++
	}
	return presenceOf(found, len(wr.keys))
}

func presenceOf(found, n int) presence {
	switch found {
	case 0:
		return absent
	case n:
		return whole
	}
	return partial
}

// readAll returns every key and value of db.
func readAll(db *shale.DB) (map[string]string, error) {
	m := map[string]string{}
	it := db.NewIterator(nil)
	for ok := it.First(); ok; ok = it.Next() {
		m[string(it.Key())] = string(it.Value())
	}
	if err := it.Err(); err != nil {
		it.Close()
		return nil, err
	}
	return m, it.Close()
}
