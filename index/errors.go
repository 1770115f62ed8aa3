package index

import (
	"errors"
	"fmt"

	"github.com/pagefeed/pagefeed/codec"
)

// Sentinel errors. Errors returned by Build wrap one of these in an *Error
// that names the file, and the column where one is involved.
var (
	// ErrCorrupt reports bad Parquet: a footer, offset index or page header
	// that does not parse or does not fit the file. It carries the
	// corruption mark: codec.IsCorruption holds for it.
	ErrCorrupt = codec.CorruptSentinel("index: corrupt parquet")
	// ErrNotParquet reports a file without the PAR1 magic.
	ErrNotParquet = errors.New("index: not a parquet file")
	// ErrUnsupported reports valid Parquet the index cannot represent
	// (encrypted footers, column chunks over 4 GiB).
	ErrUnsupported = errors.New("index: unsupported")
	// ErrColumn reports a projected column missing from a file's schema,
	// or with a different physical type than in the first file.
	ErrColumn = errors.New("index: column")
	// ErrNotFile reports a path that is not a regular file (a FIFO, a
	// socket, a device) or a symbolic link that loops.
	ErrNotFile = errors.New("index: not a regular file")
	// ErrEmpty reports that the paths named no Parquet file.
	ErrEmpty = errors.New("index: no parquet files")
	// ErrSidecar reports a sidecar that cannot be used. Build never returns
	// it: it logs it and rebuilds.
	ErrSidecar = errors.New("index: bad sidecar")
)

// Error is the structured error of a failed operation, after io/fs.PathError.
type Error struct {
	Op     string // "stat", "read", "footer", "offset_index", "header_walk", "schema", ...
	Path   string
	Column string // dotted column path, when one is involved
	Off    int64  // file offset, -1 when none applies
	Err    error
}

func (e *Error) Error() string {
	s := e.Op + " " + e.Path
	if e.Column != "" {
		s += " column " + e.Column
	}
	if e.Off >= 0 {
		s += fmt.Sprintf(" at offset %d", e.Off)
	}
	return s + ": " + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// corrupt builds an *Error wrapping ErrCorrupt with a cause.
func corrupt(op, path, col string, off int64, format string, args ...any) *Error {
	return &Error{Op: op, Path: path, Column: col, Off: off, Err: fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))}
}
