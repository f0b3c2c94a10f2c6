package shale_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"testing"

	"github.com/shale-db/shale"
)

// GetAppend agrees with Get on every key, wherever its newest version lives
// (memtable, level 0, deeper levels, under a point or a range deletion),
// keeps what dst held, and leaves dst as it was on ErrNotFound.
func TestGetAppendAgreesWithGet(t *testing.T) {
	db, _ := openDB(t, nil)
	rng := rand.New(rand.NewSource(1))
	key := func(i int) []byte { return []byte(fmt.Sprintf("k%05d", i)) }
	const n = 3000
	for round := 0; round < 4; round++ {
		for i := 0; i < n; i++ {
			k := key(rng.Intn(n))
			var err error
			switch rng.Intn(10) {
			case 0:
				err = db.Delete(k, shale.NoSync)
			case 1:
				err = db.Put(k, nil, shale.NoSync) // an empty value is a value
			default:
				err = db.Put(k, bytes.Repeat([]byte{byte('a' + round)}, rng.Intn(300)), shale.NoSync)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if round == 2 {
			if err := db.DeleteRange(key(100), key(200), shale.NoSync); err != nil {
				t.Fatal(err)
			}
		}
		if round < 3 {
			if err := db.Flush(); err != nil { // later rounds shadow tables
				t.Fatal(err)
			}
		}
		if round == 1 {
			if err := db.Compact(nil, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	snap := db.NewSnapshot()
	defer snap.Close()
	tx := db.NewTransaction()
	defer tx.Discard()
	prefix := []byte("prefix:")
	for i := 0; i < n+10; i++ {
		k := key(i)
		want, wantErr := db.Get(k)
		for name, has := range map[string]func(key []byte) (bool, error){
			"DB": db.Has, "Snapshot": snap.Has, "Transaction": tx.Has,
		} {
			if ok, err := has(k); err != nil || ok != (wantErr == nil) {
				t.Fatalf("%s.Has(%s) = %v, %v; Get's error: %v", name, k, ok, err, wantErr)
			}
		}
		for name, get := range map[string]func(dst, key []byte) ([]byte, error){
			"DB": db.GetAppend, "Snapshot": snap.GetAppend, "Transaction": tx.GetAppend,
		} {
			for _, dst := range [][]byte{nil, append([]byte(nil), prefix...), append(make([]byte, 0, 512), prefix...)} {
				before := len(dst)
				got, err := get(dst, k)
				if !errors.Is(err, wantErr) && err != wantErr {
					t.Fatalf("%s.GetAppend(%s): %v, Get: %v", name, k, err, wantErr)
				}
				if err != nil {
					if len(got) != before || (before > 0 && !bytes.Equal(got, prefix)) {
						t.Fatalf("%s.GetAppend(%s) failed with %v and returned %q, not dst", name, k, err, got)
					}
					continue
				}
				if !bytes.Equal(got[:before], dst[:before]) || !bytes.Equal(got[before:], want) {
					t.Fatalf("%s.GetAppend(%s) = %q, want %q then %q", name, k, got, dst[:before], want)
				}
				if before == 0 && got == nil {
					t.Fatalf("%s.GetAppend(nil, %s) returned a nil value", name, k)
				}
			}
		}
	}
}

// With room in dst, GetAppend allocates nothing for the value: from the
// memtable nothing at all, from a table whose blocks are cached one
// allocation fewer than Get.
func TestGetAppendAllocatesNoValue(t *testing.T) {
	if raceDetector {
		t.Skip("the race detector allocates")
	}
	db, _ := openDB(t, nil)
	if err := db.Put([]byte("table"), bytes.Repeat([]byte("t"), 100), shale.NoSync); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Put([]byte("mem"), bytes.Repeat([]byte("m"), 100), shale.NoSync); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 0, 256)
	for _, k := range [][]byte{[]byte("mem"), []byte("table")} {
		if v, err := db.GetAppend(buf[:0], k); err != nil || len(v) != 100 {
			t.Fatalf("GetAppend(%s) = %d bytes, %v", k, len(v), err)
		}
		appendAllocs := testing.AllocsPerRun(200, func() {
			if _, err := db.GetAppend(buf[:0], k); err != nil {
				t.Fatal(err)
			}
		})
		getAllocs := testing.AllocsPerRun(200, func() {
			if _, err := db.Get(k); err != nil {
				t.Fatal(err)
			}
		})
		hasAllocs := testing.AllocsPerRun(200, func() {
			if ok, err := db.Has(k); !ok || err != nil {
				t.Fatal(ok, err)
			}
		})
		if appendAllocs != getAllocs-1 || (string(k) == "mem" && appendAllocs != 0) || hasAllocs != appendAllocs {
			t.Errorf("%s: GetAppend %.1f allocations, Has %.1f, Get %.1f", k, appendAllocs, hasAllocs, getAllocs)
		}
	}
}

// A transaction's GetAppend and Has are reads: a write committed after
// them fails the transaction's commit.
func TestTxnGetAppendIsARead(t *testing.T) {
	for _, read := range []string{"GetAppend", "Has"} {
		t.Run(read, func(t *testing.T) { testTxnReadConflicts(t, read) })
	}
}

func testTxnReadConflicts(t *testing.T, read string) {
	db, _ := openDB(t, nil)
	if err := db.Put([]byte("k"), []byte("v0"), shale.NoSync); err != nil {
		t.Fatal(err)
	}
	tx := db.NewTransaction()
	defer tx.Discard()
	if read == "Has" {
		if ok, err := tx.Has([]byte("k")); !ok || err != nil {
			t.Fatalf("Has = %v, %v", ok, err)
		}
	} else if v, err := tx.GetAppend(nil, []byte("k")); err != nil || string(v) != "v0" {
		t.Fatalf("GetAppend = %q, %v", v, err)
	}
	if err := db.Put([]byte("k"), []byte("v1"), shale.NoSync); err != nil {
		t.Fatal(err)
	}
	if err := tx.Put([]byte("other"), []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(shale.NoSync); !errors.Is(err, shale.ErrConflict) {
		t.Fatalf("Commit after a write to the key read with GetAppend: %v, want ErrConflict", err)
	}
}

func TestGetAppendAfterClose(t *testing.T) {
	db, _ := openDB(t, nil)
	db.Close()
	dst := []byte("keep")
	if got, err := db.GetAppend(dst, []byte("k")); !errors.Is(err, shale.ErrClosed) || string(got) != "keep" {
		t.Fatalf("GetAppend after Close = %q, %v; want dst and ErrClosed", got, err)
	}
	if ok, err := db.Has([]byte("k")); ok || !errors.Is(err, shale.ErrClosed) {
		t.Fatalf("Has after Close = %v, %v; want ErrClosed", ok, err)
	}
}
