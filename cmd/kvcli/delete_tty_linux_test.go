package main

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestDeleteRangeAsksOnTerminal: on a terminal, delete --start/--end asks
// first; anything but "yes" deletes nothing, "yes" deletes the range.
func TestDeleteRangeAsksOnTerminal(t *testing.T) {
	dir := t.TempDir()
	for _, k := range []string{"a", "b", "c"} {
		ok(t, "", "--db", dir, "put", k, "v")
	}
	for _, answer := range []string{"no", "yes"} {
		master, slave := openPTY(t)
		cmd := exec.Command(kvcliBin, "--db", dir, "delete", "--start", "b")
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
		if _, err := master.Write([]byte(answer + "\n")); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		var err error
		select {
		case err = <-done:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			t.Fatalf("delete did not end after the answer; stderr %q", stderr.String())
		}
		if !strings.Contains(stderr.String(), "delete every key in [b, the end)? type yes") {
			t.Fatalf("stderr %q does not ask", stderr.String())
		}
		got := contents(t, dir)
		switch answer {
		case "no":
			if err == nil || len(got) != 3 || !strings.Contains(stderr.String(), "nothing deleted") {
				t.Fatalf("answered no: %v, %q; database %v", err, stderr.String(), got)
			}
		default:
			if err != nil || len(got) != 1 || got["a"] != "v" {
				t.Fatalf("answered yes: %v, %q; database %v", err, stderr.String(), got)
			}
		}
	}
}

// TestBackupRefusesTerminal: backup - does not write a tar onto a
// terminal.
func TestBackupRefusesTerminal(t *testing.T) {
	dir := t.TempDir()
	ok(t, "", "--db", dir, "put", "k", "v")
	master, slave := openPTY(t)
	defer master.Close()
	cmd := exec.Command(kvcliBin, "--db", dir, "backup", "-")
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = slave, &stderr
	err := cmd.Run()
	if err == nil || !strings.Contains(stderr.String(), "is a terminal") {
		t.Fatalf("backup - onto a terminal: %v, stderr %q", err, stderr.String())
	}
}
