//go:build unix

package shale_test

import (
	"bufio"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shale-db/shale"
)

// The crash test: the test binary re-runs itself as a child that writes
// from several goroutines and prints every write that returned. The parent
// SIGKILLs the child at a random moment, reopens the database and checks,
// for every goroutine of every cycle, that the database holds exactly the
// effect of its acknowledged operations, plus at most the one operation
// that was in flight, applied whole.
//
// SHALE_CRASH_CYCLES sets the number of kills (default 20).

const (
	crashChildEnv   = "SHALE_CRASH_CHILD"
	crashWriters    = 6
	crashOpsPerKill = 1 << 30 // the child writes until it is killed
)

// crashOp is operation i of goroutine g in cycle c. Its keys and values are
// derived from (c, g, i) alone, so parent and child agree on them.
type crashOp struct {
	puts    [][2]string // key, value
	deletes []string
	// delRange, if set, deletes [delRange[0], delRange[1]): the keys of
	// earlier ops of the goroutine, before the puts.
	delRange *[2]string
	sync     shale.Durability
}

func crashKey(c, g, i, j int) string { return fmt.Sprintf("c%03d/g%02d/%07d/%05d", c, g, i, j) }

// crashBulk is the number of puts in a bulk load: a batch of more than 4,096
// entries whose keys ascend, which the memtable appends as it decodes it
// when they sort above everything it holds (the last goroutine's keys do:
// its number is the largest).
const crashBulk = 4100

func makeCrashOp(c, g, i int) crashOp {
	r := rand.New(rand.NewPCG(uint64(c)<<32|uint64(g), uint64(i)))
	op := crashOp{sync: shale.Durability(r.IntN(8) / 7)} // one in 8 syncs
	n := 1
	if r.IntN(3) == 0 {
		n = 2 + r.IntN(6) // a batch
	}
	bulk := g == crashWriters-1 && r.IntN(40) == 0
	if bulk {
		n = crashBulk
	}
	for j := range n {
		v := strings.Repeat(strconv.Itoa(i), 1+r.IntN(60)) // up to a few hundred bytes
		if bulk {
			v = strconv.Itoa(j)
		} else if r.IntN(20) == 0 {
			// 8 to 32 KiB: records that span log blocks.
			v = strings.Repeat(v, 1+(8<<10+r.IntN(24<<10))/len(v))
		}
		op.puts = append(op.puts, [2]string{crashKey(c, g, i, j), v})
	}
	if i >= 3 && r.IntN(4) == 0 {
		op.deletes = append(op.deletes, crashKey(c, g, i-3, 0))
	}
	if i >= 10 && r.IntN(12) == 0 {
		// The keys of ops i-10 to i-3, every j: a range deletion, in
		// the batch or alone.
		op.delRange = &[2]string{crashKey(c, g, i-10, 0), crashKey(c, g, i-2, 0)}
	}
	return op
}

func (op crashOp) apply(db *shale.DB) error {
	if len(op.puts) == 1 && len(op.deletes) == 0 && op.delRange == nil {
		return db.Put([]byte(op.puts[0][0]), []byte(op.puts[0][1]), op.sync)
	}
	var b shale.Batch
	if op.delRange != nil {
		b.DeleteRange([]byte(op.delRange[0]), []byte(op.delRange[1]))
	}
	for _, kv := range op.puts {
		b.Put([]byte(kv[0]), []byte(kv[1]))
	}
	for _, k := range op.deletes {
		b.Delete([]byte(k))
	}
	return db.Write(&b, op.sync)
}

// applyTo applies op to a model of one goroutine's keys.
func (op crashOp) applyTo(m map[string]string) {
	if d := op.delRange; d != nil {
		for k := range m {
			if d[0] <= k && k < d[1] {
				delete(m, k)
			}
		}
	}
	for _, kv := range op.puts {
		m[kv[0]] = kv[1]
	}
	for _, k := range op.deletes {
		delete(m, k)
	}
}

func crashOptions() *shale.Options {
	// Flushes, automatic compactions and switches to a new MANIFEST
	// during the kills.
	return &shale.Options{WriteBufferSize: 48 << 10, TargetFileSize: 32 << 10, MaxManifestFileSize: 4 << 10}
}

// runCrashChildIfAsked runs the writer, and exits, when the test binary was
// re-executed by TestCrashRecovery. TestMain calls it first.
func runCrashChildIfAsked() {
	if dir := os.Getenv(idleChildEnv); dir != "" {
		idleChild(dir)
	}
	if dir := os.Getenv(bankChildEnv); dir != "" {
		bankChild(dir)
		os.Exit(0)
	}
	spec := os.Getenv(crashChildEnv)
	if spec == "" {
		return
	}
	crashChild(spec)
	os.Exit(0)
}

