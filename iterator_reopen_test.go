package shale_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/shale-db/shale"
)

// TestIteratorAcrossCloseAndReopen: an iterator pins a version whose
// tables a compaction then replaced; the DB closes and is opened again in
// the same directory, which deletes the replaced tables. The iterator,
// used on, must return its keys or stop with ErrClosed (as
// TestReviewIteratorAfterClose allows), not report corruption or a bare
// I/O error. With 4 KiB blocks it next opens a deleted table (tablecache
// open); with 256-byte blocks it first reads on in a table whose file the
// cache closed under it (MaxOpenFiles) and reopens for each read.
func TestIteratorAcrossCloseAndReopen(t *testing.T) {
	for _, bs := range []int{4096, 256} {
		t.Run(fmt.Sprint("block", bs), func(t *testing.T) {
			opts := &shale.Options{WriteBufferSize: 4 << 10, TargetFileSize: 2 << 10, MaxOpenFiles: 16, BlockSize: bs}
			db, dir := openDB(t, opts)
			const n = 3000
			for i := range n {
				mustPut(t, db, fmt.Sprintf("k%04d", i), fmt.Sprintf("v%04d-%040d", i, i))
			}
			if err := db.Compact(nil, nil); err != nil {
				t.Fatal(err)
			}
			it := db.NewIterator(nil)
			defer it.Close()
			if !it.First() {
				t.Fatal(it.Err())
			}
			for i := range n { // replace every table the iterator pins
				mustPut(t, db, fmt.Sprintf("k%04d", i), "new")
			}
			if err := db.Compact(nil, nil); err != nil {
				t.Fatal(err)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			reopen(t, dir, opts) // deletes the tables only the iterator pins
			got := 1
			for it.Next() {
				if want := fmt.Sprintf("k%04d", got); string(it.Key()) != want {
					t.Fatalf("key %d = %q, want %q", got, it.Key(), want)
				}
				got++
			}
			err := it.Close()
			switch {
			case err != nil && !errors.Is(err, shale.ErrClosed):
				t.Errorf("iterator used across Close and a new Open: %d keys, then %q (corruption: %v); want all %d keys or ErrClosed",
					got, err, errors.Is(err, shale.ErrCorruption), n)
			case err != nil && errors.Is(err, shale.ErrCorruption):
				t.Errorf("iterator: %q matches both ErrClosed and ErrCorruption", err)
			case err == nil && got != n:
				t.Errorf("iterator: %d keys and no error", got)
			}
		})
	}
}
