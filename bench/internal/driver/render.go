package driver

import (
	"fmt"
	"io"
	"runtime/debug"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/shale-db/shale/bench/internal/kv"
	"github.com/shale-db/shale/bench/internal/worker"
)

// NA marks a figure that does not apply (no writes, no latency, no ratio).
const NA = "-"

// table is a header and rows of cells, rendered as text or Markdown.
type table struct {
	header []string
	rows   [][]string
}

// peers returns the selected stores other than shale, or none if shale was
// not selected (there is then no ratio to print).
func (r *Report) peers() []string {
	var out []string
	hasShale := false
	for _, s := range r.Stores {
		if s == "shale" {
			hasShale = true
		} else {
			out = append(out, s)
		}
	}
	if !hasShale {
		return nil
	}
	return out
}

// ratio returns shale's median throughput over the store's, as text.
func (r *Report) ratio(workload, store string) string {
	peer := r.Cells[workload][store].Median.Throughput
	shale, ok := r.Cells[workload]["shale"]
	if store == "shale" || !ok || peer <= 0 {
		return NA
	}
	q := shale.Median.Throughput / peer
	if q < 0.1 {
		// Two decimals would print a lopsided ratio (bbolt's Open at a
		// tiny n is 200 times shale's) as 0.00.
		return sig3(q)
	}
	return fmt.Sprintf("%.2f", q)
}

// summaryTable has a row per workload: each store's median throughput, then
// shale's ratio to each peer.
func (r *Report) summaryTable() table {
	t := table{header: append([]string{"workload", "unit"}, r.Stores...)}
	for _, p := range r.peers() {
		t.header = append(t.header, "shale/"+p)
	}
	for _, wname := range r.Workloads {
		w, _ := worker.Lookup(wname)
		row := []string{wname, w.Unit}
		for _, s := range r.Stores {
			if !w.Runs(s) {
				row = append(row, NA)
				continue
			}
			row = append(row, formatRate(r.Cells[wname][s].Median.Throughput))
		}
		for _, p := range r.peers() {
			row = append(row, r.ratio(wname, p))
		}
		t.rows = append(t.rows, row)
	}
	return t
}

// DetailHeader is the header of the table of every figure.
var DetailHeader = []string{"workload", "store", "throughput", "time", "shale/store",
	"RSS MiB", "anon MiB", "disk MiB", "puts", "WA", "WA dev", "p50", "p99", "p99.9", "p99.99", "max", "found"}

// detailTable has a row per workload and store with every figure.
func (r *Report) detailTable() table {
	t := table{header: DetailHeader}
	for _, wname := range r.Workloads {
		w, _ := worker.Lookup(wname)
		for _, s := range r.Stores {
			if !w.Runs(s) {
				continue
			}
			c := r.Cells[wname][s]
			m := c.Median
			row := []string{wname, s, formatRate(m.Throughput),
				formatDuration(time.Duration(m.Seconds * float64(time.Second))), r.ratio(wname, s),
				formatMiB(m.PeakRSS), formatMiB(m.PeakAnon), formatMiB(m.DiskBytes)}
			if w.Writes {
				row = append(row, formatRate(m.Writes), sig3(m.WriteAmp), sig3(m.DeviceAmp))
			} else {
				row = append(row, NA, NA, NA)
			}
			if l := m.Latency; l != nil {
				for _, d := range []time.Duration{l.P50, l.P99, l.P999, l.P9999, l.Max} {
					row = append(row, formatDuration(d))
				}
			} else {
				row = append(row, NA, NA, NA, NA, NA)
			}
			t.rows = append(t.rows, append(row, found(w, c)))
		}
	}
	return t
}

// found is the share of lookups that found their key; for recovery, in how
// many passes the last acknowledged put survived the kill, and the least
// share, over the passes, of the acknowledged keys that did.
func found(w worker.Workload, c *Cell) string {
	switch {
	case c.Median.ConflictShare > 0:
		return fmt.Sprintf("%.2f%% conflicts", 100*c.Median.ConflictShare)
	case !w.Reads:
		return NA
	case w.Name == "recovery":
		kept, least := 0, 1.0
		for _, s := range c.Samples {
			kept += int(s.Found)
			least = min(least, ratio(s.Kept, s.Acked))
		}
		return fmt.Sprintf("kept %d/%d, keys ≥ %.1f%%", kept, len(c.Samples), 100*least)
	}
	return fmt.Sprintf("%.1f%%", 100*c.Median.FoundShare)
}

// heading is the report's first lines.
func (r *Report) heading() []string {
	return []string{
		fmt.Sprintf("shale benchmark: n=%d, %d passes (median reported), seed %d, run %s, took %s",
			r.N, r.Passes, r.Seed, r.Started.UTC().Format("2006-01-02 15:04 MST"), r.Took.Round(time.Second)),
		"machine: " + r.Machine.String(),
		"stores: " + storeVersions(),
		r.cacheLine(),
	}
}

// cacheLine says how the block caches were sized.
func (r *Report) cacheLine() string {
	if r.CacheMiB > 0 {
		return fmt.Sprintf("block caches: %d MiB for every store (-cache), but readrandom4x's; bbolt has none", r.CacheMiB)
	}
	return "block caches: each store's default (see the notes)"
}

// storeVersions names the version of each store compiled in.
func storeVersions() string {
	paths := map[string]string{
		"goleveldb": "github.com/syndtr/goleveldb", "pebble": "github.com/cockroachdb/pebble/v2",
		"badger": "github.com/dgraph-io/badger/v4", "bbolt": "go.etcd.io/bbolt",
	}
	var out []string
	bi, ok := debug.ReadBuildInfo()
	for _, name := range kv.Names {
		v := "(this tree)"
		if ok && paths[name] != "" {
			v = "unknown"
			for _, dep := range bi.Deps {
				if dep.Path == paths[name] {
					v = dep.Version
				}
			}
		}
		out = append(out, name+" "+v)
	}
	return strings.Join(out, ", ")
}

// WriteText writes the report as aligned plain text.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	for _, l := range r.heading() {
		b.WriteString(l + "\n")
	}
	for _, t := range []table{r.summaryTable(), r.detailTable()} {
		b.WriteString("\n")
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		for _, row := range append([][]string{t.header}, t.rows...) {
			fmt.Fprintln(tw, strings.Join(row, "\t"))
		}
		tw.Flush()
	}
	b.WriteString("\nnotes:\n")
	for _, n := range Notes {
		b.WriteString("- " + n + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteMarkdown writes the report as Markdown, to paste into a README.
func (r *Report) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	for _, l := range r.heading() {
		b.WriteString(l + "  \n")
	}
	for _, t := range []table{r.summaryTable(), r.detailTable()} {
		b.WriteString("\n")
		writeMarkdownRow(&b, t.header)
		sep := make([]string, len(t.header))
		for i := range sep {
			sep[i] = "---"
			if i >= 2 {
				sep[i] = "---:"
			}
		}
		writeMarkdownRow(&b, sep)
		for _, row := range t.rows {
			writeMarkdownRow(&b, row)
		}
	}
	b.WriteString("\n")
	for _, n := range Notes {
		b.WriteString("- " + n + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeMarkdownRow(b *strings.Builder, cells []string) {
	b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
}
