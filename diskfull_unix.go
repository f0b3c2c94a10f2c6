//go:build unix

package shale

import (
	stderrors "errors"
	"syscall"
)

// diskFull reports whether err came from a full disk or quota.
func diskFull(err error) bool {
	return stderrors.Is(err, syscall.ENOSPC) || stderrors.Is(err, syscall.EDQUOT)
}
