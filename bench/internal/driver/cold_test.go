package driver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestColdReads runs readrandom and seekrandom cold (-cold -mem 64
// -reads 500) beside fillrandom, which is not a read workload: the read
// workloads' timed processes ran in a memory cgroup the driver made for
// them, which is gone after; fillrandom's did not; and the reads made the
// number of lookups asked for. It needs root and a memory cgroup controller
// (CI has both).
func TestColdReads(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("cold reads need root (drop_caches, a memory cgroup)")
	}
	root, _, err := memCgroupRoot()
	if err != nil {
		t.Skip(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{N: 2000, Passes: 1, Workloads: []string{"fillrandom", "readrandom", "seekrandom"},
		Stores: []string{"shale", "pebble"}, Seed: 1, Dir: t.TempDir(), Exe: exe,
		WorkerArgs: []string{WorkerCommand}, Cold: true, MemLimit: 64 << 20, Reads: 500}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range cfg.Workloads {
		for _, store := range cfg.Stores {
			s := r.Cells[w][store].Samples[0]
			want := fmt.Sprintf("/shalebench-%d-%s-%s-0", os.Getpid(), w, store)
			switch {
			case w == "fillrandom" && strings.Contains(s.Cgroup, "shalebench-"):
				t.Errorf("%s %s ran in cgroup %s", w, store, s.Cgroup)
			case w != "fillrandom" && !strings.HasSuffix(s.Cgroup, want):
				t.Errorf("%s %s ran in cgroup %q, want one ending %s", w, store, s.Cgroup, want)
			case w != "fillrandom" && s.Ops != 500:
				t.Errorf("%s %s made %d lookups, want 500", w, store, s.Ops)
			}
		}
	}
	left, _ := filepath.Glob(filepath.Join(root, fmt.Sprintf("shalebench-%d-*", os.Getpid())))
	if len(left) > 0 {
		t.Errorf("cgroups left behind: %v", left)
	}
}
