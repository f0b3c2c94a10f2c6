package main

import (
	"bytes"
	"io"

	"github.com/shale-db/shale"
)

var putCmd = &command{
	name:    "put",
	args:    "KEY [VALUE]",
	summary: "set KEY to VALUE or stdin; creates the database",
	detail: `Sets KEY to VALUE, durably (the write is synced to disk before put
returns). Without VALUE, the value is everything stdin holds, byte for byte:
use printf or echo -n if the value must not end in a newline. With --hex or
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
	var value []byte
	if len(rest) == 2 {
		value, err = e.arg("value", rest[1])
	} else {
		value, err = e.stdinValue()
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

// stdinValue reads a value from stdin: raw bytes, or hex or escaped text
// with one final newline ignored.
func (e *env) stdinValue() ([]byte, error) {
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
