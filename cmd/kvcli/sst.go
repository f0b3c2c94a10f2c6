package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/shale-db/shale/internal/ikey"
	"github.com/shale-db/shale/sstable"
)

var sstCmd = &command{
	name:    "sst",
	args:    "dump FILE",
	summary: "list a table's footer, blocks, entries and properties",
	detail: `"sst dump FILE" lists the table FILE (.ldb or .sst): its footer, its
metaindex, each block (kind, offset+length, compression, decoded size,
entries, whether its checksum holds and it decodes), each entry as
"KEY#SEQ,KIND<TAB>VALUE" (escaped as scan's output is; values longer than
64 bytes cut short unless --full), and the table's properties: entry
counts, sequence number range, smallest and largest keys. --no-entries
leaves the entries out. Works on LevelDB's and goleveldb's tables too.
Reads the file only.

A FILE without a directory part is taken inside --db, when it is given.
A directory, or a file that is plainly of another kind (a log, a MANIFEST,
CURRENT), is refused with exit status 2; a file that does not end in a
table's footer is reported with exit status 3.`,
	run: runSST,
}

func runSST(e *env, c *command, args []string) error {
	fs := e.newFlagSet(c.name)
	full := fs.Bool("full", false, "print whole values")
	noEntries := fs.Bool("no-entries", false, "leave out the entries")
	file, err := e.parseDump(c, fs, args)
	if err != nil {
		return err
	}
	if file, err = e.dumpFile(file, kindTable); err != nil {
		return err
	}
	if fi, err := os.Stat(file); err == nil && !endsAsTable(file, fi.Size()) {
		return failuref("%s does not end in a table's footer and magic number: it is not a table, or its end is damaged", file)
	}
	t, closeTable, err := openTable(file)
	if err != nil {
		return err
	}
	defer closeTable()
	l, err := t.Layout()
	if l != nil {
		e.writeLayout(filepath.Base(file), l)
	}
	if err != nil {
		return failure(err)
	}
	if rd := t.RangeDels(); len(rd) > 0 {
		w := e.stdout
		fmt.Fprintf(w, "range deletions: %d spans (LevelDB and goleveldb do not read them: the directory is marked)\n", len(rd))
		for _, sp := range rd {
			fmt.Fprintf(w, "  [%s, %s) deleted at sequence numbers %v\n", e.show(sp.Start), e.show(sp.End), sp.Seqs)
		}
	}
	return e.writeEntries(t, !*noEntries, *full)
}

// openTable opens the table file at path.
func openTable(path string) (*sstable.Reader, func(), error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, failure(err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, failure(err)
	}
	t, err := sstable.Open(f, fi.Size(), sstable.ReaderOptions{FileName: filepath.Base(path)})
	if err != nil {
		f.Close()
		return nil, nil, failure(err)
	}
	return t, func() { t.Close(); f.Close() }, nil
}

var compressionNames = map[int]string{-1: "?", 0: "none", 1: "snappy", 2: "zstd"}

// writeLayout prints the footer, the metaindex and the blocks.
func (e *env) writeLayout(name string, l *sstable.Layout) {
	w := e.stdout
	fmt.Fprintf(w, "%s: %d bytes\n", name, l.Size)
	fmt.Fprintf(w, "footer: metaindex %s, index %s\n", l.Footer.MetaIndex, l.Footer.Index)
	fmt.Fprintf(w, "metaindex: %d entries\n", len(l.MetaIndex))
	for _, m := range l.MetaIndex {
		if m.Valid {
			fmt.Fprintf(w, "  %s -> %s\n", escape([]byte(m.Name)), m.Handle)
		} else {
			fmt.Fprintf(w, "  %s -> (not a block handle)\n", escape([]byte(m.Name)))
		}
	}
	if l.FilterName != "" {
		fmt.Fprintf(w, "filter: %s\n", l.FilterName)
	} else {
		fmt.Fprintf(w, "filter: none used\n")
	}
	fmt.Fprintf(w, "blocks: %d\n", len(l.Blocks))
	for _, b := range l.Blocks {
		entries := strconv.Itoa(b.Entries)
		if b.Kind == "filter" {
			entries = "-"
		}
		fmt.Fprintf(w, "  %-9s @%-16s %-6s %7d bytes decoded %6s entries  %s", b.Kind, b.Handle,
			compressionNames[b.Compression], b.DecodedLen, entries, blockStatus(b.Err))
		if b.IndexKey != nil {
			fmt.Fprintf(w, "  (index key %s)", e.ikeyString(b.IndexKey))
		}
		w.WriteByte('\n')
	}
}

func blockStatus(err error) string {
	if err == nil {
		return "ok"
	}
	return "DAMAGED: " + describe(err)
}

// ikeyString formats an internal key as "KEY#SEQ,KIND", the user key
// escaped (or hex).
func (e *env) ikeyString(k []byte) string { return formatIkey(k, e.show) }

// tableProps are the properties sst dump computes from the entries.
type tableProps struct {
	entries, puts, dels  int
	keyBytes, valueBytes int64
	minSeq, maxSeq       uint64
	smallest, largest    []byte
}

// writeEntries prints the entries (if show) and then the properties.
func (e *env) writeEntries(t *sstable.Reader, show, full bool) error {
	w := e.stdout
	if show {
		w.WriteString("entries:\n")
	}
	var p tableProps
	it := t.NewIter()
	for ok := it.First(); ok; ok = it.Next() {
		k, v := it.Key(), it.Value()
		p.add(k, v)
		if show {
			fmt.Fprintf(w, "  %s\t%s\n", e.ikeyString(k), e.clip(v, full))
		}
	}
	err := it.Err()
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	e.writeProps(w, &p)
	if err != nil {
		return failure(err)
	}
	return nil
}

func (p *tableProps) add(k, v []byte) {
	if p.entries == 0 {
		p.smallest = append([]byte(nil), k...)
		p.minSeq = ikey.Seq(k)
	}
	p.largest = append(p.largest[:0], k...)
	p.entries++
	p.keyBytes += int64(len(k))
	p.valueBytes += int64(len(v))
	seq := ikey.Seq(k)
	p.minSeq, p.maxSeq = min(p.minSeq, seq), max(p.maxSeq, seq)
	if ikey.KindOf(k) == ikey.KindDelete {
		p.dels++
	} else {
		p.puts++
	}
}

func (e *env) writeProps(w *bufio.Writer, p *tableProps) {
	fmt.Fprintf(w, "properties:\n  entries: %d (%d puts, %d deletions)\n", p.entries, p.puts, p.dels)
	fmt.Fprintf(w, "  key bytes: %d, value bytes: %d\n", p.keyBytes, p.valueBytes)
	if p.entries > 0 {
		fmt.Fprintf(w, "  sequence numbers: %d..%d\n", p.minSeq, p.maxSeq)
		fmt.Fprintf(w, "  smallest: %s\n  largest: %s\n", e.ikeyString(p.smallest), e.ikeyString(p.largest))
	}
}
