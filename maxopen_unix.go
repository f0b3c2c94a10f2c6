//go:build linux || darwin || dragonfly || freebsd || netbsd || openbsd

package shale

import "syscall"

// defaultMaxOpenFiles is Options.MaxOpenFiles' default on Unix: half the
// process's soft limit on open files (RLIMIT_NOFILE), leaving the other
// half to the rest of the program and to the database's own logs and
// MANIFEST, and at most DefaultMaxOpenFiles.
func defaultMaxOpenFiles() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return DefaultMaxOpenFiles
	}
	return maxOpenFilesFor(uint64(rl.Cur))
}
