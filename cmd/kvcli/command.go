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
	// rawStdout is what stdout buffers: to tell a terminal.
	rawStdout io.Writer
	stderr    io.Writer

	db      string // the database directory: --db or $KVCLI_DB
	hex     bool   // keys and values in and out are hex
	escaped bool   // key and value arguments use the output's escapes
	// recovery is --recovery: skip, point-in-time or strict.
	recovery string
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

// commandGlobals lists the global flags each command uses: after the
// command name it takes only these, and its help lists only these. (Before
// the command name, every global flag is accepted.) A command missing here
// takes all of them.
var commandGlobals = map[string][]string{
	"get": {"db", "hex", "escaped", "recovery"}, "put": {"db", "hex", "escaped", "recovery"},
	"delete": {"db", "hex", "escaped", "recovery"}, "scan": {"db", "hex", "escaped", "recovery"},
	"dump": {"db", "hex", "escaped", "recovery"}, "load": {"db", "hex", "recovery"},
	"stats": {"db", "hex", "recovery"}, "compact": {"db", "hex", "escaped", "recovery"}, "check": {"db"},
	"wal": {"db", "hex"}, "sst": {"db", "hex"}, "manifest": {"db"},
	"crashtest": {"db"}, "crashtest-writer": {"db"}, "help": {},
}

// globalsOf returns the global flags the command named name uses.
func globalsOf(name string) []string {
	if g, ok := commandGlobals[name]; ok {
		return g
	}
	return []string{"db", "hex", "escaped", "recovery"}
}

// newFlagSet returns the flag set of the command named name, carrying the
// global flags it uses, so that they work after the command name too
// ("kvcli get --hex 6869"). The name "kvcli" gets every global flag.
func (e *env) newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	for _, g := range globalsOf(name) {
		switch g {
		case "db":
			fs.StringVar(&e.db, "db", e.db, "the database directory `DIR` (default $KVCLI_DB)")
		case "hex":
			fs.BoolVar(&e.hex, "hex", e.hex, "keys and values, in arguments and output, are hex")
		case "recovery":
			fs.StringVar(&e.recovery, "recovery", e.recovery, "what Open does with a damaged log: `skip`, point-in-time or strict (see kvcli help recovery)")
		case "escaped":
			fs.BoolVar(&e.escaped, "escaped", e.escaped, "key and value arguments use kvcli's escapes (see kvcli help escaping)")
		}
	}
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

// parse parses the command's flags, which may come before, between or
// after its positional arguments ("get KEY --raw"); after "--" every
// argument is positional. It checks the number of positional arguments,
// which must lie in [min, max] (max < 0: no limit), and that --hex and
// --escaped are not both given.
// -h prints the command's help.
func (e *env) parse(c *command, fs *flag.FlagSet, args []string, min, max int) ([]string, error) {
	flags, rest := splitArgs(fs, args)
	if err := parseFlags(fs, flags); err != nil {
		if err == errHelp {
			if err := writeCommandHelp(e.stdout, c, fs); err != nil {
				return nil, err
			}
			return nil, errHelpShown
		}
		return nil, usageError(fmt.Sprintf("%s: %v", c.name, err.(*exitError).err))
	}
	rest = append(fs.Args(), rest...)
	if err := e.checkGlobals(); err != nil {
		return nil, err
	}
	if len(rest) < min || (max >= 0 && len(rest) > max) {
		return nil, usageError(fmt.Sprintf("usage: kvcli %s", synopsis(c)))
	}
	return rest, nil
}

// splitArgs separates args into flags (each with its value, if it takes
// one as the next argument) and positional arguments, keeping the order
// of each. "--" ends the flags: what follows it is positional. A lone "-"
// is positional. A flag fs does not define goes with the flags, for Parse
// to reject.
func splitArgs(fs *flag.FlagSet, args []string) (flags, positional []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return flags, append(positional, args[i+1:]...)
		case len(a) < 2 || a[0] != '-':
			positional = append(positional, a)
			continue
		}
		flags = append(flags, a)
		name := strings.TrimLeft(a, "-")
		if strings.Contains(name, "=") {
			continue
		}
		if f := fs.Lookup(name); f != nil && !isBoolFlag(f) && i+1 < len(args) {
			i++
			flags = append(flags, args[i])
		}
	}
	return flags, positional
}

// isBoolFlag reports whether f takes no value argument.
func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// checkGlobals checks the global flags, wherever they were given: --hex
// and --escaped exclude each other.
func (e *env) checkGlobals() error {
	if e.hex && e.escaped {
		return usageError("--hex and --escaped exclude each other: give one")
	}
	return nil
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
	rest, err := e.parse(c, fs, args, 2, 2)
	if err != nil {
		return "", err
	}
	if rest[0] != "dump" {
		return "", usageError(fmt.Sprintf("usage: kvcli %s", synopsis(c)))
	}
	return rest[1], nil
}
