//go:build unix

package shale_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shale-db/shale"
)

// A FIFO where the database has a file (CURRENT, a log) makes Open fail at
// once, naming it, instead of waiting for a writer. Repair does not wait
// either: it fails naming the FIFO, or (CURRENT, which it rewrites)
// repairs, and the database then opens with its data.
func TestFIFOInPlaceOfAFile(t *testing.T) {
	for _, name := range []string{"CURRENT", "log"} {
		t.Run(name, func(t *testing.T) {
			db, dir := openDB(t, nil)
			mustPut(t, db, "k", "v")
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			if name == "log" {
				logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
				if len(logs) == 0 {
					t.Fatal("no log")
				}
				name = filepath.Base(logs[len(logs)-1])
			}
			p := filepath.Join(dir, name)
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Skipf("mkfifo: %v", err)
			}
			open := func() error {
				db, err := shale.Open(dir, nil)
				if err == nil {
					db.Close()
				}
				return err
			}
			repair := func() error { _, err := shale.Repair(dir, nil); return err }
			for _, c := range []struct {
				what string
				call func() error
			}{{"Open", open}, {"Repair", repair}} {
				what, call := c.what, c.call
				done := make(chan error, 1)
				go func() { done <- call() }()
				select {
				case err := <-done:
					if what == "Repair" && err == nil {
						db := reopen(t, dir, nil)
						wantGet(t, db, "k", []byte("v"))
						db.Close()
						continue
					}
					if err == nil || !strings.Contains(err.Error(), name) {
						t.Errorf("%s with %s a FIFO = %v; want an error naming it", what, name, err)
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("%s with %s a FIFO still waits after 10 s", what, name)
				}
			}
		})
	}
}
