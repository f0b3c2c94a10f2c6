package main

import (
	"bytes"
	"flag"
	"fmt"

	"github.com/shale-db/shale"
)

var scanCmd = &command{
	name:    "scan",
	summary: "print entries in key order, KEY<TAB>VALUE lines",
	detail: `Prints one line per entry, in key order: the key, a tab, the value,
escaped as "kvcli help escaping" describes (hex with --hex), or JSON lines
with --json. --prefix, --start and --end restrict the keys (start
inclusive, end exclusive; all three combine); they are taken as given, or
per --hex or --escaped. --start after --end is an error. Opens the database read-only.`,
	run: func(e *env, c *command, args []string) error { return runScan(e, c, args, false) },
}

// scanFlags are the flags of scan and dump.
type scanFlags struct {
	prefix, start, end string
	limit              int
	reverse, keysOnly  bool
	json               bool
	set                map[string]bool // the flags given
}

func (f *scanFlags) register(fs *flag.FlagSet, dump bool) {
	fs.StringVar(&f.prefix, "prefix", "", "only keys that start with `PREFIX`")
	fs.StringVar(&f.start, "start", "", "only keys >= `KEY`")
	fs.StringVar(&f.end, "end", "", "only keys < `KEY`")
	fs.BoolVar(&f.json, "json", false, "write JSON lines (see kvcli help escaping)")
	if !dump {
		fs.IntVar(&f.limit, "limit", 0, "stop after `N` entries (0: no limit)")
		fs.BoolVar(&f.reverse, "reverse", false, "descending key order")
		fs.BoolVar(&f.keysOnly, "keys-only", false, "print keys only")
	}
}

// bounds returns the iterator bounds the range flags describe. --start
// after --end is a usage error; --start equal to --end, or a --prefix
// outside [--start, --end), selects nothing.
func (f *scanFlags) bounds(e *env) (*shale.IterOptions, error) {
	o := &shale.IterOptions{}
	if f.set["start"] {
		k, err := e.arg("--start", f.start)
		if err != nil {
			return nil, err
		}
		o.LowerBound = k
	}
	if f.set["end"] {
		k, err := e.arg("--end", f.end)
		if err != nil {
			return nil, err
		}
		o.UpperBound = k
	}
	if o.LowerBound != nil && o.UpperBound != nil && bytes.Compare(o.LowerBound, o.UpperBound) > 0 {
		return nil, usageError(fmt.Sprintf("--start %s is after --end %s: the range is reversed",
			e.show(o.LowerBound), e.show(o.UpperBound)))
	}
	if f.set["prefix"] {
		p, err := e.arg("--prefix", f.prefix)
		if err != nil {
			return nil, err
		}
		po := shale.PrefixOptions(p)
		if bytes.Compare(po.LowerBound, o.LowerBound) > 0 {
			o.LowerBound = po.LowerBound
		}
		if po.UpperBound != nil && (o.UpperBound == nil || bytes.Compare(po.UpperBound, o.UpperBound) < 0) {
			o.UpperBound = po.UpperBound
		}
	}
	return o, nil
}

func runScan(e *env, c *command, args []string, dump bool) (err error) {
	var f scanFlags
	fs := e.newFlagSet(c.name)
	f.register(fs, dump)
	if _, err := e.parse(c, fs, args, 0, 0); err != nil {
		return err
	}
	f.set = map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { f.set[fl.Name] = true })
	if f.limit < 0 {
		return usageError("scan: --limit must not be negative")
	}
	opts, err := f.bounds(e)
	if err != nil {
		return err
	}
	db, err := e.openRead()
	if err != nil {
		return err
	}
	defer closeDB(db, &err)
	var w recordWriter = &textWriter{w: e.stdout, hex: e.hex, keysOnly: f.keysOnly}
	if f.json {
		w = newJSONWriter(e.stdout, e.hex, f.keysOnly)
	}
	if opts.UpperBound != nil && bytes.Compare(opts.LowerBound, opts.UpperBound) >= 0 {
		return nil // an empty range
	}
	entries := db.All(opts)
	if f.reverse {
		entries = db.Backward(opts)
	}
	var p *progress
	if dump {
		p = e.newProgress("dumped")
		defer p.done()
	}
	n := 0
	for ent, err := range entries {
		if err != nil {
			return failure(err)
		}
		if err := w.write(ent.Key, ent.Value); err != nil {
			return failure(err)
		}
		n++
		p.add(1)
		if n == f.limit {
			break
		}
	}
	return nil
}
