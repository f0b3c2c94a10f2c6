package raftstore_test

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/shale-db/shale/raftstore"
)

// crashChild runs in the re-executed test binary: it appends entries and
// deletes prefixes and suffixes until killed, printing each operation
// before it starts ("B ...") and "A" once it has returned. An entry's data
// is "index/term", and every StoreLogs call has a term of its own.
func crashChild(dir string, seed uint64) {
	s, err := raftstore.New(dir, nil)
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(1)
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	gen := seed * 1000000 // each round's terms differ from every other round's
	for {
		first, _ := s.FirstIndex()
		last, _ := s.LastIndex()
		gen++
		switch r := rng.IntN(100); {
		case last-first > 20000 && r < 50:
			hi := last - 1000
			fmt.Printf("B D %d %d\n", first, hi)
			if err := s.DeleteRange(first, hi); err != nil {
				fmt.Println("ERR", err)
				os.Exit(1)
			}
		case last > first+10 && r < 3:
			lo := last - uint64(rng.IntN(5))
			fmt.Printf("B D %d %d\n", lo, last)
			if err := s.DeleteRange(lo, last); err != nil {
				fmt.Println("ERR", err)
				os.Exit(1)
			}
		default:
			n := 1 + rng.IntN(64)
			start := last + 1
			var logs []*raft.Log
			for i := range n {
				idx := start + uint64(i)
				logs = append(logs, &raft.Log{Index: idx, Term: gen, Data: []byte(fmt.Sprintf("%d/%d", idx, gen))})
			}
			fmt.Printf("B S %d %d %d\n", start, start+uint64(n)-1, gen)
			if err := s.StoreLogs(logs); err != nil {
				fmt.Println("ERR", err)
				os.Exit(1)
			}
		}
		fmt.Println("A")
	}
}

type crashModel struct {
	terms       map[uint64]uint64
	first, last uint64
}

func (m *crashModel) clone() *crashModel {
	c := &crashModel{terms: make(map[uint64]uint64, len(m.terms)), first: m.first, last: m.last}
	for k, v := range m.terms {
		c.terms[k] = v
	}
	return c
}

func (m *crashModel) apply(f []string) {
	a, _ := strconv.ParseUint(f[2], 10, 64)
	b, _ := strconv.ParseUint(f[3], 10, 64)
	if f[1] == "S" {
		g, _ := strconv.ParseUint(f[4], 10, 64)
		if len(m.terms) == 0 {
			m.first = a
		}
		for i := a; i <= b; i++ {
			m.terms[i] = g
		}
		m.last = b
		return
	}
	for i := a; i <= b; i++ {
		delete(m.terms, i)
	}
	if len(m.terms) == 0 {
		m.first, m.last = 0, 0
	} else if a <= m.first {
		m.first = b + 1
	} else {
		m.last = a - 1
	}
}

// TestCrashMidStoreLogs: a child process appends and deletes until it is
// killed with SIGKILL, at a random moment, eight times over on one store.
// Each time the store reopens to the state after every acknowledged
// operation, or that state with the operation in flight applied whole
// (prefix deletions of more than one batch included): the same bounds, and
// every entry in them with its index, term and data.
func TestCrashMidStoreLogs(t *testing.T) {
	if d := os.Getenv("RAFTSTORE_CRASH_CHILD"); d != "" {
		seed, _ := strconv.ParseUint(os.Getenv("RAFTSTORE_CRASH_SEED"), 10, 64)
		crashChild(d, seed)
		return
	}
	dir := t.TempDir()
	m := &crashModel{terms: map[uint64]uint64{}}
	rng := rand.New(rand.NewPCG(3, 4))
	for round := 1; round <= 8; round++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashMidStoreLogs$")
		cmd.Env = append(os.Environ(), "RAFTSTORE_CRASH_CHILD="+dir, fmt.Sprintf("RAFTSTORE_CRASH_SEED=%d", round))
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.AfterFunc(time.Duration(300+rng.IntN(900))*time.Millisecond, func() { cmd.Process.Signal(syscall.SIGKILL) })
		var inflight []string
		sc := bufio.NewScanner(out)
		ops := 0
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			switch {
			case len(f) > 0 && f[0] == "B":
				inflight = f
			case len(f) > 0 && f[0] == "A":
				m.apply(inflight)
				inflight = nil
				ops++
			case len(f) > 0 && f[0] == "ERR":
				t.Fatalf("child: %s", sc.Text())
			}
		}
		cmd.Wait()
		s, err := raftstore.New(dir, nil)
		if err != nil {
			t.Fatalf("round %d: New after kill: %v", round, err)
		}
		first, _ := s.FirstIndex()
		last, _ := s.LastIndex()
		cands := []*crashModel{m}
		if inflight != nil {
			n := m.clone()
			n.apply(inflight)
			cands = append(cands, n)
		}
		var got *crashModel
		for _, c := range cands {
			if c.first == first && c.last == last {
				got = c
			}
		}
		if got == nil {
			s.Close()
			t.Fatalf("round %d (%d ops, in flight %v): bounds [%d, %d], want [%d, %d] or the in-flight op's", round, ops, inflight, first, last, m.first, m.last)
		}
		for i := first; last != 0 && i <= last; i++ {
			var l raft.Log
			if err := s.GetLog(i, &l); err != nil {
				s.Close()
				t.Fatalf("round %d: GetLog(%d): %v", round, i, err)
			}
			if l.Index != i || l.Term != got.terms[i] || string(l.Data) != fmt.Sprintf("%d/%d", i, got.terms[i]) {
				s.Close()
				t.Fatalf("round %d: entry %d = %d/%d %q, want term %d", round, i, l.Index, l.Term, l.Data, got.terms[i])
			}
		}
		if first > 1 {
			if err := s.GetLog(first-1, new(raft.Log)); err != raft.ErrLogNotFound {
				t.Fatalf("GetLog(first-1) = %v", err)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		m = got
		t.Logf("round %d: %d ops acknowledged, bounds [%d, %d], in flight %v", round, ops, first, last, inflight)
	}
}
