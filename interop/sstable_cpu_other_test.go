//go:build !unix

package interop

import "time"

// sstProcessCPU is not measured on this platform.
func sstProcessCPU() (time.Duration, bool) { return 0, false }