// crashChild writes from crashWriters goroutines until it is killed,
// printing "ack G I" after operation I of goroutine G returned.
func crashChild(spec string) {
	dir, cycleStr, _ := strings.Cut(spec, ",")
	cycle, _ := strconv.Atoi(cycleStr)
	db, err := shale.Open(dir, crashOptions())
	if err != nil {
		fmt.Printf("open-error %v\n", err)
		os.Exit(1)
	}
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	var wg sync.WaitGroup
	go func() { // "bg N" whenever the number of compactions running changes
		last := -1
		for {
			if n := db.Metrics().CompactionsRunning; n != last {
				mu.Lock()
				fmt.Fprintf(out, "bg %d\n", n)
				out.Flush()
				mu.Unlock()
				last = n
			}
			time.Sleep(time.Millisecond)
		}
	}()
	go func() { // manual compactions beside the automatic ones
		for {
			time.Sleep(time.Duration(50+rand.IntN(150)) * time.Millisecond)
			if err := db.Compact(nil, nil); err != nil {
				fmt.Printf("compact-error %v\n", err)
				os.Exit(1)
			}
		}
	}()
	for g := range crashWriters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < crashOpsPerKill; i++ {
				if err := makeCrashOp(cycle, g, i).apply(db); err != nil {
					fmt.Printf("write-error %v\n", err)
					os.Exit(1)
				}
				mu.Lock()
				fmt.Fprintf(out, "ack %d %d\n", g, i)
				out.Flush()
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	cycles := 20
	if s := os.Getenv("SHALE_CRASH_CYCLES"); s != "" {
		cycles, _ = strconv.Atoi(s)
	}
	dir := t.TempDir()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, seed))
	// acked[c][g] is the number of operations goroutine g acknowledged in
	// cycle c.
	var acked [][crashWriters]int
	totalAcked, duringCompaction := 0, 0
	for c := range cycles {
		acks, compacting := runCrashChild(t, dir, c, time.Duration(20+r.IntN(250))*time.Millisecond)
		if compacting {
			duringCompaction++
		}
		acked = append(acked, acks)
		// Every cycle's writes are checked after its own kill; every
		// tenth kill (and the last), every earlier cycle's too, so that
		// a recovery that loses or brings back older writes is caught
		// (a loss stays) while a long run stays linear in its kills.
		from := c
		if c%10 == 9 || c == cycles-1 {
			from = 0
		}
		verifyCrashState(t, dir, acked, from)
		for _, n := range acked[c] {
			totalAcked += n
		}
	}
	db := reopen(t, dir, nil)
	if st, err := db.Stats(); err != nil || len(st.Tables) == 0 {
		t.Fatalf("no tables after the kills (%v): flushes were not exercised", err)
	}
	t.Logf("%d kills (%d during a compaction), %d operations acknowledged, 0 lost", cycles, duringCompaction, totalAcked)
	if cycles >= 10 && duringCompaction == 0 {
		t.Errorf("none of %d kills landed during a compaction", cycles)
	}
}

// runCrashChild runs one writer child for cycle c, kills it after it has
// written for about d, and returns how many operations each goroutine
// acknowledged and whether a compaction was running at the kill.
func runCrashChild(t *testing.T, dir string, c int, d time.Duration) (acks [crashWriters]int, compacting bool) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+dir+","+strconv.Itoa(c))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// A child that stops writing is killed anyway, and the test fails.
	hung := time.AfterFunc(d+20*time.Second, func() { cmd.Process.Signal(syscall.SIGKILL) })
	defer hung.Stop()
	var timer <-chan time.Time
	var other []string
	killed := false
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		var g, i, running int
		if _, err := fmt.Sscanf(sc.Text(), "bg %d", &running); err == nil {
			if timer != nil && !killed {
				compacting = running > 0
			}
			continue
		}
		if _, err := fmt.Sscanf(sc.Text(), "ack %d %d", &g, &i); err != nil {
			other = append(other, sc.Text()) // a line cut by the kill, or an error
			continue
		}
		acks[g] = max(acks[g], i+1)
		if timer == nil {
			timer = time.After(d) // start the clock at the first write
		}
		select {
		case <-timer:
			cmd.Process.Signal(syscall.SIGKILL)
			killed = true
			timer = make(chan time.Time) // never fires again
		default:
		}
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL || !hung.Stop() {
		t.Fatalf("cycle %d: child did not die by our SIGKILL on time: %v; output: %q", c, err, other)
	}
	return acks, compacting
}

