package shale_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/shale-db/shale"
)

// A checkpoint is a consistent copy taken while the database stays open;
// it opens like any database.
func ExampleDB_Checkpoint() {
	base, err := os.MkdirTemp("", "shale-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(base)
	db, err := shale.Open(filepath.Join(base, "db"), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	if err := db.Put([]byte("k"), []byte("before"), shale.NoSync); err != nil {
		log.Fatal(err)
	}
	if err := db.Checkpoint(filepath.Join(base, "copy")); err != nil {
		log.Fatal(err)
	}
	if err := db.Put([]byte("k"), []byte("after"), shale.NoSync); err != nil {
		log.Fatal(err)
	}
	cp, err := shale.Open(filepath.Join(base, "copy"), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cp.Close()
	v, err := cp.Get([]byte("k"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("the copy holds k=%s\n", v)
	// Output: the copy holds k=before
}

// Repair rebuilds a database whose CURRENT file (or MANIFEST) is lost.
func ExampleRepair() {
	dir, err := os.MkdirTemp("", "shale-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	db, err := shale.Open(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	if err := db.Put([]byte("k"), []byte("v"), shale.Sync); err != nil {
		log.Fatal(err)
	}
	if err := db.Close(); err != nil {
		log.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "CURRENT")); err != nil {
		log.Fatal(err)
	}
	rep, err := shale.Repair(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("lost anything:", rep.Lost(), "keys:", rep.Keys)
	// Output: lost anything: false keys: 1
}
