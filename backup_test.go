package shale_test

import (
	"archive/tar"
	"bytes"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/shale-db/shale"
)

// untar unpacks a Backup stream into dir, as the README's restore does.
func untar(t *testing.T, r io.Reader, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag != tar.TypeReg || filepath.Base(h.Name) != h.Name {
			t.Fatalf("unexpected tar entry %q (type %c)", h.Name, h.Typeflag)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, h.Name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestBackupUnderLoad(t *testing.T) {
	dir := t.TempDir()
	opts := &shale.Options{WriteBufferSize: 16 << 10, TargetFileSize: 8 << 10, BlockSize: 1 << 10}
	db, err := shale.Open(filepath.Join(dir, "src"), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	w := newCkWriter("a", 4000, rand.New(rand.NewPCG(3, 4)))
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); w.run(t, db, &stop) }()
	for w.done.Load() < 1500 && !t.Failed() {
		runtime.Gosched()
	}
	lo := int(w.done.Load())
	var buf bytes.Buffer
	if err := db.Backup(&buf); err != nil {
		t.Fatal(err)
	}
	hi := int(w.done.Load()) + 1
	stop.Store(true)
	wg.Wait()
	restored := filepath.Join(dir, "restored")
	untar(t, &buf, restored)
	verifyCheckpoint(t, 0, restored, []*ckWriter{w}, []int{lo}, []int{hi})
}

func TestBackupOfReadOnlyDB(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	db, err := shale.Open(src, &shale.Options{WriteBufferSize: 8 << 10})
	if err != nil {
		t.Fatal(err)
	}
	w := newCkWriter("a", 800, rand.New(rand.NewPCG(5, 6)))
	var stop atomic.Bool
	w.run(t, db, &stop)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	ro, err := shale.Open(src, &shale.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	var buf bytes.Buffer
	if err := ro.Backup(&buf); err != nil {
		t.Fatal(err)
	}
	untar(t, &buf, filepath.Join(dir, "r"))
	verifyCheckpoint(t, 0, filepath.Join(dir, "r"), []*ckWriter{w}, []int{800}, []int{800})
	if err := ro.Checkpoint(filepath.Join(dir, "c")); err != nil {
		t.Fatal(err)
	}
	verifyCheckpoint(t, 1, filepath.Join(dir, "c"), []*ckWriter{w}, []int{800}, []int{800})
}
