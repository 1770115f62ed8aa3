package rinas

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/pagefeed/pagefeed/engine"
	"github.com/pagefeed/pagefeed/index"
)

// fileCache opens the dataset's files lazily through the engine and keeps
// at most max of them open: a dataset of 10,000 files must fit the
// process's RLIMIT_NOFILE. Every unit holds a reference on its file from
// fillUnit until finishUnit (and a dictionary read from ensureDict until
// onDict), so a file is closed only when no read of it is scheduled or in
// flight; idle open files are evicted least recently used first. When
// every open file is referenced the cache opens one more anyway: the
// excess is bounded by the fetch window (BatchPages × (Prefetch+1) units).
//
// acquire is called by the producer; release by workers and the producer.
type fileCache struct {
	mu   sync.Mutex
	eng  *engine.Engine
	ix   *index.Index
	max  int
	open int
	ents []fileEnt
	ids  []fileID // each file's identity at Open (see confirmFiles)
	// seen and seenErr are the consumer's (confirmFiles): the batch
	// number that last checked each file, and what the check said.
	seen    []uint32
	seenErr []error
	batch   uint32
	st      statter
	checks  int64 // statx calls made (benchmarks)
	// modes is each file's open mode (Config.IOMode; setModes): a file
	// open in another mode is reopened once it is idle.
	modes  []engine.Tristate
	head   int32 // most recently released idle file, -1 none
	tail   int32 // least recently released idle file, -1 none
	closed bool
	logf   func(string, ...any)
	warned bool
}

type fileEnt struct {
	f          *engine.File
	mode       engine.Tristate // what f was opened with
	refs       int32
	prev, next int32 // idle list links (refs == 0 and open), -1 none
}

func (c *fileCache) init(eng *engine.Engine, ix *index.Index, max int, logf func(string, ...any)) {
	c.eng, c.ix, c.max, c.logf = eng, ix, max, logf
	c.ents = make([]fileEnt, ix.NumFiles())
	c.ids = make([]fileID, ix.NumFiles())
	c.seen, c.seenErr = make([]uint32, ix.NumFiles()), make([]error, ix.NumFiles())
	for i := range c.ids {
		c.ids[i], _ = statID(ix.File(i).Path) // a file that cannot be stat'ed fails its first check
	}
	for i := range c.ents {
		c.ents[i].prev, c.ents[i].next = -1, -1
	}
	c.head, c.tail = -1, -1
}

// acquire returns file i open, counting one more reference on it.
func (c *fileCache) acquire(i int) (*engine.File, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	e := &c.ents[i]
	mode := engine.TryOn
	if c.modes != nil {
		mode = c.modes[i]
	}
	if e.f != nil && e.mode != mode && e.refs == 0 {
		// Its mode changed (a new epoch's choice) and no read of it is
		// scheduled: reopen it. One with reads scheduled keeps its mode
		// until it is idle.
		c.evict(int32(i))
	}
	if e.f != nil {
		if e.refs == 0 {
			c.unlink(int32(i))
		}
		e.refs++
		return e.f, nil
	}
	for c.open >= c.max && c.tail >= 0 {
		c.evict(c.tail)
	}
	if c.open >= c.max && !c.warned {
		c.warned = true
		c.logf("%d files open, above the budget of %d (engine.OpenFileBudget(2)): every one has reads scheduled", c.open+1, c.max)
	}
	f, err := c.eng.OpenMode(c.ix.File(i).Path, mode)
	if err != nil {
		return nil, c.openErr(i, err)
	}
	e.f, e.mode, e.refs = f, mode, 1
	c.open++
	return f, nil
}

// openErr returns err, the error opening file i, or, where the file is no
// longer the one indexed (deleted or replaced since: checkIdentity), an
// error wrapping ErrFileChanged naming it: a file evicted and reopened
// meets its deletion here rather than in confirmFiles.
func (c *fileCache) openErr(i int, err error) error {
	path := c.ix.File(i).Path
	id, serr := statID(path)
	if cerr := checkIdentity(c.ix, i, c.ids[i], id, serr); cerr != nil {
		return &PageError{Op: "open", Path: path, Err: fmt.Errorf("%w; opening it: %v", cerr, err)}
	}
	return err
}

