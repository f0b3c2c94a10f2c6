//go:build linux || darwin

package vfs_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shale-db/shale/internal/vfs"
)

// Child lock modes: how the helper process takes the lock.
const (
	viaVFSEx   = "vfs-ex"   // vfs.OS().Lock, exclusive (another shale)
	viaVFSSh   = "vfs-sh"   // vfs.OS().Lock, shared (a read-only shale)
	viaFlockEx = "flock-ex" // flock(LOCK_EX|LOCK_NB), as goleveldb does
	viaFlockSh = "flock-sh" // flock(LOCK_SH|LOCK_NB), goleveldb read-only
	viaFcntlWr = "fcntl-wr" // fcntl(F_SETLK, F_WRLCK) on the whole file, as LevelDB does
	viaFcntlRd = "fcntl-rd" // fcntl(F_SETLK, F_RDLCK)
)

// TestHelperProcess is not a test: it is the child process of the tests
// below. It takes the lock named by SHALE_VFS_LOCK_PATH as
// SHALE_VFS_LOCK_MODE says, prints "locked" or "busy" (or "error: ..."), and,
// if it got the lock, holds it until its stdin is closed.
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv("SHALE_VFS_LOCK_MODE")
	if mode == "" {
		return
	}
	release, err := childLock(mode, os.Getenv("SHALE_VFS_LOCK_PATH"))
	switch {
	case err == nil:
		fmt.Println("locked")
		io.Copy(io.Discard, os.Stdin)
		release()
	case errors.Is(err, vfs.ErrLocked), errors.Is(err, syscall.EWOULDBLOCK),
		errors.Is(err, syscall.EAGAIN), errors.Is(err, syscall.EACCES):
		fmt.Println("busy")
	default:
		fmt.Println("error:", err)
	}
	os.Exit(0)
}

// childLock takes the lock at path the way mode says.
func childLock(mode, path string) (release func(), err error) {
	if mode == viaVFSEx || mode == viaVFSSh {
		l, err := vfs.OS().Lock(path, mode == viaVFSSh)
		if err != nil {
			return nil, err
		}
		return func() { l.Close() }, nil
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	fd := int(f.Fd())
	switch mode {
	case viaFlockEx:
		err = syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB)
	case viaFlockSh:
		err = syscall.Flock(fd, syscall.LOCK_SH|syscall.LOCK_NB)
	case viaFcntlWr:
		err = syscall.FcntlFlock(uintptr(fd), syscall.F_SETLK, &syscall.Flock_t{Type: syscall.F_WRLCK})
	case viaFcntlRd:
		err = syscall.FcntlFlock(uintptr(fd), syscall.F_SETLK, &syscall.Flock_t{Type: syscall.F_RDLCK})
	default:
		err = fmt.Errorf("unknown mode %q", mode)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}

// child is a running helper process.
type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

// startChild runs the helper in mode on path and returns what it reported.
// If it reported "locked", it holds the lock until stop is called.
func startChild(t *testing.T, mode, path string) (string, *child) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), "SHALE_VFS_LOCK_MODE="+mode, "SHALE_VFS_LOCK_PATH="+path,
		// A race-enabled binary otherwise sleeps 1 s at exit.
		"GORACE="+os.Getenv("GORACE")+" atexit_sleep_ms=0")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	must(t, err)
	stdout, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	c := &child{cmd: cmd, stdin: stdin}
	t.Cleanup(c.stop)
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("child %s: reading its report: %v", mode, err)
	}
	return strings.TrimSpace(line), c
}

// stop makes the child release its lock and waits for it to exit.
func (c *child) stop() {
	if c.stdin != nil {
		c.stdin.Close()
		c.cmd.Wait()
		c.stdin = nil
	}
}

// childTries runs the helper in mode while this process holds its locks and
// checks its report.
func childTries(t *testing.T, mode, path, want string) {
	t.Helper()
	got, c := startChild(t, mode, path)
	c.stop()
	if got != want {
		t.Errorf("child %s while the parent holds the lock: %q; want %q", mode, got, want)
	}
}

// TestLockExcludesOtherProcess: while a child holds the lock in each of the
// ways shale, goleveldb and LevelDB take it, our Lock fails with ErrLocked
// (and a shared Lock succeeds beside a shared holder).
func TestLockExcludesOtherProcess(t *testing.T) {
	fs := vfs.OS()
	for _, tc := range []struct {
		mode         string
		sharedBeside bool // whether our shared Lock may coexist with the child's
	}{
		{viaVFSEx, false}, {viaVFSSh, true},
		{viaFlockEx, false}, {viaFlockSh, true},
		{viaFcntlWr, false}, {viaFcntlRd, true},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "LOCK")
			got, c := startChild(t, tc.mode, p)
			if got != "locked" {
				t.Fatalf("child could not take the lock: %s", got)
			}
			wantLocked(t, fs, p, exclusive)
			if tc.sharedBeside {
				must(t, lock(t, fs, p, shared).Close())
			} else {
				wantLocked(t, fs, p, shared)
			}
			c.stop()
			must(t, lock(t, fs, p, exclusive).Close()) // released when the child let go
		})
	}
}

// TestLockExcludedFromOtherProcess: while this process holds our lock, a
// child's attempts in each of those ways fail (only shared beside shared
// succeeds), and succeed once we release it.
func TestLockExcludedFromOtherProcess(t *testing.T) {
	fs := vfs.OS()
	p := filepath.Join(t.TempDir(), "LOCK")
	all := []string{viaVFSEx, viaVFSSh, viaFlockEx, viaFlockSh, viaFcntlWr, viaFcntlRd}

	l := lock(t, fs, p, exclusive)
	for _, mode := range all {
		childTries(t, mode, p, "busy")
	}
	must(t, l.Close())

	l = lock(t, fs, p, shared)
	for _, mode := range all {
		want := "busy"
		if mode == viaVFSSh || mode == viaFlockSh || mode == viaFcntlRd {
			want = "locked"
		}
		childTries(t, mode, p, want)
	}
	must(t, l.Close())

	for _, mode := range []string{viaVFSEx, viaFlockEx, viaFcntlWr} {
		childTries(t, mode, p, "locked")
	}
}
