package bench

import (
	"errors"
	"fmt"
)

// Sentinel errors.
var (
	// ErrBadOption reports an unknown option or a value out of range.
	ErrBadOption = errors.New("bench: bad option")
	// ErrWriteOnly reports an option that only makes sense for writes
	// (rw=write, randwrite, randrw, verify=...): pagebench only reads.
	ErrWriteOnly = errors.New("bench: write-only option")
	// ErrJobFile reports a malformed fio job file.
	ErrJobFile = errors.New("bench: bad job file")
	// ErrAlignment reports a block size or offset that breaks the O_DIRECT
	// alignment of the file.
	ErrAlignment = errors.New("bench: direct I/O alignment")
	// ErrEngine reports an unknown ioengine or one that cannot run.
	ErrEngine = errors.New("bench: ioengine")
)

// Error is the structured error of a failed file operation, after
// io/fs.PathError.
type Error struct {
	Op   string // "open", "layout", "read", "stat", "mmap"
	Path string
	Off  int64 // -1 when no offset applies
	Err  error
}

func (e *Error) Error() string {
	if e.Off < 0 {
		return fmt.Sprintf("%s %s: %v", e.Op, e.Path, e.Err)
	}
	return fmt.Sprintf("%s %s at offset %d: %v", e.Op, e.Path, e.Off, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }
