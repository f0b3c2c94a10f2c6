//go:build !unix

package manual

// mapAnon allocates on the Go heap where there is no anonymous mmap: the
// cache then works as on Unix, with the collector's overhead.
func mapAnon(n int) ([]byte, error) { return make([]byte, n), nil }

func unmapAnon([]byte) {}
