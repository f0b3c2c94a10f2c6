package memtable_test

import (
	"fmt"

	"github.com/shale-db/shale/internal/batchrepr"
	"github.com/shale-db/shale/internal/ikey"
	"github.com/shale-db/shale/memtable"
)

func Example() {
	m := memtable.New()
	b := batchrepr.AppendPut(nil, []byte("apple"), []byte("red"))
	b = batchrepr.AppendPut(b, []byte("pear"), []byte("green"))
	if err := m.Apply(b, 10); err != nil { // apple#10, pear#11
		panic(err)
	}
	m.Add(12, ikey.KindDelete, []byte("apple"), nil)

	for _, seq := range []uint64{9, 11, 12} {
		v, found, deleted := m.Get([]byte("apple"), seq)
		fmt.Printf("apple at %d: %q found=%v deleted=%v\n", seq, v, found, deleted)
	}
	it := m.NewIter()
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		fmt.Printf("%s %q\n", ikey.String(it.Key()), it.Value())
	}
	// Output:
	// apple at 9: "" found=false deleted=false
	// apple at 11: "red" found=true deleted=false
	// apple at 12: "" found=false deleted=true
	// apple#12,DEL ""
	// apple#10,PUT "red"
	// pear#11,PUT "green"
}
