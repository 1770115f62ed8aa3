package rinas

import (
	"container/list"
	"errors"
	"sync"

	"github.com/pagefeed/pagefeed/codec"
)

// errPageGone fails the units parked on a page whose reader delivered none
// (it cannot happen to a row unit that read its page without an error).
var errPageGone = errors.New("rinas: the page a row waited for was not decoded")

// Row shuffle reads one row per unit, so a page of R rows is fetched R
// times an epoch: with pages of megabytes (DuckDB writes one page per
// column chunk) every row would read and decode a whole page. pageCache
// keeps decoded lead pages for row shuffle of one column, so a unit whose
// page is held takes its row from there, and a unit whose page an earlier
// unit is still reading waits for that decode instead of reading it again
// (it is parked, as units are for a dictionary). A page is then read once
// while it stays in memory: the cache holds what MemoryLimit leaves, up to
// the dataset's decoded size, least recently used first out. With other
// columns projected, units read their pages as before (the side cache
// holds the other columns' pages).
type pageCache struct {
	mu      sync.Mutex
	max     int64
	bytes   int64
	m       map[int]*list.Element // page → *pageEntry
	lru     list.List             // most recent at the front
	pending map[int][]parkedRow   // page → units waiting for its decode
}

type pageEntry struct {
	g    int
	p    codec.Page // holds one reference to its array
	size int64
}

// parkedRow is a unit waiting for the decode of its page by another unit.
type parkedRow struct {
	fb *fetchBatch
	u  *unit
}

// The page cache states of a unit (unit.pc).
const (
	pcNone   = iota // reads its pages
	pcHit           // its page came from the cache: nothing to read
	pcParked        // waits for another unit's decode of its page
	pcOwner         // reads its page for the units parked on it
)

func (c *pageCache) init(max int64) {
	c.max = max
	c.m = map[int]*list.Element{}
	c.pending = map[int][]parkedRow{}
}

// share returns a new Page holding one more reference to p's array.
func share(p *codec.Page) *codec.Page {
	q := *p
	q.Array().Retain()
	return &q
}

// lookup decides how unit u of fb gets page g, in u.pc: from the cache
// (pcHit, its page set), from a decode under way (pcParked), or by
// reading it (pcOwner: units that want g meanwhile wait for it). u.pc is
// set under the lock: the decode a parked unit waits for may finish it on
// a worker at once. Producer only.
func (c *pageCache) lookup(g int, fb *fetchBatch, u *unit) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.m[g]; e != nil {
		c.lru.MoveToFront(e)
		u.pages = append(u.pages[:0], share(&e.Value.(*pageEntry).p))
		u.pc = pcHit
		return
	}
	if w, ok := c.pending[g]; ok {
		u.pc = pcParked
		c.pending[g] = append(w, parkedRow{fb, u})
		return
	}
	c.pending[g] = nil
	u.pc = pcOwner
}

// resolve records the decode of page g (p, or nil) and returns the units
// parked on it. p is kept when it fits the cache.
func (c *pageCache) resolve(g int, p *codec.Page) []parkedRow {
	c.mu.Lock()
	defer c.mu.Unlock()
	parked := c.pending[g]
	delete(c.pending, g)
	if p == nil || c.m[g] != nil || p.Aliased() {
		return parked
	}
	// The page's decoded bytes, as its header says: its buffers come in
	// power-of-two classes whose unwritten tails are not resident.
	size := int64(p.Header().UncompressedSize) + 8*int64(p.Rows())
	if size > c.max {
		return parked
	}
	c.m[g] = c.lru.PushFront(&pageEntry{g: g, p: *share(p), size: size})
	c.bytes += size
	for c.bytes > c.max {
		e := c.lru.Back()
		ent := e.Value.(*pageEntry)
		c.lru.Remove(e)
		delete(c.m, ent.g)
		c.bytes -= ent.size
		ent.p.Release()
	}
	return parked
}

// drop releases every page held.
func (c *pageCache) drop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for e := c.lru.Front(); e != nil; e = e.Next() {
		e.Value.(*pageEntry).p.Release()
	}
	c.lru.Init()
	c.m = map[int]*list.Element{}
	c.pending = map[int][]parkedRow{}
	c.bytes = 0
}

// usesPageCache reports whether row units go through the page cache.
func (l *Loader) usesPageCache() bool {
	return l.cfg.Shuffle == ShuffleRow && len(l.sides) == 0 && l.pcache.max > 0
}

// rowPagesLookup decides, for each unit of fb, whether it reads its lead
// page or takes it from the page cache or a decode under way (row shuffle
// of one column). It runs once fb's landing counts are set (a unit parked
// here may be finished by another unit's decode at once), before fb's
// reads are issued, and returns what the producer calls when it is done
// with fb: until then fb counts one more unit to land, so that it cannot
// pass to the consumer (its units all parked and finished by others)
// while the producer still reads it.
func (l *Loader) rowPagesLookup(fb *fetchBatch) (done func()) {
	if !l.usesPageCache() {
		return noop
	}
	fb.left.Add(1)
	for i := range fb.units[:fb.n] {
		u := &fb.units[i]
		u.pc = pcNone
		l.pcache.lookup(u.first, fb, u)
	}
	return func() {
		if fb.left.Add(-1) == 0 {
			fb.done <- struct{}{}
		}
	}
}

// rowPageDone runs when unit u of fb has landed (finishUnit), with its
// error: a unit that read its page for others hands each a share of it
// (or the error) and finishes them.
func (l *Loader) rowPageDone(u *unit, err error) {
	if u.pc != pcOwner {
		return
	}
	// u.pc stays (the producer may still read it): a unit lands once per
	// lookup, and the next lookup sets it again.
	var p *codec.Page
	if err == nil && len(u.pages) == 1 {
		p = u.pages[0]
	}
	for _, w := range l.pcache.resolve(u.first, p) {
		werr := err
		if p != nil {
			w.u.pages = append(w.u.pages[:0], share(p))
		} else if werr == nil {
			werr = errPageGone
		}
		l.sa.pageHits.Add(1)
		l.finishUnit(w.fb, w.u, werr)
	}
}

// rowPageHits lists fb's units whose page the cache gave (their reads
// are skipped) into hits, for rowPagesHit: listed before any of fb's
// reads is issued, since once its last unit lands fb belongs to the
// consumer.
func (l *Loader) rowPageHits(fb *fetchBatch, hits []*unit) []*unit {
	hits = hits[:0]
	for i := range fb.units[:fb.n] {
		if u := &fb.units[i]; u.pc == pcHit {
			hits = append(hits, u)
		}
	}
	return hits
}

// rowPagesHit finishes the units of fb that rowPageHits listed; fb is
// not touched after the last.
func (l *Loader) rowPagesHit(fb *fetchBatch, hits []*unit) {
	for _, u := range hits {
		l.sa.pageHits.Add(1)
		l.finishUnit(fb, u, nil)
	}
}

func noop() {}

// skipsReads reports whether unit u reads nothing itself (page cache).
func (u *unit) skipsReads() bool { return u.pc == pcHit || u.pc == pcParked }

// benchNoPageCache makes Open size no page cache, for
// BenchmarkRowShuffleHugePages to measure what the cache saves. Nothing
// else sets it.
var benchNoPageCache bool
