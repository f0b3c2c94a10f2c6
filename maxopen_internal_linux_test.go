package shale

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"

	"github.com/shale-db/shale/internal/ikey"
	"github.com/shale-db/shale/internal/manifest"
	"github.com/shale-db/shale/memtable"
)

const (
	nofileChildEnv = "SHALE_NOFILE_CHILD_DIR"
	manyL0Tables   = 600
)

// A database with more level-0 tables than the process may open files (an
// older version or goleveldb left it so) scans and reads under
// `ulimit -n 512` with the default options: the default MaxOpenFiles fits
// the limit, and an iterator over every table holds no more files than
// that. The scan runs in a child process whose soft limit is lowered.
func TestScanManyTablesUnderFileLimit(t *testing.T) {
	if dir := os.Getenv(nofileChildEnv); dir != "" {
		scanUnderFileLimit(t, dir)
		return
	}
	dir := t.TempDir()
	layManyL0Tables(t, dir)
	cmd := exec.Command(os.Args[0], "-test.run=^TestScanManyTablesUnderFileLimit$", "-test.count=1")
	cmd.Env = append(os.Environ(), nofileChildEnv+"="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child under a limit of 512 files: %v\n%s", err, out)
	}
}

// layManyL0Tables writes manyL0Tables one-key tables, all in level 0.
func layManyL0Tables(t *testing.T, dir string) {
	db, err := Open(dir, &Options{disableAutoCompactions: true})
	if err != nil {
		t.Fatal(err)
	}
	edit := &manifest.VersionEdit{}
	for i := range manyL0Tables {
		mem := memtable.New()
		// Every table spans key00000..zzz: they all overlap, so that a
		// scan merges them all at once.
		mem.Add(uint64(2*i+1), ikey.KindSet, []byte(fmt.Sprintf("key%05d", i)), []byte("value"))
		mem.Add(uint64(2*i+2), ikey.KindSet, []byte(fmt.Sprintf("zzz%05d", manyL0Tables-1-i)), []byte("value"))
		meta, err := db.writeTable(0, mem.NewIter(), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		edit.AddFile(0, meta)
	}
	edit.SetLastSequence(2 * manyL0Tables)
	err = db.logAndApply(edit)
	for _, nf := range edit.NewFiles {
		db.releaseOutputNums(nf.Meta.Num)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

func scanUnderFileLimit(t *testing.T, dir string) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		t.Fatal(err)
	}
	rl.Cur = 512
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		t.Fatal(err)
	}
	db, err := Open(dir, &Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if db.opts.MaxOpenFiles > 256 {
		t.Errorf("default MaxOpenFiles %d under a limit of 512 files", db.opts.MaxOpenFiles)
	}
	v := db.vs.Current()
	l0 := v.NumFiles(0)
	v.Unref()
	if l0 != manyL0Tables {
		t.Fatalf("level 0 holds %d tables, want %d", l0, manyL0Tables)
	}
	n := 0
	for e, err := range db.All(nil) {
		if err != nil {
			t.Fatalf("scan after %d keys: %v", n, err)
		}
		want := fmt.Sprintf("key%05d", n)
		if n >= manyL0Tables {
			want = fmt.Sprintf("zzz%05d", n-manyL0Tables)
		}
		if string(e.Key) != want {
			t.Fatalf("key %d is %q, want %q", n, e.Key, want)
		}
		n++
	}
	if n != 2*manyL0Tables {
		t.Fatalf("scanned %d keys, want %d", n, 2*manyL0Tables)
	}
	for _, i := range []int{0, 299, 599} {
		if _, err := db.Get([]byte(fmt.Sprintf("key%05d", i))); err != nil {
			t.Fatalf("Get key%05d: %v", i, err)
		}
	}
}
