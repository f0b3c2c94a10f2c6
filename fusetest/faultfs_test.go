package fusetest_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shale-db/shale/fusetest"
)

// The file system's own tests. They call the mount from the process that
// serves it with plain system calls, never through a mapping; the
// mapping test runs its stores in a child.

func TestFaultFSWrites(t *testing.T) {
	requireFUSE(t)
	fsys := mount(t, nil)
	ctl := fsys.Controller()
	p := filepath.Join(fsys.Mountpoint(), "000001.log")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fd := int(f.Fd())
	buf := bytes.Repeat([]byte("x"), 100)
	pwrite := func(off int64) (int, error) { return syscall.Pwrite(fd, buf, off) }

	writes := ctl.Calls(fusetest.OpWrite)
	if n, err := pwrite(0); n != 100 || err != nil {
		t.Fatalf("pwrite = %d, %v", n, err)
	}
	if got := ctl.Calls(fusetest.OpWrite); got != writes+1 {
		t.Fatalf("the daemon saw %d writes for one write(2), want 1", got-writes)
	}

	ctl.Arm(fusetest.Fault{Op: fusetest.OpWrite, Pattern: "*.ldb", Err: syscall.EIO})
	if n, err := pwrite(100); n != 100 || err != nil {
		t.Fatalf("a fault on *.ldb failed a write to a .log: %d, %v", n, err)
	}
	ctl.Arm(fusetest.Fault{Op: fusetest.OpWrite, Pattern: "*.log", Err: syscall.EIO, Times: 1})
	if n, err := pwrite(200); err != syscall.EIO {
		t.Fatalf("pwrite = %d, %v; want EIO", n, err)
	}
	if _, ok := ctl.FirstFired(); !ok {
		t.Fatal("FirstFired: none")
	}
	if n, err := pwrite(200); n != 100 || err != nil {
		t.Fatalf("after Times 1, pwrite = %d, %v", n, err)
	}

	ctl.Arm(fusetest.Fault{Op: fusetest.OpWrite, Pattern: "*.log", Err: syscall.EIO, Short: true, Times: 1})
	if n, err := pwrite(300); n != 50 || err != nil {
		t.Fatalf("short write: pwrite = %d, %v; want 50, nil", n, err)
	}
	if n, err := pwrite(350); err != syscall.EIO {
		t.Fatalf("after the short write, pwrite = %d, %v; want EIO", n, err)
	}

	ctl.Arm(fusetest.Fault{Op: fusetest.OpWrite, Pattern: "*.log", Err: syscall.ENOSPC, FromOffset: 1000})
	if n, err := pwrite(850); n != 100 || err != nil {
		t.Fatalf("write before FromOffset: %d, %v", n, err)
	}
	if n, err := pwrite(950); n != 50 || err != nil {
		t.Fatalf("write across FromOffset: %d, %v; want 50, nil", n, err)
	}
	if n, err := pwrite(1000); err != syscall.ENOSPC {
		t.Fatalf("write at FromOffset: %d, %v; want ENOSPC", n, err)
	}
	ctl.Disarm()
	b, err := os.ReadFile(filepath.Join(fsys.Backing(), "000001.log"))
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != 1000 {
		t.Fatalf("backing file has %d bytes, want 1000 (short writes stored in part)", len(b))
	}
}

