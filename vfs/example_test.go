package vfs_test

import (
	"fmt"
	"log"
	"sync/atomic"

	"github.com/shale-db/shale"
	"github.com/shale-db/shale/vfs"
)

// countingFS wraps an FS and counts the bytes written to its files: the
// same shape serves encryption at rest (transform in Write, back in Read
// and ReadAt) or fault injection.
type countingFS struct {
	vfs.FS
	written *atomic.Int64
}

func (c countingFS) Create(name string) (vfs.File, error) {
	f, err := c.FS.Create(name)
	if err != nil {
		return nil, err
	}
	return countingFile{f, c.written}, nil
}

type countingFile struct {
	vfs.File
	written *atomic.Int64
}

func (f countingFile) Write(p []byte) (int, error) {
	n, err := f.File.Write(p)
	f.written.Add(int64(n))
	return n, err
}

// A database in memory, through a wrapper that counts the bytes it writes.
func Example() {
	var written atomic.Int64
	fs := countingFS{FS: vfs.NewMem(), written: &written}
	db, err := shale.Open("/db", &shale.Options{FS: fs})
	if err != nil {
		log.Fatal(err)
	}
	if err := db.Put([]byte("k"), []byte("v"), shale.Sync); err != nil {
		log.Fatal(err)
	}
	if err := db.Close(); err != nil {
		log.Fatal(err)
	}
	db, err = shale.Open("/db", &shale.Options{FS: fs})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	v, err := db.Get([]byte("k"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("k=%s, files written: %v\n", v, written.Load() > 0)
	// Output:
	// k=v, files written: true
}
