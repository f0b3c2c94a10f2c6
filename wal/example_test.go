package wal_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/shale-db/shale/wal"
)

func Example() {
	var log bytes.Buffer
	w := wal.NewWriter(&log)
	for _, rec := range []string{"first", "second", ""} {
		if err := w.WriteRecord([]byte(rec)); err != nil {
			panic(err)
		}
	}
	if err := w.Flush(); err != nil { // then sync the file
		panic(err)
	}

	r := wal.NewReader(&log)
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			panic(err)
		}
		fmt.Printf("%d: %q\n", r.LastRecordOffset(), rec)
	}
	// Output:
	// 0: "first"
	// 12: "second"
	// 25: ""
}

// A log cut short by a crash ends at its last whole record; the cut record
// is reported as a torn tail, not as damage.
func ExampleOnDrop() {
	var log bytes.Buffer
	w := wal.NewWriter(&log)
	w.WriteRecord([]byte("one"))
	w.WriteRecord([]byte("two"))
	w.Flush()
	torn := log.Bytes()[:log.Len()-2]

	r := wal.NewReader(bytes.NewReader(torn), wal.Named("000003.log"),
		wal.OnDrop(func(d wal.Drop) { fmt.Println(d) }))
	for {
		rec, err := r.Next()
		if err != nil {
			fmt.Println(err)
			break
		}
		fmt.Printf("%q\n", rec)
	}
	// Output:
	// "one"
	// wal: 000003.log: offset 10: torn tail: incomplete record, 8 bytes dropped
	// EOF
}

// In strict mode, damage ends reading with an error that matches
// ErrCorrupt and says where the damage is.
func ExampleStrict() {
	var log bytes.Buffer
	w := wal.NewWriter(&log)
	w.WriteRecord([]byte("one"))
	w.WriteRecord([]byte("two"))
	w.Flush()
	damaged := log.Bytes()
	damaged[12] ^= 0xff // the checksum of "two"

	r := wal.NewReader(bytes.NewReader(damaged), wal.Named("000003.log"), wal.Strict())
	for {
		rec, err := r.Next()
		if err != nil {
			fmt.Println(errors.Is(err, wal.ErrCorrupt), err)
			break
		}
		fmt.Printf("%q\n", rec)
	}
	// Output:
	// "one"
	// true wal: 000003.log: offset 10: checksum mismatch (10 bytes)
}

// Readers over adjacent byte ranges yield every record once.
func ExampleNewRangeReader() {
	var log bytes.Buffer
	w := wal.NewWriter(&log)
	for i := range 4 {
		w.WriteRecord(bytes.Repeat([]byte{'a' + byte(i)}, 20000))
	}
	w.Flush()

	ra := bytes.NewReader(log.Bytes())
	for _, rg := range [][2]int64{{0, 30000}, {30000, 60000}, {60000, 90000}} {
		r := wal.NewRangeReader(ra, rg[0], rg[1])
		for {
			rec, err := r.Next()
			if err != nil {
				break
			}
			fmt.Printf("[%d, %d): %c at %d\n", rg[0], rg[1], rec[0], r.LastRecordOffset())
		}
	}
	// Output:
	// [0, 30000): a at 0
	// [0, 30000): b at 20007
	// [30000, 60000): c at 40021
	// [60000, 90000): d at 60028
}

func ExampleScanner() {
	var log bytes.Buffer
	w := wal.NewWriter(&log)
	w.WriteRecord(make([]byte, 40000))
	w.Flush()

	s := wal.NewScanner(&log)
	for {
		f, err := s.Next()
		if err != nil {
			break
		}
		fmt.Println(f.Offset, f.Type, f.Length, f.Problem == "")
	}
	// Output:
	// 0 FIRST 32761 true
	// 32768 LAST 7239 true
}
