package codec

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error returned by this package wraps one of them in
// an *Error naming the file, column and page offset, so callers can test the
// kind with errors.Is and still print where it happened.
var (
	// ErrCorrupt marks bytes that are not valid Parquet: a truncated or
	// malformed page header, a page body that does not decompress, levels or
	// values that do not decode. It is distinct from I/O failures.
	ErrCorrupt = errors.New("codec: corrupt parquet page")
	// ErrUnsupported marks valid Parquet this package does not decode: LZO,
	// encrypted columns, index pages, some nested shapes. The message says why;
	// callers may fall back to another reader.
	ErrUnsupported = errors.New("codec: unsupported")
	// ErrCRC marks a page whose CRC32 does not match its bytes. It is a
	// corruption error: errors.Is(err, ErrCorrupt) holds for it too.
	ErrCRC error = CorruptSentinel("codec: page crc mismatch")
	// ErrPageTooLarge marks a page whose header claims more bytes or values
	// than Options allow; nothing of that size was allocated.
	ErrPageTooLarge = errors.New("codec: page too large")
	// ErrShortBuffer marks a consumer buffer too small for the page.
	ErrShortBuffer = errors.New("codec: destination buffer too small")
	// ErrClosed is returned by a Decoder after Close.
	ErrClosed = errors.New("codec: decoder closed")
)

// IsCorruption reports whether err says that bytes read from a file are not
// what the file should hold: bad Parquet, a CRC mismatch, a file that
// changed under its index. Every such error of pagefeed's packages (codec,
// index, rinas) matches ErrCorrupt under errors.Is, whatever its own
// sentinel; I/O errors, ErrUnsupported, ErrPageTooLarge and the like do not.
// Callers that may skip bad data (rinas Config.SkipBadPages) skip these
// and nothing else, as pebble serves no block marked ErrCorruption.
func IsCorruption(err error) bool { return errors.Is(err, ErrCorrupt) }

// CorruptSentinel returns a sentinel error with text msg that also matches
// ErrCorrupt under errors.Is: the way other packages mark their own kinds
// of corruption (index.ErrCorrupt) so that IsCorruption finds them.
func CorruptSentinel(msg string) error { return &corruptSentinel{msg} }

type corruptSentinel struct{ msg string }

func (s *corruptSentinel) Error() string        { return s.msg }
func (s *corruptSentinel) Is(target error) bool { return target == ErrCorrupt }

// Error is the structured error of this package, in the manner of
// io/fs.PathError. Err wraps one of the sentinels above and, where there is
// one, the underlying cause.
type Error struct {
	Op     string // what was being done: "parse header", "decompress", "decode", ...
	Path   string // file, as given in Chunk.Path
	Column string // dotted column path, as given in Chunk.Column
	Off    int64  // file offset of the page header
	Err    error
}

func (e *Error) Error() string {
	return fmt.Sprintf("codec: %s %s column %s page at offset %d: %v", e.Op, e.Path, e.Column, e.Off, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// causeError joins a sentinel kind with a cause so that errors.Is finds both.
type causeError struct {
	kind  error
	cause error
	msg   string
}

func (c *causeError) Error() string {
	switch {
	case c.msg != "" && c.cause != nil:
		return c.kind.Error() + ": " + c.msg + ": " + c.cause.Error()
	case c.msg != "":
		return c.kind.Error() + ": " + c.msg
	case c.cause != nil:
		return c.kind.Error() + ": " + c.cause.Error()
	}
	return c.kind.Error()
}

func (c *causeError) Unwrap() []error {
	if c.cause == nil {
		return []error{c.kind}
	}
	return []error{c.kind, c.cause}
}

// kindf returns an error of the given kind with a formatted message.
func kindf(kind error, format string, args ...any) error {
	return &causeError{kind: kind, msg: fmt.Sprintf(format, args...)}
}

// wrapKind returns an error of the given kind caused by cause.
func wrapKind(kind, cause error, msg string) error {
	return &causeError{kind: kind, cause: cause, msg: msg}
}

func (c *Chunk) err(op string, off int64, err error) error {
	if c == nil {
		return &Error{Op: op, Off: off, Err: err}
	}
	return &Error{Op: op, Path: c.Path, Column: c.Column, Off: off, Err: err}
}
