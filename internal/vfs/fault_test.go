package vfs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"syscall"
	"testing"
)

func TestFaultFSFailsTheNthCallOfAKind(t *testing.T) {
	m := NewMem()
	f := NewFault(m, FailNth(OpWrite, 2, syscall.ENOSPC))
	file, err := f.Create("/a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := file.Write([]byte("one")); err != nil {
		t.Fatalf("first write: %v", err)
	}
	_, err = file.Write([]byte("two"))
	var pe *os.PathError
	if !errors.As(err, &pe) || pe.Op != "write" || pe.Path != "/a" || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("second write: %v; want a *PathError write /a matching ENOSPC", err)
	}
	if _, err := file.Write([]byte("three")); err != nil {
		t.Fatalf("third write: %v", err)
	}
	file.Close()
	if got, want := string(memRead(t, m, "/a")), "onethree"; got != want {
		t.Fatalf("file holds %q, want %q: a failed write must write nothing", got, want)
	}
	if got := f.Count(OpWrite); got != 3 {
		t.Fatalf("Count(OpWrite) = %d, want 3", got)
	}
	if got := f.Total(); got != 5 { // create, 3 writes, close
		t.Fatalf("Total = %d, want 5", got)
	}
}

func TestFaultFSShortWriteWritesHalf(t *testing.T) {
	m := NewMem()
	f := NewFault(m, FailNth(OpWrite, 1, &ShortWriteError{Err: syscall.ENOSPC}))
	file, _ := f.Create("/a")
	n, err := file.Write([]byte("abcdefgh"))
	if n != 4 || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Write = %d, %v; want 4, ENOSPC", n, err)
	}
	file.Close()
	if got := string(memRead(t, m, "/a")); got != "abcd" {
		t.Fatalf("file holds %q, want %q", got, "abcd")
	}
}

func TestFaultFSDirectorySyncIsItsOwnKind(t *testing.T) {
	m := NewMem()
	f := NewFault(m, FailWhen(func(c Call) bool { return c.Op == OpSyncDir }, nil))
	file, _ := f.Create("/a")
	if err := file.Sync(); err != nil {
		t.Fatalf("file sync: %v", err)
	}
	d, err := f.OpenDir("/")
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Sync(); !errors.Is(err, ErrInjected) {
		t.Fatalf("directory sync: %v; want ErrInjected", err)
	}
	// A failed sync changed nothing durable: after a crash, no /a.
	if _, err := m.CrashClone().Stat("/a"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("after the failed directory sync and a crash, Stat(/a) = %v; want not exist", err)
	}
}

func TestFaultFSRandomIsRepeatable(t *testing.T) {
	run := func() []int {
		f := NewFault(NewMem(), FailRandomly(7, 0.3, nil, OpStat))
		var failed []int
		for i := range 50 {
			if _, err := f.Stat("/"); err != nil {
				failed = append(failed, i)
			}
		}
		return failed
	}
	a, b := run(), run()
	if len(a) == 0 || len(a) == 50 {
		t.Fatalf("p=0.3 failed %d of 50 calls", len(a))
	}
	if len(a) != len(b) {
		t.Fatalf("same seed, different faults: %v vs %v", a, b)
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("same seed, different faults: %v vs %v", a, b)
		}
	}
}

