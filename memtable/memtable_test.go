package memtable

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/shale-db/shale/internal/batchrepr"
	"github.com/shale-db/shale/internal/ikey"
)

// build returns a memtable holding the entries written as "ukey#seq,KIND"
// (values are "v" + seq).
func build(t testing.TB, keys ...string) *Memtable {
	t.Helper()
	m := New()
	for _, s := range keys {
		k := ikey.ParseString(s)
		ukey, seq, kind, _ := ikey.Parse(k)
		var v []byte
		if kind == ikey.KindSet {
			v = []byte(fmt.Sprintf("v%d", seq))
		}
		m.Add(seq, kind, ukey, v)
	}
	return m
}

func TestGet(t *testing.T) {
	m := build(t, "a#3,PUT", "a#7,DEL", "a#9,PUT", "b#5,PUT", "c#2,DEL", "#4,PUT")
	tests := []struct {
		ukey string
		seq  uint64
		want string // value, "DEL" or "-" (absent)
	}{
		{"a", 2, "-"}, // older than every version
		{"a", 3, "v3"},
		{"a", 6, "v3"},
		{"a", 7, "DEL"}, // the deletion hides a#3
		{"a", 8, "DEL"},
		{"a", 9, "v9"},
		{"a", ikey.MaxSeq, "v9"},
		{"a", 1 << 60, "v9"}, // beyond MaxSeq is clamped
		{"b", 4, "-"},
		{"b", 5, "v5"},
		{"c", 100, "DEL"},
		{"", 4, "v4"}, // empty user key
		{"", 3, "-"},
		{"aa", 100, "-"}, // between keys
		{"0", 100, "-"},  // before all
		{"d", 100, "-"},  // after all
	}
	for _, tc := range tests {
		v, found, deleted := m.Get([]byte(tc.ukey), tc.seq)
		got := "-"
		switch {
		case found && deleted:
			t.Fatalf("Get(%q, %d): found and deleted", tc.ukey, tc.seq)
		case found:
			got = string(v)
		case deleted:
			got = "DEL"
		}
		if got != tc.want {
			t.Errorf("Get(%q, %d) = %s, want %s", tc.ukey, tc.seq, got, tc.want)
		}
	}
}

func TestEmptyAndLargeValues(t *testing.T) {
	m := New()
	if !m.Empty() || m.Len() != 0 || m.ApproximateSize() != 0 {
		t.Fatal("new memtable not empty")
	}
	large := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB, own allocation
	m.Add(1, ikey.KindSet, []byte("big"), large)
	m.Add(2, ikey.KindSet, []byte("empty"), nil)
	m.Add(3, ikey.KindSet, nil, []byte{})
	if v, found, _ := m.Get([]byte("big"), 10); !found || !bytes.Equal(v, large) {
		t.Fatal("large value lost")
	}
	for _, k := range []string{"empty", ""} {
		if v, found, _ := m.Get([]byte(k), 10); !found || len(v) != 0 {
			t.Fatalf("Get(%q) = %q, %v", k, v, found)
		}
	}
	if m.Empty() || m.Len() != 3 {
		t.Fatalf("Len = %d", m.Len())
	}
	if got, min := m.ApproximateSize(), int64(len(large)); got < min {
		t.Fatalf("ApproximateSize %d < value size %d", got, min)
	}
}

func TestCopiesAndNeverModifies(t *testing.T) {
	m := New()
	k, v := []byte("key"), []byte("value")
	m.Add(1, ikey.KindSet, k, v)
	m.Add(2, ikey.KindSet, []byte("kez"), []byte("other"))
	copy(k, "XXX")
	copy(v, "YYYYY")
	got, found, _ := m.Get([]byte("key"), 5)
	if !found || string(got) != "value" {
		t.Fatalf("Get = %q: the memtable kept the caller's buffer", got)
	}
	_ = append(got, "!!!!!!!!!!!!"...) // must not reach the neighbouring entry
	it := m.NewIter()
	it.First()
	key := it.Key()
	_ = append(key, "!!!!!!!!"...) // must not reach the value
	it.Next()
	if string(it.Value()) != "other" || string(ikey.UserKey(it.Key())) != "kez" {
		t.Fatalf("neighbour damaged: %s = %q", ikey.String(it.Key()), it.Value())
	}
	if got2, _, _ := m.Get([]byte("key"), 5); string(got2) != "value" {
		t.Fatalf("value damaged: %q", got2)
	}
}

