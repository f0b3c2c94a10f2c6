package shale_test

import (
	"errors"
	"fmt"
	"log"
	"os"

	"github.com/shale-db/shale"
)

func Example() {
	dir, err := os.MkdirTemp("", "shale-example") // your database's directory
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	db, err := shale.Open(dir, nil) // nil: default Options
	if err != nil {
		log.Fatal(err)
	}

	if err := db.Put([]byte("k"), []byte("v"), shale.Sync); err != nil { // or shale.NoSync
		log.Fatal(err)
	}
	v, err := db.Get([]byte("k"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("k=%s\n", v)

	b := new(shale.Batch) // atomic: all of it or none of it
	b.Put([]byte("a/1"), []byte("one"))
	b.Put([]byte("a/2"), []byte("two"))
	b.Delete([]byte("k"))
	if err := db.Write(b, shale.NoSync); err != nil {
		log.Fatal(err)
	}
	_, err = db.Get([]byte("k"))
	switch {
	case errors.Is(err, shale.ErrNotFound):
		fmt.Println("k is deleted")
	case err != nil:
		log.Fatal(err)
	}

	for e, err := range db.All(shale.PrefixOptions([]byte("a/"))) {
		if err != nil { // the error is part of every step: it cannot be lost silently
			log.Fatal(err)
		}
		fmt.Printf("%s=%s\n", e.Key, e.Value)
	}

	if err := db.Close(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// k=v
	// k is deleted
	// a/1=one
	// a/2=two
}

func ExampleDB_NewSnapshot() {
	dir, _ := os.MkdirTemp("", "shale-example")
	defer os.RemoveAll(dir)
	db, _ := shale.Open(dir, nil)
	defer db.Close()

	db.Put([]byte("k"), []byte("before"), shale.NoSync)
	snap := db.NewSnapshot()
	defer snap.Close()
	db.Put([]byte("k"), []byte("after"), shale.NoSync)

	old, _ := snap.Get([]byte("k"))
	cur, _ := db.Get([]byte("k"))
	fmt.Printf("snapshot sees %s, db sees %s\n", old, cur)
	// Output: snapshot sees before, db sees after
}

func ExampleIterator() {
	dir, _ := os.MkdirTemp("", "shale-example")
	defer os.RemoveAll(dir)
	db, _ := shale.Open(dir, nil)
	defer db.Close()
	for _, k := range []string{"a", "b", "c", "d"} {
		db.Put([]byte(k), []byte("v"+k), shale.NoSync)
	}

	it := db.NewIterator(&shale.IterOptions{LowerBound: []byte("b"), UpperBound: []byte("d")})
	defer it.Close()
	for ok := it.Last(); ok; ok = it.Prev() {
		fmt.Printf("%s ", it.Key())
	}
	if err := it.Err(); err != nil {
		fmt.Println(err)
	}
	fmt.Println()
	// Output: c b
}
