// Command kvcli uses, inspects and tortures a shale database (and a LevelDB
// or goleveldb one: the directory format is the same).
//
//	kvcli --db DIR put hello world
//	kvcli --db DIR get hello
//	kvcli --db DIR scan --prefix user/
//	kvcli --db DIR dump | kvcli --db COPY load
//	kvcli --db DIR check
//	kvcli wal dump DIR/000005.log
//	kvcli crashtest --cycles 10
//
// The database directory comes from --db or, failing that, the KVCLI_DB
// environment variable. Read commands (get, scan, dump, stats, check and the
// file dumps) change nothing on disk. "kvcli help" lists the commands,
// explains how keys and values are escaped, and gives the exit statuses:
// 0 success, 1 key not found, 2 usage error, 3 any other failure.
//
// Each subcommand lives in its own file, named after it.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"runtime/debug"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run executes one kvcli invocation and returns its exit status. Output to
// stdout is buffered and flushed before run returns.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	out := bufio.NewWriterSize(stdout, 64<<10)
	e := &env{stdin: stdin, stdout: out, rawStdout: stdout, stderr: stderr, db: os.Getenv("KVCLI_DB"), recovery: "skip"}
	err := e.dispatch(args)
	// Help that could not be written fails like any other output.
	if ferr := out.Flush(); (err == nil || err == errHelpShown) && ferr != nil {
		err = failure(ferr)
	}
	if err == nil || err == errHelpShown {
		return exitOK
	}
	fmt.Fprintln(stderr, errorLine(err))
	return exitCode(err)
}

// dispatch parses the global flags and runs the command they precede.
func (e *env) dispatch(args []string) error {
	fs := e.newFlagSet("kvcli")
	fs.Usage = func() {}
	version := fs.Bool("version", false, "print kvcli's version")
	if err := parseFlags(fs, args); err != nil {
		if err == errHelp {
			return writeHelp(e.stdout, nil)
		}
		return err
	}
	if *version {
		_, err := fmt.Fprintln(e.stdout, versionLine())
		return err
	}
	args = fs.Args()
	if len(args) == 0 {
		return usageError("no command: try \"kvcli help\"")
	}
	cmd := lookup(args[0])
	if cmd == nil {
		return usageError(fmt.Sprintf("unknown command %q: try \"kvcli help\"", args[0]))
	}
	return cmd.run(e, cmd, args[1:])
}

// versionLine describes this binary: the module it was built from, that
// module's version as the go command recorded it ("v1.2.0" from go install
// @v1.2.0; a pseudo-version or "(devel)" from a checkout), and the Go
// release that built it.
func versionLine() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "kvcli: no build information (built without module support)"
	}
	return fmt.Sprintf("kvcli %s %s (%s)", bi.Main.Path, bi.Main.Version, bi.GoVersion)
}
