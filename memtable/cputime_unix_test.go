//go:build unix

package memtable

import "syscall"

// processCPU returns the CPU time (user + system) this process has used,
// in nanoseconds, or 0 if it cannot be read.
func processCPU() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
