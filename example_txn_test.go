package shale_test

import (
	"errors"
	"fmt"
	"log"
	"os"
	"strconv"

	"github.com/shale-db/shale"
)

// Moving money between two accounts: Update reruns the function when a
// concurrent commit changed what it read, so no transfer is lost and no
// balance goes negative.
func ExampleDB_Update() {
	dir, err := os.MkdirTemp("", "shale-example-txn")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	db, err := shale.Open(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	db.Put([]byte("acct/alice"), []byte("100"), shale.Sync)

	transfer := func(from, to string, amount int) error {
		return db.Update(func(tx *shale.Transaction) error {
			balance := func(k string) (int, error) {
				v, err := tx.Get([]byte(k))
				if errors.Is(err, shale.ErrNotFound) {
					return 0, nil
				} else if err != nil {
					return 0, err
				}
				return strconv.Atoi(string(v))
			}
			a, err := balance(from)
			if err != nil {
				return err
			}
			if a < amount {
				return fmt.Errorf("%s has %d, not %d", from, a, amount)
			}
			b, err := balance(to)
			if err != nil {
				return err
			}
			tx.Put([]byte(from), strconv.AppendInt(nil, int64(a-amount), 10))
			return tx.Put([]byte(to), strconv.AppendInt(nil, int64(b+amount), 10))
		})
	}
	if err := transfer("acct/alice", "acct/bob", 30); err != nil {
		log.Fatal(err)
	}
	fmt.Println(transfer("acct/bob", "acct/carol", 50))

	err = db.View(func(tx *shale.Transaction) error {
		for e, err := range tx.All(shale.PrefixOptions([]byte("acct/"))) {
			if err != nil {
				return err
			}
			fmt.Printf("%s=%s\n", e.Key, e.Value)
		}
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// acct/bob has 30, not 50
	// acct/alice=70
	// acct/bob=30
}
