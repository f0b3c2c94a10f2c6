package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/shale-db/shale"
)

var crashtestCmd = &command{
	name:    "crashtest",
	summary: "kill -9 a writer repeatedly; verify acknowledged writes",
	detail: `Runs the kill -9 test on this machine. For each of --cycles cycles it
starts a writer process (kvcli itself), whose --writers goroutines write
with a mix of Sync and NoSync puts, deletes and atomic batches, keys and
values of every kind, and acknowledge each write once it returned; it
kills the writer (SIGKILL; TerminateProcess on Windows) at a random moment
between --min-ms and --max-ms after its start; then it reopens the database (Strict recovery: a kill
may leave only a torn tail) and verifies every cycle so far: every
acknowledged write is there, nothing that was never written is, and the
batch under way at the kill is there wholly or not at all.

Prints a line per cycle and a summary "cycles: N, writes acknowledged: M,
writes lost: 0". Exit status 3 if a write was lost or anything else was
wrong. A kill -9 does not lose what the operating system holds, so this
tests the database's own logic (and NoSync writes must survive too); it
does not simulate a power loss.

The database is --db DIR if given (it must be empty or not exist yet),
otherwise a new temporary directory, removed after a successful run. The
workload is reproducible with --seed; the kill moments are not.`,
	run: runCrashtest,
}

// crashConfig is crashtest's flags.
type crashConfig struct {
	cycles, writers, maxOps int
	minDelay, maxDelay      time.Duration
	seed                    uint64
	keep                    bool
	fault                   string
}

func runCrashtest(e *env, c *command, args []string) (err error) {
	var cfg crashConfig
	fs := e.newFlagSet(c.name)
	fs.IntVar(&cfg.cycles, "cycles", 10, "kill and verify `N` times")
	fs.IntVar(&cfg.writers, "writers", 4, "writer goroutines in the writer process")
	fs.IntVar(&cfg.maxOps, "max-ops", 20000, "writes per goroutine and cycle, at most")
	minMs := fs.Int("min-ms", 0, "kill the writer no sooner than `MS` milliseconds after its start")
	maxMs := fs.Int("max-ms", 1000, "kill the writer within `MS` milliseconds of its start")
	fs.Uint64Var(&cfg.seed, "seed", 0, "workload seed (0: random)")
	fs.BoolVar(&cfg.keep, "keep", false, "keep the temporary directory")
	fs.StringVar(&cfg.fault, "fault", "", "for testing crashtest itself: "+faultLoseAcked+" makes the writer acknowledge writes it never made")
	if _, err := e.parse(c, fs, args, 0, 0); err != nil {
		return err
	}
	if cfg.cycles < 1 || cfg.writers < 1 || cfg.maxOps < 1 || *maxMs < 1 || *minMs < 0 || *minMs > *maxMs {
		return usageError("crashtest: --cycles, --writers, --max-ops and --max-ms must be positive, and --min-ms in [0, --max-ms]")
	}
	if cfg.fault != "" && cfg.fault != faultLoseAcked {
		return usageError("crashtest: unknown --fault " + strconv.Quote(cfg.fault))
	}
	cfg.minDelay = time.Duration(*minMs) * time.Millisecond
	cfg.maxDelay = time.Duration(*maxMs) * time.Millisecond
	if cfg.seed == 0 {
		cfg.seed = rand.Uint64()
	}
	dir, cleanup, err := crashDir(e.db, cfg.keep)
	if err != nil {
		return err
	}
	defer func() { cleanup(err == nil) }()
	fmt.Fprintf(e.stdout, "crashtest: %s, seed %d, %d writers\n", dir, cfg.seed, cfg.writers)
	return crashCycles(e, dir, cfg)
}

// crashDir returns the directory to test in and a function that removes
// it, if it is temporary, when the test passed.
func crashDir(db string, keep bool) (string, func(ok bool), error) {
	if db == "" {
		dir, err := os.MkdirTemp("", "kvcli-crashtest-")
		if err != nil {
			return "", nil, failure(err)
		}
		return dir, func(ok bool) {
			if ok && !keep {
				os.RemoveAll(dir)
			}
		}, nil
	}
	ents, err := os.ReadDir(db)
	if err != nil && !os.IsNotExist(err) {
		return "", nil, failure(err)
	}
	if len(ents) > 0 {
		return "", nil, usageError("crashtest: " + db + " is not empty: give an empty or new directory, or no --db")
	}
	return db, func(bool) {}, nil
}

