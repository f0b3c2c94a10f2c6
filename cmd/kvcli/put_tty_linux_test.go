package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// openPTY opens a pseudo-terminal pair: the master, which the test types
// into, and the slave, which the child reads as its terminal.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		t.Skip("no /dev/ptmx: this system offers no pseudo-terminals")
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	var unlock int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		t.Fatalf("unlock the pty: %v", e)
	}
	var n uint32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); e != 0 {
		t.Fatalf("pty number: %v", e)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return m, s
}

// TestPutStdinHintOnTerminal: put KEY without VALUE, its stdin a terminal,
// says on stderr that it reads the value from stdin, then stores what is
// typed up to Ctrl-D.
func TestPutStdinHintOnTerminal(t *testing.T) {
	master, slave := openPTY(t)
	dir := t.TempDir()
	cmd := exec.Command(kvcliBin, "--db", dir, "put", "greeting")
	var stderr bytes.Buffer
	cmd.Stdin, cmd.Stderr = slave, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	go func() { // drain the terminal's echo
		buf := make([]byte, 1024)
		for {
			if _, err := master.Read(buf); err != nil {
				return
			}
		}
	}()
	if _, err := master.Write([]byte("hello\n\x04")); err != nil { // a line, then Ctrl-D
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("put: %v, stderr %q", err, stderr.String())
		}
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("put did not end after Ctrl-D; stderr %q", stderr.String())
	}
	if !strings.Contains(stderr.String(), "kvcli: reading the value of greeting from stdin") {
		t.Errorf("stderr %q does not say that put reads stdin", stderr.String())
	}
	if got := contents(t, dir)["greeting"]; got != "hello\n" {
		t.Errorf("value typed on the terminal = %q, want %q", got, "hello\n")
	}
}
