package sstable_test

import (
	"bytes"
	"fmt"

	"github.com/shale-db/shale/internal/ikey"
	"github.com/shale-db/shale/sstable"
)

func Example() {
	var buf bytes.Buffer
	w := sstable.NewWriter(&buf, sstable.WriterOptions{})
	for _, k := range []string{"apple#7,PUT", "apple#3,DEL", "banana#5,PUT"} {
		if err := w.Add(ikey.ParseString(k), []byte("value of "+k)); err != nil {
			panic(err)
		}
	}
	if err := w.Close(); err != nil {
		panic(err)
	}
	m := w.Meta()
	fmt.Println(m.Entries, ikey.String(m.Smallest), ikey.String(m.Largest))

	r, err := sstable.Open(bytes.NewReader(buf.Bytes()), int64(buf.Len()), sstable.ReaderOptions{FileName: "000001.ldb"})
	if err != nil {
		panic(err)
	}
	// The newest version of "apple" visible at sequence number 5 is the
	// deletion at 3.
	_, kind, found, _ := r.Get([]byte("apple"), 5, nil)
	fmt.Println(found, kind)
	v, kind, found, _ := r.Get([]byte("apple"), 100, nil)
	fmt.Println(found, kind, string(v))

	it := r.NewIter()
	for ok := it.Last(); ok; ok = it.Prev() {
		fmt.Println(ikey.String(it.Key()))
	}
	if err := it.Close(); err != nil {
		panic(err)
	}
	// Output:
	// 3 apple#7,PUT banana#5,PUT
	// true DEL
	// true PUT value of apple#7,PUT
	// banana#5,PUT
	// apple#3,DEL
	// apple#7,PUT
}
