package rinas

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/pagefeed/pagefeed/codec"
	"github.com/pagefeed/pagefeed/engine"
)

// Corruption found by the loader itself. Both carry the corruption mark
// (IsCorruption), so SkipBadPages may drop the unit they hit.
var (
	// ErrFileChanged reports a file that is not the one indexed: a read
	// that returned fewer bytes than the index says the page holds (the
	// file shrank), or a file whose size, inode, modification or
	// status-change time differs from what the index and Open saw when
	// its reads were confirmed (written in place, renamed over, grown).
	ErrFileChanged = codec.CorruptSentinel("rinas: file changed since it was indexed")
	// ErrPageRows reports a page whose decoded rows contradict its offset
	// index: another row count than the index claims, or levels at its
	// head that continue a row of an earlier page although the index says
	// the page starts a row.
	ErrPageRows = codec.CorruptSentinel("rinas: page does not match the offset index")
)

// PageError is the loader's structured error about one page: the file,
// the page's offset, and what is wrong with it (ErrFileChanged or
// ErrPageRows, and a description).
type PageError struct {
	Op   string // "read", "check rows", "check identity"
	Path string
	Off  int64
	Err  error
}

func (e *PageError) Error() string {
	return fmt.Sprintf("rinas: %s %s page at offset %d: %v", e.Op, e.Path, e.Off, e.Err)
}

func (e *PageError) Unwrap() error { return e.Err }

// pageErrorf returns a *PageError of the given kind.
func pageErrorf(op, path string, off int64, kind error, format string, args ...any) error {
	return &PageError{Op: op, Path: path, Off: off, Err: fmt.Errorf("%w: %s", kind, fmt.Sprintf(format, args...))}
}

// IsCorruption reports whether err says that a file's bytes are not what
// they should be (bad Parquet, a CRC mismatch, a page that contradicts its
// index, a file that shrank after it was indexed), as opposed to an I/O
// error, an unsupported feature or a limit. SkipBadPages drops units for
// these errors only. It is codec.IsCorruption: codec, index and rinas
// errors all carry the same mark.
func IsCorruption(err error) bool { return codec.IsCorruption(err) }

// SkippedPage is a unit the loader dropped under Config.SkipBadPages: its
// first page, where the failure happened, and why.
type SkippedPage struct {
	Page  uint64 // global page number (of the lead column: Config.LeadColumn) of the unit's first page
	Epoch uint64
	Path  string // file of the failing read or page
	Off   int64  // its offset in the file
	Err   error  // the corruption error (IsCorruption holds)
}

// maxSkipLog bounds the skipped pages kept for Loader.Skipped; more are
// only counted (Stats.SkippedPages), so a dead disk cannot grow memory.
const maxSkipLog = 4096

// maxSkipNotices bounds the notices sent to Config.Logf.
const maxSkipNotices = 32

// skipLog records skipped units. Workers add to it concurrently.
type skipLog struct {
	n    atomic.Int64
	mu   sync.Mutex
	list []SkippedPage
}

// skip drops unit u of fb after err, when the configuration says so and
// err is a corruption error, and reports whether it did. I/O errors (the
// engine has retried what can be retried), unsupported pages and pages
// over a limit fail the epoch: a dying disk must not turn into an empty
// epoch that looks like success. A dropped unit delivers no rows: its pages are
// released here, and it still counts as landed, so the batch and the
// epoch go on. It runs on the worker that finished the unit.
func (l *Loader) skip(fb *fetchBatch, u *unit, err error) bool {
	if !l.cfg.SkipBadPages || err == nil || !IsCorruption(err) {
		return false
	}
	for _, p := range u.pages {
		p.Release()
	}
	u.pages = u.pages[:0]
	sp := SkippedPage{Page: uint64(u.first), Epoch: fb.epoch, Err: err}
	var ee *engine.Error
	var ce *codec.Error
	var pe *PageError
	switch {
	case errors.As(err, &pe):
		sp.Path, sp.Off = pe.Path, pe.Off
	case errors.As(err, &ee):
		sp.Path, sp.Off = ee.Path, ee.Off
	case errors.As(err, &ce) && ce.Path != "":
		sp.Path, sp.Off = ce.Path, ce.Off
	default:
		loc := l.ix.Locate(l.lead, u.first)
		sp.Path, sp.Off = l.ix.File(loc.File).Path, loc.Offset
	}
	n := l.skips.n.Add(1)
	l.skips.mu.Lock()
	if len(l.skips.list) < maxSkipLog {
		l.skips.list = append(l.skips.list, sp)
	}
	l.skips.mu.Unlock()
	if n <= maxSkipNotices {
		l.cfg.Logf("skipped page %d of epoch %d (%s at offset %d): %v", sp.Page, sp.Epoch, sp.Path, sp.Off, err)
	} else if n == maxSkipNotices+1 {
		l.cfg.Logf("more pages skipped: see Stats.SkippedPages and Loader.Skipped")
	}
	return true
}

// Skipped returns the units skipped so far under Config.SkipBadPages (the
// first 4096; Stats.SkippedPages counts them all). Safe to call while the
// loader runs.
func (l *Loader) Skipped() []SkippedPage {
	if l.mix != nil {
		var out []SkippedPage
		for _, sl := range l.mix.srcs {
			out = append(out, sl.Skipped()...)
		}
		return out
	}
	l.skips.mu.Lock()
	defer l.skips.mu.Unlock()
	return append([]SkippedPage(nil), l.skips.list...)
}

// readErr returns a page or dictionary read's error. A file that shrank
// under a read the engine had open (engine.ErrChanged) is the same
// corruption as one that shrank before: ErrFileChanged.
func readErr(path string, c *engine.Completion) error {
	var ee *engine.Error
	if errors.Is(c.Err, engine.ErrChanged) && errors.As(c.Err, &ee) {
		return &PageError{Op: "read", Path: path, Off: c.Off, Err: fmt.Errorf("%w: %w", ErrFileChanged, ee.Err)}
	}
	return c.Err
}