func TestApply(t *testing.T) {
	m := New()
	repr := batchrepr.AppendPut(nil, []byte("a"), []byte("1"))
	repr = batchrepr.AppendDelete(repr, []byte("b"))
	repr = batchrepr.AppendPut(repr, []byte("a"), []byte("2"))
	batchrepr.SetSeq(repr, 999) // ignored: Apply's seq rules
	if err := m.Apply(repr, 10); err != nil {
		t.Fatal(err)
	}
	want := []string{"a#12,PUT=2", "a#10,PUT=1", "b#11,DEL="}
	if got := dump(m); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("after Apply: %v, want %v", got, want)
	}

	bad := append([]byte(nil), repr...)
	batchrepr.SetCount(bad, 4)
	if err := m.Apply(bad, 20); !errors.Is(err, batchrepr.ErrCorrupt) {
		t.Fatalf("Apply(corrupt) = %v", err)
	}
	if err := m.Apply(repr, ikey.MaxSeq-1); err == nil {
		t.Fatal("Apply past MaxSeq succeeded")
	}
	if err := m.Apply(batchrepr.AppendPut(nil, nil, nil), ikey.MaxSeq); err != nil {
		t.Fatalf("Apply at MaxSeq: %v", err)
	}
	if m.Len() != 4 {
		t.Fatalf("a failed Apply added entries: Len = %d", m.Len())
	}
	if err := m.Apply(make([]byte, batchrepr.HeaderLen), 50); err != nil || m.Len() != 4 {
		t.Fatalf("empty batch: %v, Len %d", err, m.Len())
	}
}

// dump lists m's entries as "a#5,PUT=value".
func dump(m *Memtable) []string {
	var out []string
	it := m.NewIter()
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		out = append(out, ikey.String(it.Key())+"="+string(it.Value()))
	}
	return out
}

func TestReplace(t *testing.T) {
	m := New()
	m.Add(5, ikey.KindSet, []byte("k"), []byte("long first value"))
	m.Add(5, ikey.KindSet, []byte("k"), []byte("second"))
	if v, found, _ := m.Get([]byte("k"), 5); !found || string(v) != "second" || m.Len() != 1 {
		t.Fatalf("after replacing: %q, %v, Len %d", v, found, m.Len())
	}
	if want := int64(1 + ikey.TrailerLen + len("second") + entryOverhead); m.ApproximateSize() != want {
		t.Fatalf("ApproximateSize %d, want %d", m.ApproximateSize(), want)
	}
}

func TestApproximateSizeGrows(t *testing.T) {
	m := New()
	prev := m.ApproximateSize()
	for i := 0; i < 100; i++ {
		k, v := []byte(fmt.Sprintf("key%03d", i)), bytes.Repeat([]byte{'v'}, i)
		m.Add(uint64(i+1), ikey.KindSet, k, v)
		size := m.ApproximateSize()
		if min := prev + int64(len(k)+len(v)+ikey.TrailerLen); size < min {
			t.Fatalf("after entry %d: size %d, want >= %d", i, size, min)
		}
		prev = size
	}
}

// TestEntryOverhead checks that entryOverhead is near the heap the index
// actually takes per entry, and not below it, for keys added in order
// (leaves full) and in a scattered order (leaves' arrays mostly full), so
// that ApproximateSize tracks real memory without undercounting it.
func TestEntryOverhead(t *testing.T) {
	const n = 20_000
	for _, sequential := range []bool{true, false} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		m := New()
		var kv int64
		for i := 0; i < n; i++ {
			j := i
			if !sequential {
				j = i * 7919 % n
			}
			k := []byte(fmt.Sprintf("%016d", j))
			m.Add(uint64(i+1), ikey.KindSet, k, k)
			kv += int64(2*len(k) + ikey.TrailerLen)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		perEntry := (int64(after.HeapAlloc-before.HeapAlloc) - kv) / n
		t.Logf("sequential %v: heap per entry beyond its bytes: %d (entryOverhead %d)", sequential, perEntry, entryOverhead)
		if perEntry < entryOverhead*2/3 || perEntry > entryOverhead {
			t.Errorf("sequential %v: measured overhead %d bytes per entry, constant says %d", sequential, perEntry, entryOverhead)
		}
		if m.ApproximateSize() != kv+n*entryOverhead {
			t.Errorf("ApproximateSize %d, want %d", m.ApproximateSize(), kv+n*entryOverhead)
		}
		runtime.KeepAlive(m)
	}
}
