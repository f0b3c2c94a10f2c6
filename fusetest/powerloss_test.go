package fusetest_test

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shale-db/shale"
	"github.com/shale-db/shale/fusetest"
)

// The power-loss tests: a child process writes to shale on a FUSE mount
// that records durability (see fusetest.Options.TrackDurability) and
// prints each acknowledgment before its next write. The parent SIGKILLs
// it at a random moment, cuts the power (FS.PowerCut: what fsyncs made
// durable, into a fresh directory), and opens shale there in each
// recovery mode. Every Sync write acknowledged, and every write
// acknowledged before it, must be there; every batch whole or absent;
// and, with one writer, what survives is a prefix of the writes.
//
// SHALE_POWERLOSS_CUTS=N sets the number of cuts of TestPowerLoss
// (default 20; TestPowerLossConcurrent makes half as many). The default
// is also bounded in time (powerLossBudget).

type plWriterSpec struct {
	Dir        string
	Work       workload
	Opts       dbOptions
	Goroutines int
}

// powerLossWriter writes until it is killed, printing
// "ack G I START END" after each acknowledged write.
func powerLossWriter(js string) error {
	var s plWriterSpec
	if err := json.Unmarshal([]byte(js), &s); err != nil {
		return err
	}
	db, err := shale.Open(s.Dir, s.Opts.options())
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	out := &lineWriter{}
	errc := make(chan error, s.Goroutines)
	for g := range s.Goroutines {
		go func() {
			for i := 0; ; i++ {
				start := fusetest.Now()
				if err := s.Work.write(g, i).apply(db); err != nil {
					errc <- fmt.Errorf("write %d/%d: %w", g, i, err)
					return
				}
				out.println("ack %d %d %d %d", g, i, start, fusetest.Now())
			}
		}()
	}
	return <-errc // only an error ends the writes: else the parent kills
}

// plAck is an acknowledged write of the power-loss writer.
type plAck struct {
	g, i       int
	start, end int64
}

// plStats adds up the cuts of a power-loss test.
type plStats struct {
	mu                                    sync.Mutex
	cuts, acked, syncAcked, covered, lost int
	// tables and logs count the files the cuts left, to show that
	// flushes and WAL switches happened before them.
	tables, logs, cutsWithTables int
}

func TestPowerLoss(t *testing.T) {
	requireFUSE(t)
	runPowerLoss(t, 1, powerLossCuts(t))
}

func TestPowerLossConcurrent(t *testing.T) {
	requireFUSE(t)
	runPowerLoss(t, 4, max(1, powerLossCuts(t)/2))
}

func powerLossCuts(t *testing.T) int {
	cuts := 20
	if s := os.Getenv("SHALE_POWERLOSS_CUTS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("SHALE_POWERLOSS_CUTS=%q: want a positive number", s)
		}
		cuts = n
	}
	return cuts
}

// powerLossBudget bounds the time a power-loss test spends on its
// default number of cuts.
const powerLossBudget = 40 * time.Second

