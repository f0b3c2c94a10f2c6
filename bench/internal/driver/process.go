package driver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"syscall"

	"github.com/cockroachdb/errors"

	"github.com/shale-db/shale/bench/internal/worker"
)

// Sample is one timed process's figures.
type Sample struct {
	worker.Result
	// PeakRSS is the worker's ru_maxrss, in bytes.
	PeakRSS int64 `json:"peak_rss"`
}

// command returns the worker process for spec.
func (d *driver) command(ctx context.Context, s worker.Spec) *exec.Cmd {
	args := append(append([]string(nil), d.cfg.WorkerArgs...), worker.Args(s)...)
	cmd := exec.CommandContext(ctx, d.cfg.Exe, args...)
	cmd.Env = d.cfg.Env
	return cmd
}

// runWorker runs a worker to its end and returns its stdout.
func (d *driver) runWorker(ctx context.Context, s worker.Spec) (stdout []byte, rss int64, err error) {
	cmd := d.command(ctx, s)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, 0, errors.Wrapf(err, "%s %s %s: %s", s.Phase, s.Workload, s.Store, strings.TrimSpace(errb.String()))
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rss = int64(ru.Maxrss) * 1024 // kilobytes on Linux
	}
	return out.Bytes(), rss, nil
}

// measure runs the timed phase and decodes its figures.
func (d *driver) measure(ctx context.Context, s worker.Spec) (Sample, error) {
	s.Phase = worker.PhaseRun
	out, rss, err := d.runWorker(ctx, s)
	if err != nil {
		return Sample{}, err
	}
	smp := Sample{PeakRSS: rss}
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