// setModes sets every file's open mode for the files opened from now on
// (modes has one per file of the index).
func (c *fileCache) setModes(modes []engine.Tristate) {
	c.mu.Lock()
	c.modes = modes
	c.mu.Unlock()
}

// file returns file i, which the caller holds a reference on.
func (c *fileCache) file(i int) *engine.File {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ents[i].f
}

// release drops one reference on file i; at zero the file becomes idle,
// open, and first in line to stay.
func (c *fileCache) release(i int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := &c.ents[i]
	if c.closed || e.f == nil {
		return
	}
	if e.refs <= 0 {
		panic("rinas: file reference count underflow")
	}
	e.refs--
	if e.refs > 0 {
		return
	}
	e.prev, e.next = -1, c.head
	if c.head >= 0 {
		c.ents[c.head].prev = int32(i)
	}
	c.head = int32(i)
	if c.tail < 0 {
		c.tail = int32(i)
	}
}

func (c *fileCache) unlink(i int32) {
	e := &c.ents[i]
	if e.prev >= 0 {
		c.ents[e.prev].next = e.next
	} else {
		c.head = e.next
	}
	if e.next >= 0 {
		c.ents[e.next].prev = e.prev
	} else {
		c.tail = e.prev
	}
	e.prev, e.next = -1, -1
}

// evict closes idle file i. No read of it is scheduled (refs == 0), so
// CloseFile does not wait.
func (c *fileCache) evict(i int32) {
	c.unlink(i)
	e := &c.ents[i]
	if err := c.eng.CloseFile(e.f); err != nil {
		c.logf("closing %s: %v", e.f.Path(), err)
	}
	e.f = nil
	c.open--
}

// closeAll closes every open file; references still held are dropped.
func (c *fileCache) closeAll() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.st.close()
	if c.closed || c.eng == nil {
		c.closed = true
		return nil
	}
	c.closed = true
	var errs []error
	for i := range c.ents {
		if f := c.ents[i].f; f != nil {
			errs = append(errs, c.eng.CloseFile(f))
			c.ents[i].f = nil
		}
	}
	c.open = 0
	return errors.Join(errs...)
}

// openNow returns how many files are open (tests).
func (c *fileCache) openNow() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.open
}

// fileID is a file's identity (statID): device and inode, size, and the
// modification and status-change times in nanoseconds.
type fileID struct {
	dev, ino     uint64
	size         int64
	mtime, ctime int64
}

// checkIdentity reports whether file i is still the one the index was
// built from and Open saw (want; zero when Open could not stat it), given
// its identity now (got, or the error statting it): the size and
// modification time the index recorded, and the device, inode and
// status-change time Open found. A file replaced since (renamed over:
// another inode) or written in place (a new ctime, which no one can set
// back, even where rsync or touch restore the mtime) is an error
// wrapping ErrFileChanged, never rows read through another file's page
// map. What it cannot see: a write within the file system's timestamp
// granularity of the last look that keeps size and inode, and a change
// that a network file system's attribute cache has not yet seen.
func checkIdentity(ix *index.Index, i int, want, got fileID, err error) error {
	f := ix.File(i)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrFileChanged, err)
	}
	var what string
	switch {
	case got.size != f.Size:
		what = fmt.Sprintf("size %d, now %d", f.Size, got.size)
	case !f.ModTime.IsZero() && got.mtime != f.ModTime.UnixNano():
		what = fmt.Sprintf("modified %s, now %s", f.ModTime.Format(time.RFC3339Nano), time.Unix(0, got.mtime).Format(time.RFC3339Nano))
	case want.ino != 0 && (got.dev != want.dev || got.ino != want.ino):
		what = fmt.Sprintf("replaced: inode %d, now %d", want.ino, got.ino)
	case want.ctime != 0 && got.ctime != want.ctime:
		what = fmt.Sprintf("written or changed in place: status changed %s, at Open %s",
			time.Unix(0, got.ctime).Format(time.RFC3339Nano), time.Unix(0, want.ctime).Format(time.RFC3339Nano))
	default:
		return nil
	}
	return fmt.Errorf("%w (%s): rebuild the index", ErrFileChanged, what)
}

