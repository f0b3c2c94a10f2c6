//go:build linux

package shale

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/shale-db/shale/internal/vfs"
)

// dirFailFS is the OS file system whose directory syncs fail when fail
// says so for the caller.
type dirFailFS struct {
	vfs.FS
	fail func(stack string) error
}

func (f dirFailFS) OpenDir(name string) (vfs.File, error) {
	buf := make([]byte, 16<<10)
	if err := f.fail(string(buf[:runtime.Stack(buf, false)])); err != nil {
		return nil, err
	}
	return f.FS.OpenDir(name)
}

// openUnder returns the files in dir that the process holds open, from
// /proc/self/fd.
func openUnder(t *testing.T, dir string) []string {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err == nil && strings.HasPrefix(target, dir+"/") {
			out = append(out, target)
		}
	}
	return out
}

// TestFailedRetireClosesLogs: a WAL whose retirement cannot start (the
// retirement of the WAL before it failed) is closed all the same: no file
// of the database stays open after Close (it would stay for as long as the
// process lives, and pin the file's blocks after it is deleted).
func TestFailedRetireClosesLogs(t *testing.T) {
	dir := t.TempDir()
	release := make(chan struct{})
	var once sync.Once
	fsys := dirFailFS{FS: vfs.OS(), fail: func(stack string) error {
		if !strings.Contains(stack, "(*DB).retireLog(") {
			return nil
		}
		first := false
		once.Do(func() { first = true })
		if first {
			<-release // the first retirement fails, late
			return vfs.ErrInjected
		}
		return nil
	}}
	o, err := (&Options{WriteBufferSize: 4 << 10, MaxImmutableMemtables: 2}).withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	db, err := open(dir, o, fsys)
	if err != nil {
		t.Fatal(err)
	}
	// Two memtable switches: the first WAL's successor waits in its
	// retirement, the second's retirement waits for it.
	for i := 0; db.Metrics().ImmutableMemtables < 2; i++ {
		if err := db.Put(reviewKey(i), reviewValue(i), NoSync); err != nil {
			t.Fatal(err)
		}
	}
	close(release)
	db.Close() // reports the injected fault
	if m := openUnder(t, dir); len(m) > 0 {
		t.Fatalf("after Close, %d of the database's files are still open:\n%s", len(m), strings.Join(m, "\n"))
	}
}

// TestFailedCreateLogClosesLog: an Open whose new WAL's directory sync
// fails leaves no file of the database open.
func TestFailedCreateLogClosesLog(t *testing.T) {
	dir := t.TempDir()
	fsys := dirFailFS{FS: vfs.OS(), fail: func(stack string) error {
		if strings.Contains(stack, "(*DB).createLog(") {
			return vfs.ErrInjected
		}
		return nil
	}}
	o, err := (&Options{}).withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if db, err := open(dir, o, fsys); err == nil {
		db.Close()
		t.Fatal("Open succeeded with a failing directory sync")
	}
	if m := openUnder(t, dir); len(m) > 0 {
		t.Fatalf("after the failed Open, %d of the database's files are still open:\n%s", len(m), strings.Join(m, "\n"))
	}
}
