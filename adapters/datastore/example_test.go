package datastore_test

import (
	"context"
	"fmt"
	"log"
	"os"

	ds "github.com/ipfs/go-datastore"
	dsq "github.com/ipfs/go-datastore/query"
	"github.com/shale-db/shale/adapters/datastore"
)

func Example() {
	dir, err := os.MkdirTemp("", "shale-datastore-example") // a go-ds-leveldb directory works too
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	d, err := datastore.New(dir, nil) // nil: shale's default Options
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	ctx := context.Background()

	for _, k := range []string{"/pins/a", "/pins/b", "/pinsx", "/blocks/c"} {
		if err := d.Put(ctx, ds.NewKey(k), []byte("v")); err != nil {
			log.Fatal(err)
		}
	}
	if err := d.Sync(ctx, ds.NewKey("/pins")); err != nil { // durable against power loss
		log.Fatal(err)
	}

	res, err := d.Query(ctx, dsq.Query{Prefix: "/pins", KeysOnly: true}) // "/pins/..." only
	if err != nil {
		log.Fatal(err)
	}
	for r := range res.Next() {
		if r.Error != nil {
			log.Fatal(r.Error)
		}
		fmt.Println(r.Key)
	}
	// Output:
	// /pins/a
	// /pins/b
}

func ExampleDatastore_NewTransaction() {
	dir, err := os.MkdirTemp("", "shale-datastore-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	d, err := datastore.New(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	ctx := context.Background()

	tx, err := d.NewTransaction(ctx, false)
	if err != nil {
		log.Fatal(err)
	}
	defer tx.Discard(ctx) // a no-op after Commit
	if _, err := tx.Get(ctx, ds.NewKey("/owner")); err == ds.ErrNotFound {
		if err := tx.Put(ctx, ds.NewKey("/owner"), []byte("me")); err != nil {
			log.Fatal(err)
		}
	}
	// Commit fails with an error matching shale.ErrConflict, writing
	// nothing, if another commit wrote /owner since tx began.
	if err := tx.Commit(ctx); err != nil {
		log.Fatal(err)
	}
	v, err := d.Get(ctx, ds.NewKey("/owner"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s\n", v)
	// Output: me
}
