package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"strings"
)

// env is what every command runs with: the standard streams and the global
// flags, which may be given before or after the command name.
type env struct {
	stdin  io.Reader
	stdout *bufio.Writer
	stderr io.Writer

	db      string // the database directory: --db or $KVCLI_DB
	hex     bool   // keys and values in and out are hex
	escaped bool   // key and value arguments use the output's escapes
}

// command is one kvcli subcommand.
type command struct {
	name    string
	args    string // synopsis of the arguments, e.g. "KEY [VALUE]"
	summary string // one line for the command list
	detail  string // paragraphs for "kvcli help NAME"
	hidden  bool   // left out of the help (internal use)
	run     func(e *env, c *command, args []string) error
}

// commands lists the subcommands in the order help shows them.
var commands []*command

func init() {
	commands = []*command{
		getCmd, putCmd, deleteCmd, scanCmd, dumpCmd, loadCmd,
		statsCmd, compactCmd, checkCmd, walCmd, sstCmd, manifestCmd,
		crashtestCmd, crashWriterCmd, helpCmd,
	}
}

// lookup returns the command named name, or nil.
func lookup(name string) *command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return nil
}

// newFlagSet returns a flag set carrying the global flags, so that they
// work after the command name too ("kvcli get --hex 6869").
func (e *env) newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&e.db, "db", e.db, "the database directory `DIR` (default $KVCLI_DB)")
	fs.BoolVar(&e.hex, "hex", e.hex, "keys and values, in arguments and output, are hex")
	fs.BoolVar(&e.escaped, "escaped", e.escaped, "key and value arguments use kvcli's escapes (see kvcli help escaping)")
	return fs
}

// errHelp is returned by parseFlags when -h or --help was given.
var errHelp = flag.ErrHelp

// parseFlags parses args into fs; a bad flag is a usage error.
func parseFlags(fs *flag.FlagSet, args []string) error {
	err := fs.Parse(args)
	switch {
	case err == nil:
		return nil
	case err == flag.ErrHelp:
		return errHelp
	}
	return usageError(err.Error())
}

// parse parses the command's flags and checks the number of positional
// arguments, which must lie in [min, max] (max < 0: no limit). -h prints
// the command's help.
func (e *env) parse(c *command, fs *flag.FlagSet, args []string, min, max int) ([]string, error) {
	if err := parseFlags(fs, args); err != nil {
		if err == errHelp {
			if err := writeCommandHelp(e.stdout, c, fs); err != nil {
				return nil, err
			}
			return nil, errHelpShown
		}
		return nil, usageError(fmt.Sprintf("%s: %v", c.name, err.(*exitError).err))
	}
	rest := fs.Args()
	if len(rest) < min || (max >= 0 && len(rest) > max) {
		return nil, usageError(fmt.Sprintf("usage: kvcli %s", synopsis(c)))
	}
	return rest, nil
}

// synopsis returns "NAME [flags] ARGS".
func synopsis(c *command) string {
	return strings.TrimSpace(c.name + " [flags] " + c.args)
}

// needDB returns the database directory, or a usage error if none was
// given.
func (e *env) needDB() (string, error) {
	if e.db == "" {
		return "", usageError("no database directory: use --db DIR or set KVCLI_DB")
	}
	return e.db, nil
}

// parseDump parses the arguments of "wal dump FILE" and its kind: the
// action word, then flags and FILE in any order. It returns FILE.
func (e *env) parseDump(c *command, fs *flag.FlagSet, args []string) (string, error) {
	rest, err := e.parse(c, fs, args, 1, -1)
	if err != nil {
		return "", err
	}
	if rest[0] != "dump" {
		return "", usageError(fmt.Sprintf("usage: kvcli %s", synopsis(c)))
	}
	if rest, err = e.parse(c, fs, rest[1:], 1, 1); err != nil {
		return "", err
	}
	return rest[0], nil
}
