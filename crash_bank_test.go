//go:build unix

package shale_test

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shale-db/shale"
)

// The bank under kill -9: a child moves money between accounts in
// transactions from several goroutines (each transfer also counts itself
// in its goroutine's counter, in the same transaction) while compactions
// run, and prints each counter value its commit acknowledged. The parent
// SIGKILLs it at a random moment and reopens: the total must be what it
// was, and each goroutine's counter must be its last acknowledged value or
// the one after (the commit in flight, whole).
//
// SHALE_CRASH_BANK_CYCLES sets the number of kills (default 10).

const (
	bankChildEnv   = "SHALE_CRASH_BANK_CHILD"
	bankAccounts   = 50
	bankInitial    = 1000
	bankWriters    = 4
	bankCounterKey = "count/"
)

func bankCounter(g int) []byte { return fmt.Appendf(nil, "%s%d", bankCounterKey, g) }

func readCounter(tx *shale.Transaction, g int) (uint64, error) {
	v, err := tx.Get(bankCounter(g))
	if errors.Is(err, shale.ErrNotFound) {
		return 0, nil
	}
	if err != nil || len(v) != 8 {
		return 0, fmt.Errorf("counter %d: %q, %v", g, v, err)
	}
	return binary.BigEndian.Uint64(v), nil
}

// bankChild transfers until killed, printing "ack G N" once goroutine G's
// commit that set its counter to N returned.
func bankChild(dir string) {
	db, err := shale.Open(dir, crashOptions())
	if err != nil {
		fmt.Printf("open-error %v\n", err)
		os.Exit(1)
	}
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	go func() {
		for {
			time.Sleep(time.Duration(50+rand.IntN(150)) * time.Millisecond)
			if err := db.Compact(nil, nil); err != nil {
				fmt.Printf("compact-error %v\n", err)
				os.Exit(1)
			}
		}
	}()
	var wg sync.WaitGroup
	for g := range bankWriters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				from, to := rand.IntN(bankAccounts), rand.IntN(bankAccounts)
				var n uint64
				transfer := func(tx *shale.Transaction) error {
					c, err := readCounter(tx, g)
					if err != nil {
						return err
					}
					n = c + 1
					if from != to {
						if err := bankTransfer(tx, from, to, 1+rand.IntN(50)); err != nil {
							return err
						}
					}
					return tx.Put(bankCounter(g), binary.BigEndian.AppendUint64(nil, n))
				}
				var err error
				if g%2 == 0 {
					err = db.Update(transfer) // Sync
				} else {
					tx := db.NewTransaction()
					if err = transfer(tx); err == nil {
						err = tx.Commit(shale.NoSync)
					}
					tx.Discard()
					if errors.Is(err, shale.ErrConflict) {
						continue
					}
				}
				if err != nil {
					fmt.Printf("write-error %v\n", err)
					os.Exit(1)
				}
				mu.Lock()
				fmt.Fprintf(out, "ack %d %d\n", g, n)
				out.Flush()
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

func TestCrashBank(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	cycles := 10
	if s := os.Getenv("SHALE_CRASH_BANK_CYCLES"); s != "" {
		cycles, _ = strconv.Atoi(s)
	}
	dir := t.TempDir()
	db := reopen(t, dir, crashOptions())
	for i := range bankAccounts {
		if err := db.Put(bankKey(i), fmt.Append(nil, bankInitial), shale.Sync); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	var acked [bankWriters]uint64
	for c := range cycles {
		got := runBankChild(t, dir, time.Duration(30+rand.IntN(250))*time.Millisecond)
		db := reopen(t, dir, crashOptions())
		tx := db.NewTransaction()
		total, err := bankTotal(tx)
		if err != nil || total != bankAccounts*bankInitial {
			t.Fatalf("cycle %d: total %d (%v), want %d", c, total, err, bankAccounts*bankInitial)
		}
		for g := range bankWriters {
			n, err := readCounter(tx, g)
			if err != nil {
				t.Fatal(err)
			}
			acked[g] = max(acked[g], got[g])
			if n < acked[g] || n > acked[g]+1 {
				t.Fatalf("cycle %d: goroutine %d's counter is %d after %d acknowledged commits", c, g, n, acked[g])
			}
			acked[g] = n // the commit in flight may have been applied, whole
		}
		tx.Discard()
		db.Close()
	}
	transfers := uint64(0)
	for _, n := range acked {
		transfers += n
	}
	t.Logf("%d kills; %d transfers committed; the total held after every kill", cycles, transfers)
}

func runBankChild(t *testing.T, dir string, d time.Duration) (acks [bankWriters]uint64) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), bankChildEnv+"="+dir)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	hung := time.AfterFunc(d+20*time.Second, func() { cmd.Process.Signal(syscall.SIGKILL) })
	defer hung.Stop()
	var timer <-chan time.Time
	var other []string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		var g int
		var n uint64
		if _, err := fmt.Sscanf(sc.Text(), "ack %d %d", &g, &n); err != nil {
			other = append(other, sc.Text())
			continue
		}
		acks[g] = max(acks[g], n)
		if timer == nil {
			timer = time.After(d)
		}
		select {
		case <-timer:
			cmd.Process.Signal(syscall.SIGKILL)
			timer = make(chan time.Time)
		default:
		}
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL || !hung.Stop() {
		t.Fatalf("child did not die by our SIGKILL on time: %v; output: %q", err, other)
	}
	return acks
}