func runPowerLoss(t *testing.T, goroutines, cuts int) {
	budget := time.Now().Add(powerLossBudget)
	if os.Getenv("SHALE_POWERLOSS_CUTS") != "" {
		budget = time.Time{} // as many as asked
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("SHALE_POWERLOSS_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (SHALE_POWERLOSS_SEED), %d cuts, %d writer goroutines", seed, cuts, goroutines)
	r := rand.New(rand.NewPCG(seed, 0))
	var st plStats
	for c := range cuts {
		if !budget.IsZero() && time.Now().After(budget) {
			t.Logf("time budget of %v spent after %d cuts", powerLossBudget, c)
			break
		}
		w := workload{Seed: seed + uint64(c), SyncEvery: 8}
		killAfter := time.Duration(20+r.IntN(700)) * time.Millisecond
		t.Run(fmt.Sprintf("cut%02d", c), func(t *testing.T) {
			powerCut(t, w, goroutines, killAfter, &st)
		})
	}
	t.Logf("%d cuts: %d writes acknowledged, %d of them Sync; %d covered by a Sync (must survive); %d lost; the cuts left %d tables (%d cuts had some) and %d WALs",
		st.cuts, st.acked, st.syncAcked, st.covered, st.lost, st.tables, st.cutsWithTables, st.logs)
	if st.cuts >= 5 && st.cutsWithTables == 0 {
		t.Errorf("no cut left a table: flushes were not exercised")
	}
}

// powerCut runs one writer, kills it killAfter its first
// acknowledgment, cuts the power and checks what survives in each
// recovery mode.
func powerCut(t *testing.T, w workload, goroutines int, killAfter time.Duration, st *plStats) {
	fsys := mount(t, &fusetest.Options{TrackDurability: true})
	spec := plWriterSpec{Dir: fsys.Mountpoint(), Work: w, Opts: smallDB, Goroutines: goroutines}
	c := startChild(t, "plwriter", spec, killAfter+time.Minute)
	var acks []plAck
	var kill *time.Timer
	for c.lines.Scan() {
		f := strings.Fields(c.lines.Text())
		if len(f) != 5 || f[0] != "ack" {
			t.Errorf("writer said %q", c.lines.Text())
			continue
		}
		var a plAck
		a.g, _ = strconv.Atoi(f[1])
		a.i, _ = strconv.Atoi(f[2])
		a.start, _ = strconv.ParseInt(f[3], 10, 64)
		a.end, _ = strconv.ParseInt(f[4], 10, 64)
		acks = append(acks, a)
		if kill == nil {
			kill = time.AfterFunc(killAfter, func() { c.cmd.Process.Kill() })
		}
	}
	killed, err := c.wait()
	if err != nil || !killed {
		t.Fatalf("writer did not die by our SIGKILL: %v (%d acks)", err, len(acks))
	}
	cut := t.TempDir()
	if err := fsys.PowerCut(cut); err != nil {
		t.Fatalf("power cut: %v", err)
	}
	tables, _ := filepath.Glob(filepath.Join(cut, "*.ldb"))
	logs, _ := filepath.Glob(filepath.Join(cut, "*.log"))
	var covered, lost int
	for _, mode := range []shale.RecoveryMode{shale.SkipCorrupt, shale.PointInTime, shale.Strict} {
		dir := t.TempDir()
		if err := copyDir(dir, cut); err != nil {
			t.Fatal(err)
		}
		c, l := checkPowerCut(t, dir, mode, w, goroutines, acks)
		covered, lost = c, max(lost, l)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	st.cuts++
	st.acked += len(acks)
	for _, a := range acks {
		if w.write(a.g, a.i).sync {
			st.syncAcked++
		}
	}
	st.covered += covered
	st.lost += lost
	st.tables += len(tables)
	st.logs += len(logs)
	if len(tables) > 0 {
		st.cutsWithTables++
	}
}

// checkPowerCut opens dir in mode and checks it against the
// acknowledgments; it returns how many writes a Sync covered and how
// many of those are missing.
func checkPowerCut(t *testing.T, dir string, mode shale.RecoveryMode, w workload, goroutines int, acks []plAck) (covered, lost int) {
	t.Helper()
	problems := 0
	problem := func(format string, args ...any) {
		t.Helper()
		if problems++; problems <= 10 {
			t.Errorf("%v: "+format, append([]any{mode}, args...)...)
		}
	}
	defer func() {
		if problems > 10 {
			t.Errorf("%v: ... and %d more problems", mode, problems-10)
		}
	}()
	opts := smallDB
	opts.Recovery = mode
	db, err := shale.Open(dir, opts.options())
	if err != nil {
		t.Errorf("%v: Open after the power cut: %v", mode, err)
		return 0, 0
	}
	defer func() {
		if err := db.Close(); err != nil {
			t.Errorf("%v: Close: %v", mode, err)
		}
	}()
	for _, lr := range db.Recovery().Logs {
		if lr.Damaged() || lr.MovedTo != "" {
			problem("a power cut with no damaged byte reported damage: %+v", lr)
		}
	}
	m, err := readAll(db)
	if err != nil {
		problem("read the database: %v", err)
		return 0, 0
	}
	// syncStart is when the last Sync write acknowledged started: every
	// write acknowledged before it must survive, and it too.
	var syncStart int64 = -1
	for _, a := range acks {
		if w.write(a.g, a.i).sync {
			syncStart = max(syncStart, a.start)
		}
	}
	keys := 0
	for g := range goroutines {
		var mine []plAck
		for _, a := range acks {
			if a.g == g {
				mine = append(mine, a)
			}
		}
		sort.Slice(mine, func(x, y int) bool { return mine[x].i < mine[y].i })
		firstAbsent := -1
		// Every acknowledged write, the one in flight and a few past it.
		for i := 0; i < len(mine)+4; i++ {
			wr := w.write(g, i)
			p := wr.presenceInMap(m)
			if p == whole {
				keys += len(wr.keys)
			}
			if i < len(mine) && (mine[i].end < syncStart || (wr.sync && mine[i].start <= syncStart)) {
				covered++
				if p != whole {
					lost++
					problem("LOST: write %d/%d (sync %v), acknowledged before a Sync write was: %v", g, i, wr.sync, p)
				}
			}
			switch {
			case p == partial || p == wrong:
				problem("write %d/%d (a batch of %d) survives %v", g, i, len(wr.keys), p)
			case p == whole && i > len(mine):
				problem("write %d/%d survives, but the writer had acknowledged only %d", g, i, len(mine))
			case p == absent && firstAbsent < 0:
				firstAbsent = i
			case p == whole && firstAbsent >= 0:
				problem("write %d/%d survives but write %d/%d before it does not: not a prefix", g, i, g, firstAbsent)
			}
		}
	}
	if keys != len(m) {
		problem("the database holds %d keys, the writes that survive %d", len(m), keys)
	}
	return covered, lost
}

// copyDir copies the regular files of src (recursively) into dst.
func copyDir(dst, src string) error {
	return filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		if fi.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(to)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
}