// confirm checks file i's identity now (checkIdentity). Consumer only.
func (c *fileCache) confirm(i int) error {
	got, err := c.st.stat(c.ix.File(i).Path)
	return checkIdentity(c.ix, i, c.ids[i], got, err)
}

// confirmFiles confirms, once every read of fb has landed and before any
// of its rows goes out, that each file fb read is still the one indexed
// (checkIdentity): one statx per file per fetch batch, after the reads,
// so a change that any of the batch's reads (pages, other columns,
// dictionaries, continuation pages read synchronously) could have seen
// is seen. A changed file fails the batch with an error naming it, or
// with SkipBadPages drops each of its units (counted in
// Stats.SkippedPages). Consumer only.
func (l *Loader) confirmFiles(fb *fetchBatch) error {
	if benchSkipConfirm {
		return nil
	}
	c := &l.fc
	c.batch++
	if c.batch == 0 { // wrapped: no stamp may look current
		clear(c.seen)
		c.batch = 1
	}
	for i := range fb.units[:fb.n] {
		u := &fb.units[i]
		if u.err != nil || len(u.pages) == 0 {
			continue // failed, or skipped already
		}
		f := l.ix.Chunk(l.lead, u.chunk).File
		if c.seen[f] != c.batch {
			c.seen[f], c.seenErr[f] = c.batch, c.confirm(f)
			c.checks++
		}
		if err := c.seenErr[f]; err != nil {
			err = &PageError{Op: "check identity", Path: l.ix.File(f).Path, Off: l.ix.Locate(l.lead, u.first).Offset, Err: err}
			if !l.skip(fb, u, err) {
				return err
			}
		}
	}
	return nil
}

// landedErr returns the error of a landed fetch batch: its reads' and
// decodes', else a file changed since it was indexed (confirmFiles). A
// read or decode that failed on a file that changed since is that change
// (changedErr).
func (l *Loader) landedErr(fb *fetchBatch) error {
	if err := fb.firstErr(); err != nil {
		return l.changedErr(fb, err)
	}
	return l.confirmFiles(fb)
}

// changedErr returns the error fb failed with, err, unless a file fb read
// changed since it was indexed: then a unit's read that saw the change
// (ErrFileChanged), else ErrFileChanged naming the file (checkIdentity),
// with err. Bytes of a file being cut or written fail to decode, or to
// read, before any check sees the change (a page read while the file is
// written over in place decodes torn bytes): the change is the cause,
// not a corrupt page. One statx per file, on this failing path only.
// Consumer only.
func (l *Loader) changedErr(fb *fetchBatch, err error) error {
	if errors.Is(err, ErrFileChanged) || benchSkipConfirm {
		return err
	}
	for i := range fb.units[:fb.n] {
		if u := &fb.units[i]; u.err != nil && errors.Is(u.err, ErrFileChanged) {
			return u.err
		}
	}
	for i := range fb.units[:fb.n] {
		u := &fb.units[i]
		f := l.ix.Chunk(l.lead, u.chunk).File
		if cerr := l.fc.confirm(f); cerr != nil {
			return &PageError{Op: "check identity", Path: l.ix.File(f).Path, Off: l.ix.Locate(l.lead, u.first).Offset,
				Err: fmt.Errorf("%w; reading it: %w", cerr, err)}
		}
	}
	return err
}

// benchSkipConfirm turns confirmFiles off, for BenchmarkIdentityCheck to
// measure what the check costs. Nothing else sets it.
var benchSkipConfirm bool

// confirmPage is confirmFiles for a page read synchronously (a resumed
// State's pending rows): page g of the lead column's file.
func (l *Loader) confirmPage(g int) error {
	loc := l.ix.Locate(l.lead, g)
	if err := l.fc.confirm(loc.File); err != nil {
		return &PageError{Op: "check identity", Path: l.ix.File(loc.File).Path, Off: loc.Offset, Err: err}
	}
	return nil
}
