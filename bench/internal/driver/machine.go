package driver

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// Machine describes where the benchmark ran, for the report's heading.
type Machine struct {
	CPU    string `json:"cpu"`
	Cores  int    `json:"cores"`
	Memory string `json:"memory"`
	Kernel string `json:"kernel"`
	Go     string `json:"go"`
	OSArch string `json:"os_arch"`
}

func describeMachine() Machine {
	return Machine{
		CPU:    procField("/proc/cpuinfo", "model name"),
		Cores:  runtime.NumCPU(),
		Memory: memTotal(),
		Kernel: firstLine("/proc/sys/kernel/osrelease"),
		Go:     runtime.Version(),
		OSArch: runtime.GOOS + "/" + runtime.GOARCH,
	}
}

// procField returns the value of the first "name : value" line of a /proc
// file, or "unknown".
func procField(path, name string) string {
	f, err := os.Open(path)
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == name {
			return strings.Join(strings.Fields(v), " ")
		}
	}
	return "unknown"
}

// memTotal returns MemTotal of /proc/meminfo in GiB.
func memTotal() string {
	f := strings.Fields(procField("/proc/meminfo", "MemTotal")) // "24684084 kB"
	if len(f) != 2 || f[1] != "kB" {
		return "unknown"
	}
	kb, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return "unknown"
	}
	return fmt.Sprintf("%.1f GiB", kb/(1<<20))
}

func firstLine(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "unknown"
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return line
}

// String is one line: CPU, cores, memory, kernel, Go.
func (m Machine) String() string {
	return m.CPU + ", " + itoa(m.Cores) + " cores, " + m.Memory + " RAM, " + m.OSArch +
		" kernel " + m.Kernel + ", " + m.Go
}
