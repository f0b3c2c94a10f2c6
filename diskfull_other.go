//go:build !unix

package shale

import (
	stderrors "errors"
	"syscall"
)

// diskFull reports whether err came from a full disk.
func diskFull(err error) bool {
	return stderrors.Is(err, syscall.ENOSPC)
}
