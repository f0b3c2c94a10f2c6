package main

import (
	"errors"

	"github.com/shale-db/shale"
)

var getCmd = &command{
	name:    "get",
	args:    "KEY",
	summary: "print KEY's value (exit status 1 if it has none)",
	detail: `Prints the value of KEY followed by a newline, escaped as in scan's
output (or hex with --hex), or with --raw the value's bytes exactly and
nothing else. Exit status 1, and a line on stderr, if KEY has no value.
Opens the database read-only.`,
	run: runGet,
}

func runGet(e *env, c *command, args []string) (err error) {
	fs := e.newFlagSet(c.name)
	raw := fs.Bool("raw", false, "write the value's bytes exactly, without escaping or newline")
	rest, err := e.parse(c, fs, args, 1, 1)
	if err != nil {
		return err
	}
	key, err := e.arg("key", rest[0])
	if err != nil {
		return err
	}
	db, err := e.openRead()
	if err != nil {
		return err
	}
	defer closeDB(db, &err)
	v, err := db.Get(key)
	switch {
	case errors.Is(err, shale.ErrNotFound) && len(key) == 0:
		return notFound("the empty key: not found")
	case errors.Is(err, shale.ErrNotFound):
		return notFound(e.show(key) + ": not found")
	case err != nil:
		return failure(err)
	case *raw:
		_, err = e.stdout.Write(v)
	default:
		e.stdout.WriteString(e.show(v))
		err = e.stdout.WriteByte('\n')
	}
	return err
}
