//go:build linux

package shale_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/shale-db/shale"
)

// TestDiskFullOnTmpfs fills a real, small file system: a tmpfs of 16 MiB
// that the test mounts (it must run as root) when SHALE_TMPFS_DISKFULL is
// set. Writes go on until the disk is full; the error must reach the
// caller as ENOSPC, no later write may be acknowledged, and once space is
// freed a reopen must hold every acknowledged write and take new ones.
// CI sweeps injected ENOSPC on every path instead (fault_sweep tests).
func TestDiskFullOnTmpfs(t *testing.T) {
	if os.Getenv("SHALE_TMPFS_DISKFULL") == "" {
		t.Skip("set SHALE_TMPFS_DISKFULL=1 (as root) to mount a tmpfs and fill it")
	}
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs: %v: %s", err, out)
	}
	defer exec.Command("umount", mnt).Run()
	filler := filepath.Join(mnt, "filler")
	if err := os.WriteFile(filler, make([]byte, 4<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(mnt, "db")
	opts := &shale.Options{WriteBufferSize: 512 << 10, TargetFileSize: 512 << 10}
	db, err := shale.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(16, 16))
	value := func(i int) []byte {
		v := make([]byte, 1000)
		rr := rand.New(rand.NewPCG(uint64(i), 7))
		for j := range v {
			v[j] = byte(rr.Uint32())
		}
		return v
	}
	acked := map[int]bool{}
	var failure error
	for i := 0; failure == nil && i < 1_000_000; i++ {
		k := r.IntN(20000)
		d := shale.NoSync
		if i%50 == 0 {
			d = shale.Sync
		}
		if err := db.Put([]byte(fmt.Sprintf("key%06d", k)), value(k), d); err != nil {
			failure = err
			break
		}
		acked[k] = true
	}
	if !errors.Is(failure, syscall.ENOSPC) || !errors.Is(failure, shale.ErrDiskFull) {
		t.Fatalf("filling a 16 MiB disk: first failure %v; want ENOSPC", failure)
	}
	t.Logf("disk full after %d distinct keys acknowledged: %v", len(acked), failure)
	if err := db.Put([]byte("after"), []byte("x"), shale.NoSync); err == nil {
		t.Fatal("a write was acknowledged after the disk filled")
	}
	if err := db.Close(); err == nil {
		t.Fatal("Close after the disk filled returned nil")
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	db, err = shale.Open(dir, opts)
	if err != nil {
		t.Fatalf("reopen once space was freed: %v", err)
	}
	defer db.Close()
	for k := range acked {
		v, err := db.Get([]byte(fmt.Sprintf("key%06d", k)))
		if err != nil || !bytes.Equal(v, value(k)) {
			t.Fatalf("after freeing space and reopening: key%06d = %.8q, %v; want its acknowledged value", k, v, err)
		}
	}
	if err := db.Put([]byte("after"), []byte("x"), shale.Sync); err != nil {
		t.Fatalf("a write after freeing space: %v", err)
	}
	t.Logf("every one of %d acknowledged keys read back after freeing space", len(acked))
}
