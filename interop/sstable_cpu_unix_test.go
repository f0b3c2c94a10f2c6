//go:build unix

package interop

import (
	"syscall"
	"time"
)

// sstProcessCPU returns the CPU time this process has used (user and
// system, all threads), so that benchmarks on a busy machine can report
// CPU per operation, which other processes do not inflate.
func sstProcessCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
