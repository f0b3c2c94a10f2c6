//go:build unix

package manual

import "syscall"

// mapAnon maps n bytes of private anonymous memory, outside the Go heap.
func mapAnon(n int) ([]byte, error) {
	return syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
}

func unmapAnon(b []byte) { _ = syscall.Munmap(b) }
