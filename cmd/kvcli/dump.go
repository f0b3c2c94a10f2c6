package main

var dumpCmd = &command{
	name:    "dump",
	summary: "write every entry in load's format",
	detail: `Writes every entry (or those --prefix, --start and --end select) in key
order, as KEY<TAB>VALUE lines escaped as "kvcli help escaping" describes,
or as JSON lines with --json; with --hex, keys and values are hex in either
form. "kvcli load" with the same --json and --hex reads it back, so that

    kvcli --db OLD dump | kvcli --db NEW load

copies a database exactly, whatever bytes its keys and values hold. Shows
progress on stderr when stderr is a terminal. Opens the database read-only.`,
	run: func(e *env, c *command, args []string) error { return runScan(e, c, args, true) },
}
