package interop

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	"github.com/cockroachdb/pebble/v2/record"
	"github.com/shale-db/shale/wal"
	"github.com/syndtr/goleveldb/leveldb/journal"
)

// walBenchSizes are the record sizes of the benchmarks.
var walBenchSizes = []int{100, 1024, 32 * 1024}

// BenchmarkWALWrite writes one record per operation into an in-memory
// sink, through shale's wal.Writer, goleveldb's journal.Writer and Pebble's
// record.Writer. All three buffer a block and write it out when full.
func BenchmarkWALWrite(b *testing.B) {
	for _, size := range walBenchSizes {
		rec := bytes.Repeat([]byte{'x'}, size)
		b.Run(fmt.Sprintf("size=%d/impl=shale", size), func(b *testing.B) {
			w := wal.NewWriter(io.Discard)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				if err := w.WriteRecord(rec); err != nil {
					b.Fatal(err)
				}
			}
			w.Flush()
		})
		b.Run(fmt.Sprintf("size=%d/impl=goleveldb", size), func(b *testing.B) {
			w := journal.NewWriter(io.Discard)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				rw, err := w.Next()
				if err != nil {
					b.Fatal(err)
				}
				if _, err := rw.Write(rec); err != nil {
					b.Fatal(err)
				}
			}
			w.Close()
		})
		b.Run(fmt.Sprintf("size=%d/impl=pebble", size), func(b *testing.B) {
			w := record.NewWriter(io.Discard)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := w.WriteRecord(rec); err != nil {
					b.Fatal(err)
				}
			}
			w.Close()
		})
	}
}

// walBenchLog returns a log of about 4 MiB of records of the given size.
func walBenchLog(size int) ([]byte, int) {
	n := max(4<<20/size, 1)
	var buf bytes.Buffer
	w := wal.NewWriter(&buf)
	rec := bytes.Repeat([]byte{'x'}, size)
	for range n {
		w.WriteRecord(rec)
	}
	w.Flush()
	return buf.Bytes(), n
}

// BenchmarkWALRead reads one record per operation from an in-memory log
// (the same bytes for all readers), starting over at its end. goleveldb and
// Pebble hand out each record as an io.Reader, which is read into a reused
// buffer; shale is measured both ways: Next (returns the record) and
// NextReader (streams it the same way).
func BenchmarkWALRead(b *testing.B) {
	for _, size := range walBenchSizes {
		log, _ := walBenchLog(size)
		b.Run(fmt.Sprintf("size=%d/impl=shale", size), func(b *testing.B) {
			r := wal.NewReader(bytes.NewReader(log))
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				rec, err := r.Next()
				if err == io.EOF {
					r = wal.NewReader(bytes.NewReader(log))
					rec, err = r.Next()
				}
				if err != nil || len(rec) != size {
					b.Fatal(err, len(rec))
				}
			}
		})
		b.Run(fmt.Sprintf("size=%d/impl=shale-stream", size), func(b *testing.B) {
			benchReadStream(b, size, func() func() (io.Reader, error) {
				return wal.NewReader(bytes.NewReader(log)).NextReader
			})
		})
		b.Run(fmt.Sprintf("size=%d/impl=goleveldb", size), func(b *testing.B) {
			benchReadStream(b, size, func() func() (io.Reader, error) {
				return journal.NewReader(bytes.NewReader(log), nil, true, true).Next
			})
		})
		b.Run(fmt.Sprintf("size=%d/impl=pebble", size), func(b *testing.B) {
			benchReadStream(b, size, func() func() (io.Reader, error) {
				return record.NewReader(bytes.NewReader(log), 0).Next
			})
		})
	}
}

// benchReadStream reads one record per operation through next, a reader's
// Next method as open returns it, into a reused buffer.
func benchReadStream(b *testing.B, size int, open func() func() (io.Reader, error)) {
	next := open()
	var buf bytes.Buffer
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		rr, err := next()
		if err == io.EOF {
			next = open()
			rr, err = next()
		}
		if err != nil {
			b.Fatal(err)
		}
		buf.Reset()
		if _, err := buf.ReadFrom(rr); err != nil || buf.Len() != size {
			b.Fatal(err, buf.Len())
		}
	}
}
