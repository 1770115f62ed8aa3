package main

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"syscall"

	"github.com/pagefeed/pagefeed/codec"
	"github.com/pagefeed/pagefeed/index"
	"github.com/pagefeed/pagefeed/rinas"
)

// Status codes; pagefeed.h's PF_* and the Python package's exceptions
// follow them.
const (
	statusOK       = 0
	statusEOF      = 1
	statusErr      = -1 // pagefeed.Error
	statusConfig   = -2 // pagefeed.ConfigError
	statusState    = -3 // pagefeed.StateError
	statusNotFound = -4 // FileNotFoundError
	statusCorrupt  = -5 // pagefeed.CorruptPageError
	statusMemory   = -6 // MemoryError
	statusClosed   = -7 // pagefeed.ClosedError
	statusOS       = -8 // OSError with pf_last_errno's errno
	statusChanged  = -9 // pagefeed.FileChangedError
	statusTimeout  = 2  // pf_next_wait: no batch in time
)

// errClosed answers calls on a closed loader or an unknown handle.
var errClosed = errors.New("pagefeed: loader closed or unknown handle")

// status maps an error to its code. The order matters where an error
// wraps several kinds: a missing file is reported as such even when the
// index wraps it as a config problem.
func status(err error) int {
	switch {
	case err == nil:
		return statusOK
	case errors.Is(err, io.EOF):
		return statusEOF
	case errors.Is(err, errTimeout):
		return statusTimeout
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, index.ErrEmpty):
		return statusNotFound
	case errors.Is(err, rinas.ErrMemory):
		return statusMemory
	case errors.Is(err, rinas.ErrState):
		return statusState
	case errors.Is(err, rinas.ErrConfig), errors.Is(err, index.ErrColumn):
		return statusConfig
	case errors.Is(err, rinas.ErrFileChanged):
		// before corrupt, which it also wraps: the bytes may be valid,
		// only not the ones the index describes
		return statusChanged
	case errors.Is(err, codec.ErrCorrupt), errors.Is(err, codec.ErrCRC),
		errors.Is(err, index.ErrCorrupt), errors.Is(err, index.ErrNotParquet):
		return statusCorrupt
	case errors.Is(err, rinas.ErrClosed), errors.Is(err, errClosed), errors.Is(err, context.Canceled):
		return statusClosed
	case errnoOf(err) != 0:
		return statusOS
	case errors.Is(err, index.ErrNotFile):
		// a FIFO, socket or device as a path (a link loop has its errno)
		return statusConfig
	}
	return statusErr
}

// errnoOf returns the system error number err wraps (a path that loops,
// that may not be read, an I/O error), or 0.
func errnoOf(err error) syscall.Errno {
	var no syscall.Errno
	if errors.As(err, &no) {
		return no
	}
	return 0
}
