package kv

import (
	"bytes"
	"fmt"
	"testing"
)

// Every store keeps what it was given through Put, a batch built from a
// reused key buffer, Close and a reopen, and iterates it in key order.
func TestStoresAgree(t *testing.T) {
	for _, name := range Names {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			s := mustOpen(t, name, dir, Config{Sync: true})
			want := map[string]string{}
			put := func(k, v string, sync bool) {
				if err := s.Put([]byte(k), []byte(v), sync); err != nil {
					t.Fatal(err)
				}
				want[k] = v
			}
			put("k3", "three", false)
			put("k1", "one", false)
			put("k5", "five", true) // commits bbolt's pending puts first
			put("k7", "seven", false)
			b := s.NewBatch()
			kb := []byte("kx")
			for _, c := range []byte{'2', '4', '6'} {
				kb[1] = c // the batch must copy the key
				b.Put(kb, []byte{'v', c})
				want[string(kb)] = string([]byte{'v', c})
			}
			if err := b.Commit(); err != nil {
				t.Fatal(err)
			}
			check(t, s, want)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s = mustOpen(t, name, dir, Config{})
			defer s.Close()
			check(t, s, want)
		})
	}
}

func mustOpen(t *testing.T, name, dir string, c Config) Store {
	t.Helper()
	s, err := Open(name, dir, c)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func check(t *testing.T, s Store, want map[string]string) {
	t.Helper()
	for k, v := range want {
		n, ok, err := s.Get([]byte(k))
		if err != nil || !ok || n != len(v) {
			t.Fatalf("Get(%s) = %d, %v, %v; want %d bytes", k, n, ok, err, len(v))
		}
	}
	if _, ok, err := s.Get([]byte("k0")); ok || err != nil {
		t.Fatalf("Get(absent) = %v, %v", ok, err)
	}
	it, err := s.NewIter()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for ok := it.First(); ok; ok = it.Next() {
		got = append(got, fmt.Sprintf("%s=%s", it.Key(), it.Value()))
	}
	if g, w := fmt.Sprint(got), "[k1=one k2=v2 k3=three k4=v4 k5=five k6=v6 k7=seven]"; g != w {
		t.Fatalf("scan %s, want %s", g, w)
	}
	if !it.SeekGE([]byte("k35")) || !bytes.Equal(it.Key(), []byte("k4")) || !it.Next() ||
		!bytes.Equal(it.Key(), []byte("k5")) {
		t.Fatalf("SeekGE(k35) then Next did not give k4, k5")
	}
	if it.SeekGE([]byte("k8")) {
		t.Fatalf("SeekGE past the end found %s", it.Key())
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestOpenUnknown(t *testing.T) {
	if _, err := Open("rocksdb", t.TempDir(), Config{}); err == nil {
		t.Fatal("opened an unknown store")
	}
	if Known("rocksdb") || !Known("bbolt") {
		t.Fatal("Known is wrong")
	}
}

// shale's stalls, by kind, add up to its StallSeconds: a fill of 20 MB in
// random order, five write buffers, may or may not stall; either way every
// kind is reported and the kinds and the sum agree.
func TestShaleStallsByKind(t *testing.T) {
	s := mustOpen(t, "shale", t.TempDir(), Config{})
	defer s.Close()
	v := bytes.Repeat([]byte{'v'}, 1000)
	for i := 0; i < 20000; i++ {
		if err := s.Put([]byte(fmt.Sprintf("k%08d", i*7919%20000)), v, false); err != nil {
			t.Fatal(err)
		}
	}
	st := s.(Staller)
	kinds := st.Stalls()
	var sum float64
	for _, k := range []string{"slowdown", "memtable full", "L0 full"} {
		got, ok := kinds[k]
		if !ok {
			t.Fatalf("no %q in %v", k, kinds)
		}
		if got.Seconds < 0 || got.Count < 0 || (got.Count == 0) != (got.Seconds == 0) {
			t.Errorf("%s: %+v", k, got)
		}
		sum += got.Seconds
	}
	if total := st.StallSeconds(); total < sum*0.999 || total > sum*1.001+1e-9 {
		t.Errorf("StallSeconds %v, kinds add to %v (%v)", total, sum, kinds)
	}
}
