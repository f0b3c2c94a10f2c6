//go:build !linux && !darwin && !dragonfly && !freebsd && !netbsd && !openbsd

package shale

// defaultMaxOpenFiles is Options.MaxOpenFiles' default where the process's
// file limit is not read: DefaultMaxOpenFiles.
func defaultMaxOpenFiles() int { return DefaultMaxOpenFiles }
