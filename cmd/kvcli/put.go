package main

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/shale-db/shale"
)

var putCmd = &command{
	name:    "put",
	args:    "KEY [VALUE]",
	summary: "set KEY to VALUE or stdin; creates the database",
	detail: `Sets KEY to VALUE, durably (the write is synced to disk before put
returns). Without VALUE, the value is everything stdin holds, byte for byte:
use printf or echo -n if the value must not end in a newline. When stdin is
a terminal, put says on stderr that it is reading it. With --hex or
--escaped, stdin holds the value in that form, and a final newline is
ignored. Creates the database if the directory holds none.`,
	run: runPut,
}

func runPut(e *env, c *command, args []string) (err error) {
	fs := e.newFlagSet(c.name)
	rest, err := e.parse(c, fs, args, 1, 2)
	if err != nil {
		return err
	}
	key, err := e.arg("key", rest[0])
	if err != nil {
		return err
	}
	// A missing --db or a bad --recovery is a usage error to give before
	// waiting for a value on stdin.
	if _, err := e.needDB(); err != nil {
		return err
	}
	if _, err := e.recoveryMode(); err != nil {
		return err
	}
	var value []byte
	if len(rest) == 2 {
		value, err = e.arg("value", rest[1])
	} else {
		value, err = e.stdinValue(key)
	}
	if err != nil {
		return err
	}
	db, err := e.openWrite()
	if err != nil {
		return err
	}
	defer closeDB(db, &err)
	if err := db.Put(key, value, shale.Sync); err != nil {
		return failure(err)
	}
	return nil
}

// stdinValue reads key's value from stdin: raw bytes, or hex or escaped
// text with one final newline ignored. When stdin is a terminal, it first
// says so on stderr, lest put seem to hang.
func (e *env) stdinValue(key []byte) ([]byte, error) {
	if isTerminal(e.stdin) {
		fmt.Fprintf(e.stderr, "kvcli: reading the value of %s from stdin; end it with Ctrl-D on a line of its own (or give VALUE after KEY)\n", e.show(key))
	}
	b, err := io.ReadAll(e.stdin)
	if err != nil {
		return nil, failuref("read value from stdin: %v", err)
	}
	if !e.hex && !e.escaped {
		return b, nil
	}
	b = bytes.TrimSuffix(b, []byte("\n"))
	b = bytes.TrimSuffix(b, []byte("\r"))
	return e.arg("value", string(b))
}

// isTerminal reports whether r is a terminal: a character device other
// than the null device.
func isTerminal(r any) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	null, err := os.Stat(os.DevNull)
	return err != nil || !os.SameFile(fi, null)
}
