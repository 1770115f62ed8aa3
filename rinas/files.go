package rinas

import (
	"errors"
	"sync"

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
	ids  []fileID // each file's identity at Open (checkIdentity)
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
	for i := range c.ids {
		c.ids[i], _ = statID(ix.File(i).Path) // a file that cannot be stat'ed fails when opened
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
	if err := checkIdentity(c.ix, i, c.ids[i]); err != nil {
		return nil, err
	}
	f, err := c.eng.OpenMode(c.ix.File(i).Path, mode)
	if err != nil {
		return nil, err
	}
	e.f, e.mode, e.refs = f, mode, 1
	c.open++
	return f, nil
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
