package main

import (
	"bufio"
	"io"

	"github.com/shale-db/shale"
)

var loadCmd = &command{
	name:    "load",
	summary: "write entries from stdin (dump's format) in batches",
	detail: `Reads KEY<TAB>VALUE lines (escaped as "kvcli help escaping" describes),
or JSON lines with --json, from stdin, and writes them in atomic batches of
--batch entries (and at most about 1 MiB). It ends with a flush of the
memtable to a table, so the whole load is durable when load returns. A malformed line stops the load
with an error naming it; the entries of the lines before it are written.
Creates the database if the directory holds none. Shows progress on stderr
when stderr is a terminal.`,
	run: runLoad,
}

// loadBatchBytes bounds the keys and values in one batch.
const loadBatchBytes = 1 << 20

func runLoad(e *env, c *command, args []string) (err error) {
	fs := e.newFlagSet(c.name)
	asJSON := fs.Bool("json", false, "read JSON lines")
	batchLen := fs.Int("batch", 1000, "write `N` entries per batch")
	if _, err := e.parse(c, fs, args, 0, 0); err != nil {
		return err
	}
	if *batchLen < 1 {
		return usageError("load: --batch must be at least 1")
	}
	db, err := e.openWrite()
	if err != nil {
		return err
	}
	defer closeDB(db, &err)
	rr := &recordReader{r: bufio.NewReaderSize(e.stdin, 64<<10), json: *asJSON, hex: e.hex}
	p := e.newProgress("loaded")
	defer p.done()
	l := &loader{db: db, max: *batchLen, p: p}
	for {
		k, v, rerr := rr.next()
		if rerr == io.EOF {
			return l.finish()
		}
		if rerr != nil {
			if err := l.finish(); err != nil {
				return err
			}
			return failuref("load: %w (the lines before it were loaded)", rerr)
		}
		if err := l.put(k, v); err != nil {
			return err
		}
	}
}

// loader groups entries into batches.
type loader struct {
	db      *shale.DB
	b       shale.Batch
	size    int // bytes of keys and values in b
	max     int // entries per batch
	written int // entries written with NoSync
	p       *progress
}

// put adds an entry, writing the batch when it is full.
func (l *loader) put(k, v []byte) error {
	l.b.Put(k, v)
	l.size += len(k) + len(v)
	if l.b.Len() < l.max && l.size < loadBatchBytes {
		return nil
	}
	if err := l.db.Write(&l.b, shale.NoSync); err != nil {
		return failure(err)
	}
	l.written += l.b.Len()
	l.p.add(l.b.Len())
	l.b.Reset()
	l.size = 0
	return nil
}

// finish writes the last batch, then flushes the memtable to a table, so
// that every entry loaded is durable, whichever log it went to.
func (l *loader) finish() error {
	if l.b.Len() > 0 {
		if err := l.db.Write(&l.b, shale.NoSync); err != nil {
			return failure(err)
		}
		l.written += l.b.Len()
		l.p.add(l.b.Len())
		l.b.Reset()
	}
	if l.written == 0 {
		return nil
	}
	if err := l.db.Flush(); err != nil {
		return failure(err)
	}
	return nil
}
