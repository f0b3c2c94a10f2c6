package main

import (
	"bufio"
	"flag"
	"fmt"
	"strings"
	"unicode/utf8"
)

var helpCmd = &command{
	name:    "help",
	args:    "[COMMAND|escaping|recovery]",
	summary: "this help, a command's help, the escaping rules, or recovery from damaged logs",
	run:     runHelp,
}

func runHelp(e *env, c *command, args []string) error {
	fs := e.newFlagSet(c.name)
	rest, err := e.parse(c, fs, args, 0, 1)
	if err != nil {
		return err
	}
	if len(rest) == 0 {
		return writeHelp(e.stdout, nil)
	}
	switch rest[0] {
	case "escaping":
		_, err := e.stdout.WriteString(escapingHelp)
		return err
	case "recovery":
		_, err := e.stdout.WriteString(recoveryHelp)
		return err
	}
	sub := lookup(rest[0])
	if sub == nil {
		return usageError(fmt.Sprintf("help: unknown command %q", rest[0]))
	}
	return sub.run(e, sub, []string{"-h"})
}

const helpHeader = `kvcli uses, inspects and tortures a shale database (or a LevelDB or
goleveldb one: the files are the same).

Usage: kvcli [--db DIR] [--hex | --escaped] [--recovery MODE] COMMAND [flags] [ARGS]
       kvcli --version

The database directory is --db DIR, or $KVCLI_DB. The global flags may also
follow the command name, and a command's flags may follow its arguments
("kvcli get KEY --raw"); after "--", everything is an argument, even what
begins with "-" ("kvcli put -- -k -v"). Read commands (get, scan, dump,
stats, check, and the wal, sst and manifest dumps) change nothing on disk,
and fail on a directory that holds no database; put and load create one,
but not in a directory holding files a database does not have.
The dumps take a FILE without a directory part inside --db.

Commands:
`

const helpFooter = `
Global flags:
  --db DIR     the database directory (default $KVCLI_DB)
  --hex        keys and values, in arguments and in output, are hex
  --escaped    key and value arguments are written in kvcli's escaped form
               (as scan prints them); without it, arguments are taken as is
               (--hex and --escaped exclude each other)
  --recovery MODE
               what opening a database does with a damaged log: skip
               (default), point-in-time or strict; "kvcli help recovery"
  --version    print kvcli's module version and the Go release that built it
A command's help ("kvcli help COMMAND") lists the global flags it uses.

Keys and values print as they are when they are printable UTF-8, escaped
otherwise; "kvcli help escaping" gives the exact rules and the JSON form.

Exit status:
  0  success
  1  get: the key has no value
  2  usage error (bad command, flag or argument)
  3  any other failure: the database is locked, missing or damaged,
     check found damage, crashtest lost writes, an I/O error
Errors are one line on stderr, "kvcli: CAUSE".

Run "kvcli COMMAND -h" or "kvcli help COMMAND" for a command's flags.
`

const escapingHelp = `Escaping: how kvcli writes keys and values as text

scan, dump, get and the file dumps write a key or value as follows, and load
and --escaped arguments read the same form back:
  - a printable UTF-8 character (a letter, mark, number, punctuation,
    symbol, or the ASCII space) stands for itself, except the backslash,
    which is written \\
  - tab, newline and carriage return are written \t, \n and \r
  - every other byte (control characters, other non-printable characters,
    bytes that are not valid UTF-8) is written \xNN: a backslash, x, and two
    lower-case hex digits per byte.
A backslash thus always begins an escape, and an escaped key or value holds
no tab and no newline, so a KEY<TAB>VALUE line is unambiguous and

    kvcli --db OLD dump | kvcli --db NEW load

copies every key and value exactly, whatever bytes they hold. load accepts
hex digits in either case and rejects any other escape; a trailing carriage
return on a line (CRLF) is ignored.

JSON lines (dump --json, load --json, scan --json): one object per entry.
A key that is valid UTF-8 is the JSON string "key" (JSON's own escapes
cover control characters); any other key is "key_base64", standard base64
with padding. The value likewise: "value" or "value_base64". With --hex,
every key and value is "key_hex" / "value_hex" instead. load takes exactly
one of the three fields for the key and one for the value:
    {"key":"user/1","value":"Ada"}
    {"key":"bin","value_base64":"AP8="}

--hex: keys and values are hex digits, in arguments, on stdin (put, load)
and in all output: "kvcli --hex put 00ff 6869" sets the key 0x00 0xff.
`

// writeHelp prints the command list: each command's usage, then its
// summary, every summary in the column after the longest usage.
func writeHelp(w *bufio.Writer, _ []string) error {
	w.WriteString(helpHeader)
	// Summaries start in one column, past the longest usage that fits in
	// maxUsageColumn; a longer usage has its line to itself, and its
	// summary goes on the next line in that column (as the global flags'
	// list does), so that lines stay near 80 characters.
	width := 0
	for _, c := range commands {
		if n := utf8.RuneCountInString(usage(c)); !c.hidden && n <= maxUsageColumn {
			width = max(width, n)
		}
	}
	for _, c := range commands {
		if c.hidden {
			continue
		}
		u := usage(c)
		if utf8.RuneCountInString(u) > width {
			fmt.Fprintf(w, "  %s\n  %-*s  %s\n", u, width, "", c.summary)
			continue
		}
		// fmt pads to a width in runes, as utf8.RuneCountInString counts.
		fmt.Fprintf(w, "  %-*s  %s\n", width, u, c.summary)
	}
	_, err := w.WriteString(helpFooter)
	if err != nil {
		return err
	}
	return errHelpShown
}

// maxUsageColumn is the widest usage that shares a line with its summary
// in the command list.
const maxUsageColumn = 20

// usage is a command's name and arguments, as the command list shows them.
func usage(c *command) string {
	return strings.TrimSpace(c.name + " " + c.args)
}

// writeCommandHelp prints one command's help: synopsis, detail and flags.
// fs is the command's flag set.
func writeCommandHelp(w *bufio.Writer, c *command, fs *flag.FlagSet) error {
	fmt.Fprintf(w, "Usage: kvcli %s\n\n%s\n", synopsis(c), c.summary)
	if c.detail != "" {
		fmt.Fprintf(w, "\n%s\n", c.detail)
	}
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n == 0 {
		return nil
	}
	fmt.Fprintf(w, "\nFlags:\n")
	fs.SetOutput(w)
	fs.PrintDefaults()
	return nil
}