func TestFaultFSOtherCalls(t *testing.T) {
	requireFUSE(t)
	fsys := mount(t, nil)
	ctl := fsys.Controller()
	mp := fsys.Mountpoint()
	f, err := os.Create(filepath.Join(mp, "MANIFEST-000001"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write([]byte("edit")); err != nil {
		t.Fatal(err)
	}

	ctl.Arm(fusetest.Fault{Op: fusetest.OpFsync, Pattern: "MANIFEST-*", Err: syscall.EIO, Times: 1})
	if err := f.Sync(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("fsync: %v, want EIO", err)
	}
	if err := f.Sync(); err != nil {
		t.Fatalf("second fsync: %v", err)
	}

	ctl.Arm(fusetest.Fault{Op: fusetest.OpFsyncDir, Pattern: ".", Err: syscall.EIO})
	d, err := os.Open(mp)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Sync(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("directory fsync: %v, want EIO", err)
	}
	d.Close()

	ctl.Arm(fusetest.Fault{Op: fusetest.OpCreate, Pattern: "*.log", Err: syscall.EIO})
	if _, err := os.Create(filepath.Join(mp, "000002.log")); !errors.Is(err, syscall.EIO) {
		t.Fatalf("create: %v, want EIO", err)
	}

	ctl.Arm(fusetest.Fault{Op: fusetest.OpRename, Pattern: "CURRENT", Err: syscall.EIO})
	if err := os.WriteFile(filepath.Join(mp, "CURRENT.tmp"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(mp, "CURRENT.tmp"), filepath.Join(mp, "CURRENT")); !errors.Is(err, syscall.EIO) {
		t.Fatalf("rename: %v, want EIO", err)
	}

	for _, e := range []syscall.Errno{syscall.ENOSPC, syscall.EDQUOT} {
		ctl.Arm(fusetest.Fault{Full: true, Err: e})
		if _, err := f.Write([]byte("more")); !errors.Is(err, e) {
			t.Errorf("full (%v): write: %v", e, err)
		}
		if err := syscall.Fallocate(int(f.Fd()), 0, 0, 1<<20); err != e {
			t.Errorf("full (%v): fallocate: %v", e, err)
		}
		if _, err := os.Create(filepath.Join(mp, "x.ldb")); !errors.Is(err, e) {
			t.Errorf("full (%v): create: %v", e, err)
		}
		if err := os.Mkdir(filepath.Join(mp, "lost"), 0o755); !errors.Is(err, e) {
			t.Errorf("full (%v): mkdir: %v", e, err)
		}
	}
	ctl.Disarm()
	if err := syscall.Fallocate(int(f.Fd()), 0, 0, 1<<20); err != nil {
		t.Errorf("fallocate after Disarm: %v", err)
	}
	for _, op := range []fusetest.Op{fusetest.OpFsync, fusetest.OpFsyncDir, fusetest.OpCreate, fusetest.OpRename, fusetest.OpAllocate} {
		if ctl.Calls(op) == 0 {
			t.Errorf("no %v call counted", op)
		}
	}
}

// TestFaultFSMappedWriteback shows what the WAL change is about: a store
// into a shared mapping of a file on the mount reaches the daemon only
// when the page is written back (here, at fsync), so a write failure
// there can only be reported to whoever syncs, long after the store
// "succeeded".
func TestFaultFSMappedWriteback(t *testing.T) {
	requireFUSE(t)
	fsys := mount(t, nil)
	ctl := fsys.Controller()
	p := filepath.Join(fsys.Mountpoint(), "000001.log")
	if err := os.WriteFile(p, make([]byte, 4096), 0o644); err != nil {
		t.Fatal(err)
	}
	c := startChild(t, "mmapstore", p, 30*time.Second)
	var before int64
	var got []string
	for c.lines.Scan() {
		line := c.lines.Text()
		got = append(got, line)
		if line == "stored" {
			before = ctl.Calls(fusetest.OpWrite)
			ctl.Arm(fusetest.Fault{Op: fusetest.OpWrite, Pattern: "*.log", Err: syscall.EIO})
			fmt.Fprintln(c.stdin, "sync")
		}
	}
	if _, err := c.wait(); err != nil {
		t.Fatal(err)
	}
	ctl.Disarm()
	if len(got) != 2 || got[0] != "stored" || !strings.Contains(got[1], "input/output error") {
		t.Fatalf("child said %q; want stored, then an fsync that fails with EIO", got)
	}
	if ctl.Calls(fusetest.OpWrite) == before {
		t.Fatal("the fsync wrote nothing back")
	}
	b, err := os.ReadFile(filepath.Join(fsys.Backing(), "000001.log"))
	if err != nil {
		t.Fatal(err)
	}
	if b[0] != 0 {
		t.Fatalf("the failed writeback reached the backing file")
	}
}

// mmapStore is the child of TestFaultFSMappedWriteback: it stores into a
// shared mapping of the file, says "stored", waits for a line, then
// fsyncs and prints the result.
func mmapStore(js string) error {
	var p string
	if err := json.Unmarshal([]byte(js), &p); err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	m, err := syscall.Mmap(int(f.Fd()), 0, 4096, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return err
	}
	copy(m, "acknowledged")
	fmt.Println("stored")
	var line string
	fmt.Scanln(&line)
	fmt.Printf("fsync: %v\n", f.Sync())
	return syscall.Munmap(m)
}

func TestFaultFSPowerCut(t *testing.T) {
	requireFUSE(t)
	fsys := mount(t, &fusetest.Options{TrackDurability: true})
	mp := fsys.Mountpoint()
	write := func(name, s string, sync bool) {
		t.Helper()
		f, err := os.OpenFile(filepath.Join(mp, name), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
		if sync {
			if err := f.Sync(); err != nil {
				t.Fatal(err)
			}
		}
	}
	syncDir := func() {
		t.Helper()
		d, err := os.Open(mp)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		if err := d.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	cut := func(want map[string]string) {
		t.Helper()
		dst := t.TempDir()
		if err := fsys.PowerCut(dst); err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		ents, err := os.ReadDir(dst)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			b, err := os.ReadFile(filepath.Join(dst, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			got[e.Name()] = string(b)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("after the cut: %q, want %q", got, want)
		}
	}

	write("a", "synced, entry not", true)
	cut(map[string]string{})
	syncDir()
	cut(map[string]string{"a": "synced, entry not"})
	write("b", "entry synced, data not", false)
	syncDir()
	cut(map[string]string{"a": "synced, entry not", "b": ""})

	// Appends after a sync are lost; a truncation too.
	f, err := os.OpenFile(filepath.Join(mp, "a"), os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(" + more")
	cut(map[string]string{"a": "synced, entry not", "b": ""})
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Truncate(6)
	cut(map[string]string{"a": "synced, entry not + more", "b": ""})
	f.Sync()
	f.Close()
	cut(map[string]string{"a": "synced", "b": ""})

	// A rename or an unlink without a directory fsync is undone.
	write("CURRENT.tmp", "MANIFEST-2", true)
	if err := os.Rename(filepath.Join(mp, "CURRENT.tmp"), filepath.Join(mp, "a")); err != nil {
		t.Fatal(err)
	}
	cut(map[string]string{"a": "synced", "b": ""})
	syncDir()
	cut(map[string]string{"a": "MANIFEST-2", "b": ""})
	os.Remove(filepath.Join(mp, "b"))
	cut(map[string]string{"a": "MANIFEST-2", "b": ""})
	syncDir()
	cut(map[string]string{"a": "MANIFEST-2"})

	// A new file that takes a removed one's inode does not take its
	// durable state.
	os.Remove(filepath.Join(mp, "a"))
	write("c", "new", false)
	cut(map[string]string{"a": "MANIFEST-2"})
}
