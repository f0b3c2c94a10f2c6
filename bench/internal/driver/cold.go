package driver

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/cockroachdb/errors"

	"github.com/shale-db/shale/bench/internal/worker"
)

// Cold reads (Config.Cold): the page cache is dropped before the timed
// process, and that process runs in a memory cgroup of Config.MemLimit
// bytes, so that reads of a database larger than the limit go to the disk.
// Both need root. The cgroup is created under the memory controller's
// hierarchy: cgroup v2's if /sys/fs/cgroup/cgroup.controllers names
// "memory", else v1's /sys/fs/cgroup/memory. The worker moves itself into
// it before it opens the store (worker.Spec.Cgroup).

// coldApplies reports whether a workload's timed process runs cold: it
// reads a database an earlier process filled, and writes nothing.
func coldApplies(w worker.Workload) bool {
	return w.Prepare == worker.FillRandom && !w.Writes
}

// memCgroupRoot returns the directory under which memory cgroups are made,
// and whether it is cgroup v2.
func memCgroupRoot() (root string, v2 bool, err error) {
	if b, err := os.ReadFile("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		if strings.Contains(" "+strings.TrimSpace(string(b))+" ", " memory ") {
			return "/sys/fs/cgroup", true, nil
		}
	}
	if fi, err := os.Stat("/sys/fs/cgroup/memory"); err == nil && fi.IsDir() {
		return "/sys/fs/cgroup/memory", false, nil
	}
	return "", false, errors.New("driver: no memory cgroup controller (neither v2's /sys/fs/cgroup nor v1's /sys/fs/cgroup/memory)")
}

// newMemCgroup creates a memory cgroup limited to limit bytes and returns
// its path and a function that removes it (once its processes have ended).
func newMemCgroup(name string, limit int64) (string, func(), error) {
	root, v2, err := memCgroupRoot()
	if err != nil {
		return "", nil, err
	}
	dir := filepath.Join(root, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", nil, errors.Wrap(err, "driver: create a memory cgroup (cold reads need root)")
	}
	remove := func() { _ = os.Remove(dir) }
	file, value := "memory.limit_in_bytes", strconv.FormatInt(limit, 10)
	if v2 {
		file = "memory.max"
	}
	if err := os.WriteFile(filepath.Join(dir, file), []byte(value), 0o644); err != nil {
		remove()
		return "", nil, errors.Wrapf(err, "driver: set %s of %s", file, dir)
	}
	if v2 {
		// No swap either: reads must come from the disk, not from
		// memory the kernel swapped out and back in.
		_ = os.WriteFile(filepath.Join(dir, "memory.swap.max"), []byte("0"), 0o644)
	}
	return dir, remove, nil
}

// dropCaches writes back and drops the page cache, the dentries and the
// inodes, as db_bench's users do before a cold read.
func dropCaches() error {
	syscall.Sync()
	if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("3"), 0o200); err != nil {
		return errors.Wrap(err, "driver: drop the page cache (cold reads need root)")
	}
	return nil
}

// coldSpec readies spec's timed process to run cold, and returns what
// undoes it.
func (d *driver) coldSpec(spec *worker.Spec, pass int) (func(), error) {
	dir, remove, err := newMemCgroup(fmt.Sprintf("shalebench-%d-%s-%s-%d", os.Getpid(), spec.Workload, spec.Store, pass), d.cfg.MemLimit)
	if err != nil {
		return nil, err
	}
	if err := dropCaches(); err != nil {
		remove()
		return nil, err
	}
	spec.Cgroup = dir
	return remove, nil
}