// crashCycles runs the cycles and prints the summary.
func crashCycles(e *env, dir string, cfg crashConfig) error {
	exe, err := os.Executable()
	if err != nil {
		return failure(err)
	}
	m := &crashModel{seed: cfg.seed, writers: cfg.writers}
	var res *verifyResult
	for cyc := range cfg.cycles {
		delay := cfg.minDelay + time.Duration(rand.Int64N(int64(cfg.maxDelay-cfg.minDelay)+1))
		acked, ready, err := runWriter(exe, dir, cyc, delay, cfg)
		if err != nil {
			return err
		}
		m.acked = append(m.acked, acked)
		if res, err = verifyDir(dir, m); err != nil {
			return failuref("crashtest: cycle %d: reopen after the kill: %w", cyc+1, err)
		}
		note := ""
		if !ready {
			note = " (killed while opening the database)"
		}
		fmt.Fprintf(e.stdout, "cycle %d: writer killed after %v%s; %d writes acknowledged so far, %d lost\n",
			cyc+1, delay.Round(time.Millisecond), note, res.acked, res.lost)
		for _, p := range res.problems {
			fmt.Fprintf(e.stdout, "  %s\n", p)
		}
		e.stdout.Flush()
		if res.lost > 0 || res.bad > 0 {
			break
		}
	}
	fmt.Fprintf(e.stdout, "cycles: %d, writes acknowledged: %d, writes lost: %d\n", len(m.acked), res.acked, res.lost)
	if res.lost > 0 || res.bad > 0 {
		return failuref("crashtest: %d acknowledged writes lost, %d other violations; the database is kept in %s", res.lost, res.bad, dir)
	}
	return nil
}

// verifyDir reopens the database after a kill and verifies it.
func verifyDir(dir string, m *crashModel) (res *verifyResult, err error) {
	db, err := shale.Open(dir, &shale.Options{Recovery: shale.Strict})
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := db.Close(); err == nil {
			err = cerr
		}
	}()
	return m.verify(db)
}

// runWriter runs one writer process, kills it after delay, and returns the
// index of each goroutine's last acknowledged write and whether the writer
// had opened the database.
func runWriter(exe, dir string, cyc int, delay time.Duration, cfg crashConfig) ([]int, bool, error) {
	cmd := exec.Command(exe, "--db", dir, "crashtest-writer", "--cycle", strconv.Itoa(cyc),
		"--writers", strconv.Itoa(cfg.writers), "--seed", strconv.FormatUint(cfg.seed, 10),
		"--max-ops", strconv.Itoa(cfg.maxOps), "--fault", cfg.fault)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, false, failure(err)
	}
	if err := cmd.Start(); err != nil {
		return nil, false, failuref("crashtest: start writer: %w", err)
	}
	acks := &ackReader{last: make([]int, cfg.writers), done: make(chan struct{})}
	for g := range acks.last {
		acks.last[g] = -1
	}
	go acks.read(out)
	killed := false
	select {
	case <-time.After(delay):
		killed = cmd.Process.Kill() == nil
		<-acks.done
	case <-acks.done: // stdout closed: the writer ended on its own
	}
	cmd.Wait()
	// A signal sent to a writer that already exited may still succeed (it
	// is a zombie until waited for); its exit status tells. A kill leaves
	// -1 (Unix) or 1 (Windows); the writer itself exits 0, 2 or 3.
	switch code := cmd.ProcessState.ExitCode(); code {
	case exitOK, exitUsage, exitFailure:
		killed = false
	}
	switch {
	case acks.err != nil:
		return nil, false, failuref("crashtest: cycle %d: %w", cyc+1, acks.err)
	case !killed:
		return nil, false, failuref("crashtest: cycle %d: the writer exited before it was killed: %s",
			cyc+1, strings.TrimSpace(stderr.String()))
	}
	return acks.last, acks.ready, nil
}

// ackReader reads the writer's acknowledgements.
type ackReader struct {
	last  []int // per goroutine, the last operation acknowledged
	ready bool
	err   error
	done  chan struct{}
}

func (a *ackReader) read(r io.Reader) {
	defer close(a.done)
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if line == "ready" {
			a.ready = true
			continue
		}
		gs, is, _ := strings.Cut(line, " ")
		g, err1 := strconv.Atoi(gs)
		i, err2 := strconv.Atoi(is)
		if err1 != nil || err2 != nil || g < 0 || g >= len(a.last) || i != a.last[g]+1 {
			a.err = fmt.Errorf("unexpected line from the writer: %q", line)
			io.Copy(io.Discard, r)
			return
		}
		a.last[g] = i
	}
}