// verifyCrashState reopens the database and checks every goroutine of
// every cycle from from on: its keys must be exactly the model after its
// acknowledged operations; in the newest cycle, the operation in flight at
// the kill may also have been applied, whole, and is then counted as
// acknowledged.
func verifyCrashState(t *testing.T, dir string, acked [][crashWriters]int, from int) {
	t.Helper()
	db, err := shale.Open(dir, crashOptions())
	if err != nil {
		t.Fatalf("reopen after kill: %v", err)
	}
	defer db.Close()
	for _, lr := range db.Recovery().Logs {
		if lr.Damaged() {
			t.Fatalf("a kill left damage, not just a torn tail: %+v", lr)
		}
		if lr.MovedTo != "" {
			t.Fatalf("a kill left log %06d moved to %s: %+v", lr.FileNum, lr.MovedTo, lr)
		}
	}
	last := len(acked) - 1
	for c := from; c < len(acked); c++ {
		for g, n := range acked[c] {
			got := scanPrefix(t, db, fmt.Sprintf("c%03d/g%02d/", c, g))
			if mapsEqual(got, crashModel(c, g, n)) {
				continue
			}
			if c == last && mapsEqual(got, crashModel(c, g, n+1)) {
				acked[c][g] = n + 1 // the op in flight survived, whole
				continue
			}
			t.Fatalf("cycle %d goroutine %d: %d acknowledged ops; the database holds %d keys, matching neither the acknowledged state (%d keys) nor it plus the op in flight",
				c, g, n, len(got), len(crashModel(c, g, n)))
		}
	}
}

// crashModel returns goroutine g's keys after its first n ops of cycle c.
func crashModel(c, g, n int) map[string]string {
	m := map[string]string{}
	for i := range n {
		makeCrashOp(c, g, i).applyTo(m)
	}
	return m
}

// idleChildEnv names the database directory of TestKillIdle's child.
const idleChildEnv = "SHALE_IDLE_CHILD"

// idleChild opens the database, writes one key if it has none (synced,
// then flushed to a table, so that the WAL the flush starts holds
// nothing), says "ready" and waits to be killed: a process killed while
// its WAL is still empty, as an idle or read-only one is.
func idleChild(dir string) {
	db, err := shale.Open(dir, nil)
	if err != nil {
		fmt.Printf("open-error %v\n", err)
		os.Exit(1)
	}
	if _, err := db.Get([]byte("idle")); errors.Is(err, shale.ErrNotFound) {
		if err := db.Put([]byte("idle"), []byte("v"), shale.Sync); err != nil {
			fmt.Printf("put-error %v\n", err)
			os.Exit(1)
		}
		if err := db.Flush(); err != nil {
			fmt.Printf("flush-error %v\n", err)
			os.Exit(1)
		}
	}
	fmt.Println("ready")
	for {
		time.Sleep(time.Hour)
	}
}

// TestKillIdle kills a process whose WAL holds no record yet, three times.
// On Linux that WAL is 516 KiB of zeros reserved ahead of its appends;
// Open took it for a file that was not a log of ours, moved it to lost/
// with a warning, and kept it there: one more at every kill.
func TestKillIdle(t *testing.T) {
	dir := t.TempDir()
	for kill := range 3 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), idleChildEnv+"="+dir)
		cmd.Stderr = os.Stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		hung := time.AfterFunc(20*time.Second, func() { cmd.Process.Kill() })
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		hung.Stop()
		if line != "ready\n" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("kill %d: child said %q, not ready", kill, line)
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		cmd.Wait()

		db, err := shale.Open(dir, &shale.Options{Recovery: shale.Strict})
		if err != nil {
			t.Fatalf("kill %d: Strict Open: %v", kill, err)
		}
		for _, lr := range db.Recovery().Logs {
			if lr.Damaged() || lr.MovedTo != "" || lr.Records != 0 {
				t.Errorf("kill %d: log %06d: %+v; want an empty log, removed", kill, lr.FileNum, lr)
			}
		}
		if v, err := db.Get([]byte("idle")); err != nil || string(v) != "v" {
			t.Errorf("kill %d: Get = %q, %v", kill, v, err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(dir, "lost")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("kill %d: lost/ exists (%v)", kill, err)
		}
	}
}
