package manifest

import (
	"fmt"

	"github.com/cockroachdb/errors"
)

// ErrCorrupt is matched (with the standard library's errors.Is) by every
// error that reports damaged MANIFEST or CURRENT contents. Such an error
// names the file and, when the damage is at one place (not, say, two tables
// that overlap), its byte offset. Damage in the log framing also matches
// wal.ErrCorrupt and unwraps to a *wal.CorruptionError.
var ErrCorrupt = errors.New("manifest: corrupt")

// ErrReadOnly is returned by LogAndApply on a VersionSet loaded read-only.
var ErrReadOnly = errors.New("manifest: version set is read-only")

// ErrEditNotWritten is matched by the error of a LogAndApply whose edit
// cannot be on disk as a whole record: the edit was refused before
// anything was written, or the write of its record failed (a write that
// fails leaves at most a prefix of the record, which a reader drops as a
// torn tail, and nothing is appended after it). A failed sync does not
// match: the record was written and may be durable.
var ErrEditNotWritten = errors.New("manifest: edit not written")

// corruptError is damage: its message says what and where, cause (if any)
// is the lower-level error (for example one matching wal.ErrCorrupt), and it
// matches ErrCorrupt through Is.
type corruptError struct {
	msg   string
	cause error
}

func (e *corruptError) Error() string {
	if e.cause == nil {
		return e.msg
	}
	return e.msg + ": " + e.cause.Error()
}

// Is makes errors.Is(err, ErrCorrupt) hold.
func (e *corruptError) Is(target error) bool { return target == ErrCorrupt }

// Unwrap exposes the cause, so errors.Is also finds what the cause matches.
func (e *corruptError) Unwrap() error { return e.cause }

// corruptf returns an error matching ErrCorrupt with a formatted message.
func corruptf(format string, args ...any) error {
	return &corruptError{msg: fmt.Sprintf(format, args...)}
}

// corruptWrap returns an error matching ErrCorrupt whose message is prefix
// followed by cause's message.
func corruptWrap(cause error, format string, args ...any) error {
	return &corruptError{msg: fmt.Sprintf(format, args...), cause: cause}
}
