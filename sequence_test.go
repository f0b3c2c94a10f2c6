package shale_test

import (
	"sync"
	"testing"

	"github.com/shale-db/shale"
)

// TestSequence: Sequences on one key, used from several goroutines, never
// hand out a number twice; Release gives the unused lease back; a stored
// value that is not a counter is an error.
func TestSequence(t *testing.T) {
	db, _ := openDB(t, nil)
	if _, err := db.GetSequence([]byte("seq"), 0); err == nil {
		t.Fatal("bandwidth 0 accepted")
	}
	seen := make(map[uint64]bool)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := range 4 {
		seq, err := db.GetSequence([]byte("seq"), uint64(3+w))
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 200 {
					n, err := seq.Next()
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					if seen[n] {
						t.Errorf("%d handed out twice", n)
					}
					seen[n] = true
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	if len(seen) != 1600 {
		t.Fatalf("%d numbers", len(seen))
	}

	s, err := db.GetSequence([]byte("alone"), 100)
	if err != nil {
		t.Fatal(err)
	}
	for want := uint64(0); want < 5; want++ {
		if n, err := s.Next(); err != nil || n != want {
			t.Fatalf("Next = %d, %v; want %d", n, err, want)
		}
	}
	if err := s.Release(); err != nil {
		t.Fatal(err)
	}
	s2, err := db.GetSequence([]byte("alone"), 10)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := s2.Next(); n != 5 {
		t.Fatalf("after Release, a new sequence starts at %d; want 5", n)
	}
	if n, _ := s.Next(); n != 15 {
		t.Fatalf("the released sequence leases again from %d; want 15", n)
	}

	db.Put([]byte("bad"), []byte("xyz"), shale.NoSync)
	if _, err := db.GetSequence([]byte("bad"), 1); err == nil {
		t.Fatal("a 3-byte counter accepted")
	}
}
