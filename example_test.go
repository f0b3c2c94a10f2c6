package shale_test

import (
	"errors"
	"fmt"
	"os"

	"github.com/shale-db/shale"
)

func Example() {
	dir, _ := os.MkdirTemp("", "shale-example")
	defer os.RemoveAll(dir)

	db, err := shale.Open(dir, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer db.Close()

	b := new(shale.Batch)
	b.Put([]byte("fruit/apple"), []byte("red"))
	b.Put([]byte("fruit/banana"), []byte("yellow"))
	b.Put([]byte("veg/kale"), []byte("green"))
	if err := db.Write(b, shale.Sync); err != nil {
		fmt.Println(err)
		return
	}
	if _, err := db.Get([]byte("fruit/cherry")); errors.Is(err, shale.ErrNotFound) {
		fmt.Println("no cherry")
	}
	for e, err := range db.All(shale.PrefixOptions([]byte("fruit/"))) {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s=%s\n", e.Key, e.Value)
	}
	// Output:
	// no cherry
	// fruit/apple=red
	// fruit/banana=yellow
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
