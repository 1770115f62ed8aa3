package rinas

import (
	"errors"
	"sync"
	"sync/atomic"

	"github.com/pagefeed/pagefeed/codec"
	"github.com/pagefeed/pagefeed/engine"
)

// SkippedPage is a unit the loader dropped under Config.SkipBadPages: its
// first page, where the failure happened, and why.
type SkippedPage struct {
	Page  uint64 // global page number (of the loaded column) of the unit's first page
	Epoch uint64
	Path  string // file of the failing read or page
	Off   int64  // its offset in the file
	Err   error  // the read error (*engine.Error) or decode error (codec corruption)
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

// skip drops unit u of fb after err, when the configuration says so, and
// reports whether it did. A dropped unit delivers no rows: its pages are
// released here, and it still counts as landed, so the batch and the
// epoch go on. It runs on the worker that finished the unit.
func (l *Loader) skip(fb *fetchBatch, u *unit, err error) bool {
	if !l.cfg.SkipBadPages || err == nil {
		return false
	}
	for _, p := range u.pages {
		p.Release()
	}
	u.pages = u.pages[:0]
	sp := SkippedPage{Page: uint64(u.first), Epoch: fb.epoch, Err: err}
	var ee *engine.Error
	var ce *codec.Error
	switch {
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
	l.skips.mu.Lock()
	defer l.skips.mu.Unlock()
	return append([]SkippedPage(nil), l.skips.list...)
}
