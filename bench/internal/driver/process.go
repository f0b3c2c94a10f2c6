package driver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/shale-db/shale/bench/internal/worker"
)

// Sample is one timed process's figures.
type Sample struct {
	worker.Result
	// PeakRSS is the worker's ru_maxrss, in bytes.
	PeakRSS int64 `json:"peak_rss"`
	// PeakAnon is the most anonymous memory (RssAnon) the worker had
	// resident when sampled, every few milliseconds, in bytes; 0 where
	// /proc is missing. Unlike PeakRSS it leaves out the pages of the
	// benchmark binary and of mapped files, which depend on the page
	// cache and are shared by every store's workers.
	PeakAnon int64 `json:"peak_anon,omitempty"`
}

// command returns the worker process for spec.
func (d *driver) command(ctx context.Context, s worker.Spec) *exec.Cmd {
	args := append(append([]string(nil), d.cfg.WorkerArgs...), worker.Args(s)...)
	cmd := exec.CommandContext(ctx, d.cfg.Exe, args...)
	cmd.Env = d.cfg.Env
	return cmd
}

// runWorker runs a worker to its end and returns its stdout, its
// ru_maxrss and its sampled peak of anonymous memory.
func (d *driver) runWorker(ctx context.Context, s worker.Spec) (stdout []byte, rss, anon int64, err error) {
	cmd := d.command(ctx, s)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		return nil, 0, 0, errors.Wrapf(err, "%s %s %s", s.Phase, s.Workload, s.Store)
	}
	stop, peak := make(chan struct{}), make(chan int64, 1)
	go func() { peak <- sampleAnon(cmd.Process.Pid, stop) }()
	err = cmd.Wait()
	close(stop)
	anon = <-peak
	if err != nil {
		return nil, 0, 0, errors.Wrapf(err, "%s %s %s: %s", s.Phase, s.Workload, s.Store, strings.TrimSpace(errb.String()))
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rss = int64(ru.Maxrss) * 1024 // kilobytes on Linux
	}
	return out.Bytes(), rss, anon, nil
}

// anonEvery is how often sampleAnon reads a worker's memory.
const anonEvery = 5 * time.Millisecond

// sampleAnon returns the largest RssAnon of process pid, read from
// /proc/pid/status every anonEvery until stop is closed (0 if it could
// never be read).
func sampleAnon(pid int, stop <-chan struct{}) int64 {
	path := fmt.Sprintf("/proc/%d/status", pid)
	t := time.NewTicker(anonEvery)
	defer t.Stop()
	var peak int64
	for {
		if b, err := os.ReadFile(path); err == nil {
			peak = max(peak, statusKiB(b, "RssAnon:")*1024)
		}
		select {
		case <-stop:
			return peak
		case <-t.C:
		}
	}
}

// statusKiB returns the value of field (such as "RssAnon:") in a
// /proc/pid/status, in KiB, or 0.
func statusKiB(status []byte, field string) int64 {
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			v, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return v
		}
	}
	return 0
}

// measure runs the timed phase and decodes its figures.
func (d *driver) measure(ctx context.Context, s worker.Spec) (Sample, error) {
	s.Phase = worker.PhaseRun
	out, rss, anon, err := d.runWorker(ctx, s)
	if err != nil {
		return Sample{}, err
	}
	smp := Sample{PeakRSS: rss, PeakAnon: anon}
	if err := json.Unmarshal(bytes.TrimSpace(out), &smp.Result); err != nil {
		return Sample{}, errors.Wrapf(err, "%s %s: worker printed %q", s.Workload, s.Store, out)
	}
	return smp, nil
}

// crash runs the crash phase until the worker says its puts returned, then
// kills it with SIGKILL.
func (d *driver) crash(ctx context.Context, s worker.Spec) error {
	s.Phase, s.CPUProfile = worker.PhaseCrash, ""
	cmd := d.command(ctx, s)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	line, rerr := bufio.NewReader(pipe).ReadString('\n')
	kerr := cmd.Process.Signal(syscall.SIGKILL)
	werr := cmd.Wait()
	if strings.TrimSpace(line) != worker.Ready {
		return errors.Newf("crash %s %s: worker ended before its puts returned (%v, %v): %s",
			s.Workload, s.Store, rerr, werr, strings.TrimSpace(errb.String()))
	}
	if kerr != nil {
		return errors.Wrap(kerr, "kill the crash worker")
	}
	return nil
}
