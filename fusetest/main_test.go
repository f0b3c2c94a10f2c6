package fusetest_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shale-db/shale/fusetest"
)

// The tests need SHALE_FUSE=1, root and /dev/fuse. With SHALE_FUSE=1,
// TestMain runs the test binary again in a private mount namespace (Go
// makes the child's / recursively private), which serves the FUSE mounts:
// a test that dies leaves no mount behind, since the namespace goes with
// its last process. Writers run in processes of their own, started from
// inside the namespace (see startChild): a process must not fault pages
// of a file on a FUSE mount that it serves itself.
const (
	gateEnv  = "SHALE_FUSE"
	innerEnv = "SHALE_FUSETEST_INNER"
	// roleEnv names what a child process does; specEnv holds its
	// parameters, in JSON.
	roleEnv = "SHALE_FUSETEST_ROLE"
	specEnv = "SHALE_FUSETEST_SPEC"
)

func TestMain(m *testing.M) {
	if role := os.Getenv(roleEnv); role != "" {
		os.Exit(runChild(role, os.Getenv(specEnv)))
	}
	if os.Getenv(gateEnv) == "1" && os.Getenv(innerEnv) == "" {
		os.Exit(runInNamespace())
	}
	os.Exit(m.Run())
}

// runInNamespace runs the test binary again, with the same arguments, in
// a new mount namespace, and returns its exit code. It fails (rather than
// skip) when it cannot: SHALE_FUSE=1 asks for these tests to run.
func runInNamespace() int {
	fail := func(format string, args ...any) int {
		fmt.Printf("--- FAIL: fusetest: "+format+"\nFAIL\n", args...)
		return 1
	}
	if os.Geteuid() != 0 {
		return fail("%s=1 needs root, to mount with mount(2) (euid %d)", gateEnv, os.Geteuid())
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return fail("%s=1 needs /dev/fuse: %v", gateEnv, err)
	}
	cmd := exec.Command(os.Args[0], os.Args[1:]...)
	cmd.Env = append(os.Environ(), innerEnv+"=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Unshareflags: syscall.CLONE_NEWNS,
		Pdeathsig:    syscall.SIGKILL,
	}
	if err := cmd.Run(); err != nil {
		if ee, ok := err.(*exec.ExitError); ok && ee.Exited() {
			return ee.ExitCode()
		}
		return fail("run the tests in a new mount namespace: %v", err)
	}
	return 0
}

// requireFUSE skips the test unless SHALE_FUSE=1; then the test runs in
// the namespace that TestMain made.
func requireFUSE(t *testing.T) {
	t.Helper()
	if os.Getenv(gateEnv) != "1" {
		t.Skipf("set %s=1 (as root, with /dev/fuse) to run the FUSE tests", gateEnv)
	}
	if os.Getenv(innerEnv) == "" {
		t.Fatal("not in the mount namespace TestMain makes")
	}
}

// mount mounts a fresh fault-injecting FS over a fresh backing directory,
// unmounted when the test ends. It fails the test if it cannot mount.
func mount(t *testing.T, opts *fusetest.Options) *fusetest.FS {
	t.Helper()
	backing, mp := t.TempDir(), t.TempDir()
	fsys, err := fusetest.Mount(mp, backing, opts)
	if err != nil {
		t.Fatalf("cannot mount the FUSE file system: %v", err)
	}
	t.Cleanup(func() {
		if err := fsys.Unmount(); err != nil {
			t.Errorf("unmount: %v", err)
		}
	})
	return fsys
}

// child is a process running this test binary in a role (runChild).
type child struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  *bufio.Scanner
	stderr *lockedBuffer
	// killer kills the child if it outlives its deadline.
	killer *time.Timer
}

// startChild starts a child in role with spec, killed after limit.
func startChild(t *testing.T, role string, spec any, limit time.Duration) *child {
	t.Helper()
	js, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), roleEnv+"="+role, specEnv+"="+string(js))
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	c := &child{t: t, cmd: cmd, stderr: &lockedBuffer{}}
	cmd.Stderr = c.stderr
	if c.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.lines = bufio.NewScanner(stdout)
	c.lines.Buffer(make([]byte, 1<<20), 64<<20)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c.killer = time.AfterFunc(limit, func() { cmd.Process.Kill() })
	return c
}

// wait waits for the child and returns how it ended, with its stderr.
func (c *child) wait() (killedBySignal bool, err error) {
	c.stdin.Close()
	for c.lines.Scan() { // what the child wrote that nobody read
	}
	err = c.cmd.Wait()
	if !c.killer.Stop() {
		return false, fmt.Errorf("child ran past its time limit and was killed; stderr: %s", c.stderr.tail())
	}
	if ee, ok := err.(*exec.ExitError); ok {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			return true, nil
		}
		return false, fmt.Errorf("child: %v; stderr: %s", err, c.stderr.tail())
	}
	return false, err
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// tail returns the last few KiB written.
func (b *lockedBuffer) tail() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.b.String()
	if len(s) > 4096 {
		s = "..." + s[len(s)-4096:]
	}
	return strings.TrimSpace(s)
}

// runChild runs a child's role and returns its exit code.
func runChild(role, spec string) int {
	var err error
	switch role {
	case "faultwriter":
		err = faultWriter(spec)
	case "faultverify":
		err = faultVerify(spec)
	case "plwriter":
		err = powerLossWriter(spec)
	case "mmapstore":
		err = mmapStore(spec)
	default:
		err = fmt.Errorf("unknown role %q", role)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", role, err)
		return 2
	}
	return 0
}

// lineWriter prints lines to stdout whole, one write(2) each, from many
// goroutines: a line printed has left the process when println returns.
type lineWriter struct{ mu sync.Mutex }

func (w *lineWriter) println(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	os.Stdout.WriteString(fmt.Sprintf(format, args...) + "\n")
}
