//go:build linux

package main

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Help that cannot be written (stdout on a full disk) is a failure like any
// other output that cannot be written: exit status 3 and a line on stderr,
// not exit status 0 with nothing printed anywhere.
func TestHelpOutputErrorFails(t *testing.T) {
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Fatalf("no /dev/full: %v", err)
	}
	defer full.Close()
	for _, args := range [][]string{{"help"}, {"--help"}, {"help", "get"}, {"get", "-h"}, {"--version"}} {
		cmd := exec.Command(kvcliBin, args...)
		var errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = full, &errb
		err := cmd.Run()
		code := 0
		if x, ok := err.(*exec.ExitError); ok {
			code = x.ExitCode()
		} else if err != nil {
			t.Fatalf("kvcli %q: %v", args, err)
		}
		if code != 3 || !strings.Contains(errb.String(), "no space left on device") {
			t.Errorf("kvcli %q > /dev/full: exit status %d, stderr %q; want 3 and the write error", args, code, errb.String())
		}
	}
}
