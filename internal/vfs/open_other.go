//go:build !unix && !windows

package vfs

// openNonblock is 0 where there is no O_NONBLOCK to pass.
const openNonblock = 0
