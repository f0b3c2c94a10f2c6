package compaction_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/shale-db/shale/compaction"
	"github.com/shale-db/shale/internal/ikey"
	"github.com/shale-db/shale/internal/itertest"
	"github.com/shale-db/shale/sstable"
)

// memOutputs collects output tables in memory and reads them back.
type memOutputs struct {
	bufs   []*bytes.Buffer
	tables [][]itertest.KV
}

func (o *memOutputs) Create() (*sstable.Writer, error) {
	b := new(bytes.Buffer)
	o.bufs = append(o.bufs, b)
	return sstable.NewWriter(b, sstable.WriterOptions{BlockSize: 64}), nil
}

func (o *memOutputs) Finish(w *sstable.Writer) error {
	if err := w.Close(); err != nil {
		return err
	}
	b := o.bufs[len(o.bufs)-1]
	r, err := sstable.Open(bytes.NewReader(b.Bytes()), int64(b.Len()), sstable.ReaderOptions{})
	if err != nil {
		return err
	}
	var kvs []itertest.KV
	it := r.NewIter()
	for ok := it.First(); ok; ok = it.Next() {
		kvs = append(kvs, itertest.KV{Key: bytes.Clone(it.Key()), Value: bytes.Clone(it.Value())})
	}
	o.tables = append(o.tables, kvs)
	return it.Close()
}

func run(t *testing.T, f *compaction.Filter, target uint64, specs ...string) *memOutputs {
	t.Helper()
	out := new(memOutputs)
	if err := compaction.Run(itertest.FromStrings(specs...), f, compaction.RunOptions{TargetSize: target}, out); err != nil {
		t.Fatal(err)
	}
	return out
}

func flat(o *memOutputs) string {
	var all []itertest.KV
	for _, tb := range o.tables {
		all = append(all, tb...)
	}
	return itertest.Format(all)
}

func TestFilter(t *testing.T) {
	in := []string{
		"a#9,PUT:a9", "a#7,PUT:a7", "a#5,DEL", "a#3,PUT:a3",
		"b#8,DEL", "b#4,PUT:b4",
		"c#6,DEL",
		"d#2,PUT:d2",
	}
	for _, tc := range []struct {
		smallest   uint64
		bottommost bool
		want       string
	}{
		// No snapshot below the newest: only the newest version of each
		// key survives, and deletions go when nothing is below; the
		// puts left, the only versions there are, lose their sequence
		// numbers.
		{100, true, "a#0,PUT:a9 d#0,PUT:d2"},
		// Not bottommost: deletions must stay to hide older data below.
		{100, false, "a#9,PUT:a9 b#8,DEL: c#6,DEL: d#2,PUT:d2"},
		// A snapshot at 6 sees a as deleted, which stays true when a#5
		// goes with the a#3 it hid; b#8 is newer than the snapshot, so
		// b#4 stays (as b#0: every reader that sees b's put sees it),
		// and c#6's deletion goes. a#9 and a#7 keep their numbers: the
		// snapshot must not see them.
		{6, true, "a#9,PUT:a9 a#7,PUT:a7 b#8,DEL: b#0,PUT:b4 d#0,PUT:d2"},
		// A snapshot at 0 keeps everything.
		{0, true, strings.Join([]string{"a#9,PUT:a9 a#7,PUT:a7 a#5,DEL: a#3,PUT:a3",
			"b#8,DEL: b#4,PUT:b4 c#6,DEL: d#2,PUT:d2"}, " ")},
	} {
		t.Run(fmt.Sprint(tc.smallest, tc.bottommost), func(t *testing.T) {
			got := flat(run(t, &compaction.Filter{SmallestSnapshot: tc.smallest, Bottommost: tc.bottommost}, 1<<20, in...))
			if got != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

// Tables split at the target size, never inside one user key's versions.
func TestRunSplitsAtUserKeys(t *testing.T) {
	var specs []string
	for i := range 200 {
		for seq := 3; seq >= 1; seq-- {
			specs = append(specs, fmt.Sprintf("key%04d#%d,PUT:%s", i, 1000*seq+i, strings.Repeat("v", 20)))
		}
	}
	out := run(t, &compaction.Filter{SmallestSnapshot: 0}, 512, specs...)
	if len(out.tables) < 5 {
		t.Fatalf("%d tables from ~16 KiB at a 512-byte target", len(out.tables))
	}
	n := 0
	for i, tb := range out.tables {
		n += len(tb)
		if i > 0 {
			prev := out.tables[i-1]
			if bytes.Equal(ikey.UserKey(prev[len(prev)-1].Key), ikey.UserKey(tb[0].Key)) {
				t.Fatalf("user key %s spans tables %d and %d", ikey.UserKey(tb[0].Key), i-1, i)
			}
		}
	}
	if n != len(specs) {
		t.Fatalf("%d entries out, %d in (a snapshot at 0 keeps all)", n, len(specs))
	}
}

func TestRunEmptyAndAllDropped(t *testing.T) {
	if out := run(t, &compaction.Filter{SmallestSnapshot: 9, Bottommost: true}, 1<<20); len(out.tables) != 0 {
		t.Fatal("an empty input made a table")
	}
	out := run(t, &compaction.Filter{SmallestSnapshot: 9, Bottommost: true}, 1<<20, "a#3,DEL", "b#2,DEL")
	if len(out.tables) != 0 {
		t.Fatalf("only droppable deletions made %d tables", len(out.tables))
	}
}

func TestRunPropagatesInputError(t *testing.T) {
	in := itertest.FromStrings("a#1,PUT:x", "b#1,PUT:y", "c#1,PUT:z").FailAfter(2, fmt.Errorf("disk on fire"))
	err := compaction.Run(in, &compaction.Filter{}, compaction.RunOptions{TargetSize: 1 << 20}, new(memOutputs))
	if err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("Run = %v, want the input's error", err)
	}
}
