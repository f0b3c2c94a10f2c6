package vfs_test

import (
	"strings"
	"testing"

	"github.com/shale-db/shale/internal/vfs"
)

// crashFixture returns a MemFS whose d/f holds "hello" synced and
// ", world" appended after, and whose d/o was overwritten since its sync.
func crashFixture(t *testing.T) *vfs.MemFS {
	fs := newMemDir(t)
	f, err := fs.Create("d/f")
	must(t, err)
	write(t, f, "hello")
	must(t, f.Sync())
	write(t, f, ", world")
	writeFile(t, fs, "d/o", "old contents")
	o, err := fs.Create("d/o") // truncated: the live contents no longer extend the durable ones
	must(t, err)
	write(t, o, "old contents, and more")
	writeFile(t, fs, "d/unlisted", "synced, entry not durable")
	syncDir(t, fs, "d")
	must(t, fs.Remove("d/unlisted")) // ... and its removal not durable either
	writeFile(t, fs, "d/new", "entry never synced")
	return fs
}

// TestMemCrashModes checks each mode's model over many seeds: what d/f
// may hold, that every outcome the model allows shows up, and what stays
// the same in every mode.
func TestMemCrashModes(t *testing.T) {
	const synced, appended = "hello", ", world"
	fs := crashFixture(t)
	for mode := range vfs.NumCrashModes {
		t.Run(mode.String(), func(t *testing.T) {
			kinds := map[string]int{}
			lengths := map[int]bool{}
			for seed := range uint64(300) {
				c := fs.CrashCloneWith(mode, seed)
				got := contents(t, c, "d/f")
				kind := classify(t, got, synced, appended)
				kinds[kind]++
				lengths[len(got)-len(synced)] = true
				if o := contents(t, c, "d/o"); o != "old contents" {
					t.Fatalf("seed %d: the overwritten file holds %q; want its durable contents", seed, o)
				}
				if u := contents(t, c, "d/unlisted"); u != "synced, entry not durable" {
					t.Fatalf("seed %d: d/unlisted holds %q", seed, u)
				}
				if n := contents(t, c, "d/new"); n != "<absent>" {
					t.Fatalf("seed %d: a file whose entry was never synced holds %q", seed, n)
				}
			}
			want := map[vfs.CrashMode][]string{
				vfs.CrashDropUnsynced: {"synced only"},
				vfs.CrashKeepPrefix:   {"synced only", "prefix", "all"},
				// d/f is too short to hold a sector boundary: no data is kept.
				vfs.CrashZeroTail: {"synced only", "zeros"},
				vfs.CrashAny:      {"synced only", "prefix", "all", "zeros"},
			}[mode]
			for _, k := range want {
				if kinds[k] == 0 {
					t.Errorf("no seed of 300 gave %q; outcomes %v", k, kinds)
				}
			}
			if len(kinds) != len(want) {
				t.Errorf("outcomes %v; want only %q", kinds, want)
			}
			if mode != vfs.CrashDropUnsynced && len(lengths) != len(appended)+1 {
				t.Errorf("kept lengths %v; want every one from 0 to %d", lengths, len(appended))
			}
		})
	}
}

// classify names what a crashed d/f holds beyond its synced contents, and
// fails the test if the model does not allow it.
func classify(t *testing.T, got, synced, appended string) string {
	t.Helper()
	rest, ok := strings.CutPrefix(got, synced)
	if !ok || len(rest) > len(appended) {
		t.Fatalf("crashed file holds %q: not %q and part of %q", got, synced, appended)
	}
	data := strings.TrimRight(rest, "\x00")
	zeros := len(rest) - len(data)
	if !strings.HasPrefix(appended, data) {
		t.Fatalf("crashed file holds %q: after %q, not a prefix of %q then zeros", got, synced, appended)
	}
	switch {
	case rest == "":
		return "synced only"
	case zeros == 0 && rest == appended:
		return "all"
	case zeros == 0:
		return "prefix"
	case data == "":
		return "zeros"
	}
	return "prefix then zeros"
}

// TestMemCrashZeroTailSectors: CrashZeroTail keeps data in whole sectors
// of the file, and zeros after it.
func TestMemCrashZeroTailSectors(t *testing.T) {
	fs := newMemDir(t)
	synced := strings.Repeat("s", 700)
	appended := strings.Repeat("0123456789", 300)
	f, err := fs.Create("d/f")
	must(t, err)
	write(t, f, synced)
	must(t, f.Sync())
	write(t, f, appended)
	syncDir(t, fs, "d")
	kinds := map[string]int{}
	for seed := range uint64(200) {
		got := contents(t, fs.CrashCloneWith(vfs.CrashZeroTail, seed), "d/f")
		kind := classify(t, got, synced, appended)
		kinds[kind]++
		kept := len(strings.TrimRight(got, "\x00"))
		if kept != len(synced) && kept%vfs.CrashSectorSize != 0 {
			t.Fatalf("seed %d: data kept up to byte %d, not a sector boundary", seed, kept)
		}
	}
	if kinds["zeros"] == 0 || kinds["prefix then zeros"] == 0 {
		t.Fatalf("outcomes %v; want both zeros alone and sectors of data then zeros", kinds)
	}
}

// TestMemCrashWithIsRepeatable: the same seed gives the same crash, over
// several files; another seed, some other.
func TestMemCrashWithIsRepeatable(t *testing.T) {
	fs := newMemDir(t)
	for _, name := range []string{"d/a", "d/b", "d/c"} {
		f, err := fs.Create(name)
		must(t, err)
		write(t, f, strings.Repeat(name, 50))
	}
	syncDir(t, fs, "d")
	state := func(c *vfs.MemFS) string {
		return contents(t, c, "d/a") + "|" + contents(t, c, "d/b") + "|" + contents(t, c, "d/c")
	}
	differ := false
	for seed := range uint64(20) {
		a := state(fs.CrashCloneWith(vfs.CrashAny, seed))
		if b := state(fs.CrashCloneWith(vfs.CrashAny, seed)); a != b {
			t.Fatalf("seed %d: two crashes differ:\n%q\n%q", seed, a, b)
		}
		differ = differ || a != state(fs.CrashCloneWith(vfs.CrashAny, seed+1000))
	}
	if !differ {
		t.Fatal("every seed gave the same crash")
	}
	if got := state(fs.CrashClone()); got != "||" {
		t.Fatalf("CrashClone kept unsynced bytes: %q", got)
	}
}

// TestMemCrashWithLinkDrawsOnce: a file durable under two names is one
// file after any crash.
func TestMemCrashWithLinkDrawsOnce(t *testing.T) {
	fs := newMemDir(t)
	f, err := fs.Create("d/f")
	must(t, err)
	must(t, fs.Link("d/f", "d/g"))
	syncDir(t, fs, "d")
	write(t, f, "some bytes never synced")
	for seed := range uint64(50) {
		c := fs.CrashCloneWith(vfs.CrashKeepPrefix, seed)
		if a, b := contents(t, c, "d/f"), contents(t, c, "d/g"); a != b {
			t.Fatalf("seed %d: the two names of one file hold %q and %q", seed, a, b)
		}
	}
}