func memRead(t *testing.T, m *MemFS, name string) []byte {
	t.Helper()
	f, err := m.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRecorderInAChainSeesEveryCall(t *testing.T) {
	var rec Recorder
	f := NewFault(NewMem(), Chain(FailNth(OpRename, 1, syscall.EIO), rec.Inject))
	file, err := f.Create("/a")
	if err != nil {
		t.Fatal(err)
	}
	file.Write([]byte("x"))
	file.Close()
	err = f.Rename("/a", "/b")
	var le *os.LinkError
	if !errors.As(err, &le) || le.Old != "/a" || le.New != "/b" || !errors.Is(err, syscall.EIO) {
		t.Fatalf("Rename = %v; want an *os.LinkError /a /b matching EIO", err)
	}
	if err := f.Rename("/a", "/b"); err != nil {
		t.Fatalf("second Rename: %v", err)
	}
	var got []string
	for _, c := range rec.Calls() {
		got = append(got, fmt.Sprintf("%s #%d/%d", c, c.N, c.Seq))
	}
	want := []string{"create /a #1/1", "write /a #1/2", "close /a #1/3", "rename /a /b #1/4", "rename /a /b #2/5"}
	if !slices.Equal(got, want) {
		t.Fatalf("recorded %q, want %q (the failed rename included)", got, want)
	}
	if calls := rec.Take(); len(calls) != 5 || len(rec.Calls()) != 0 {
		t.Fatalf("Take returned %d calls and left %d", len(calls), len(rec.Calls()))
	}
}

func TestChainFailsWithTheFirstError(t *testing.T) {
	errA, errB := errors.New("a"), errors.New("b")
	var rec Recorder
	inj := Chain(FailSeq(1, errA), FailSeq(1, errB), rec.Inject)
	if err := inj(Call{Op: OpStat, Seq: 1}); err != errA {
		t.Fatalf("Chain = %v, want the first injector's error", err)
	}
	if err := inj(Call{Op: OpStat, Seq: 2}); err != nil {
		t.Fatalf("Chain = %v, want nil when no injector fails", err)
	}
	if n := len(rec.Calls()); n != 2 {
		t.Fatalf("the recorder behind failing injectors saw %d calls, want 2", n)
	}
}

func TestOpMutates(t *testing.T) {
	var mutating []string
	for op := range NumOps {
		if op.Mutates() {
			mutating = append(mutating, op.String())
		}
	}
	want := []string{"create", "remove", "rename", "link", "mkdirall", "lock", "write", "sync", "syncdir"}
	if !slices.Equal(mutating, want) {
		t.Fatalf("mutating kinds %q, want %q", mutating, want)
	}
}

func TestFaultFSLink(t *testing.T) {
	m := NewMem()
	var rec Recorder
	f := NewFault(m, Chain(rec.Inject, FailNth(OpLink, 1, syscall.ENOSPC)))
	file, _ := f.Create("/a")
	file.Write([]byte("data"))
	file.Close()
	err := f.Link("/a", "/b")
	var le *os.LinkError
	if !errors.As(err, &le) || le.Op != "link" || le.Old != "/a" || le.New != "/b" || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Link = %v; want an *os.LinkError link /a /b matching ENOSPC", err)
	}
	if _, err := m.Stat("/b"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a failed Link made /b: Stat = %v", err)
	}
	if err := f.Link("/a", "/b"); err != nil {
		t.Fatalf("second Link: %v", err)
	}
	if got := string(memRead(t, m, "/b")); got != "data" {
		t.Fatalf("/b holds %q", got)
	}
	calls := rec.Calls()
	if c := calls[len(calls)-1]; c.String() != "link /a /b" || c.N != 2 || f.Count(OpLink) != 2 {
		t.Fatalf("last call %v #%d, Count(OpLink) = %d", c, c.N, f.Count(OpLink))
	}
}

func TestFaultFSCallsNameTheirHandle(t *testing.T) {
	var rec Recorder
	f := NewFault(NewMem(), rec.Inject)
	w, _ := f.Create("/a")
	w.Write([]byte("x"))
	w.Sync()
	w.Close()
	r, _ := f.Open("/a")
	r.ReadAt(make([]byte, 1), 0)
	r.Close()
	d, _ := f.OpenDir("/")
	d.Sync()
	d.Close()
	var got []string
	for _, c := range rec.Calls() {
		switch c.Op {
		case OpWrite, OpSync, OpSyncDir, OpRead, OpClose:
			got = append(got, c.Op.String()+" on "+c.Handle.String())
		}
	}
	want := []string{"write on create", "sync on create", "close on create",
		"read on open", "close on open", "syncdir on opendir", "close on opendir"}
	if !slices.Equal(got, want) {
		t.Fatalf("calls %q, want %q", got, want)
	}
}
