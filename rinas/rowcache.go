package rinas

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/pagefeed/pagefeed/codec"
)

// errPageGone fails the units parked on a page whose reader delivered none
// (it cannot happen to a row unit that read its page without an error).
var errPageGone = errors.New("rinas: the page a row waited for was not decoded")

// Row shuffle reads one row per unit, so a page of R rows is fetched R
// times an epoch: with pages of megabytes (DuckDB writes one page per
// column chunk) every row would read and decode a whole page of every
// projected column. pageCache keeps decoded pages of every projected
// column for row shuffle, keyed by column and page: a unit takes each of
// its pages (its lead page, and the pages of every other column that hold
// its row) from the cache when held, waits for the decode of a page
// another unit is reading (it is parked on that page, as units are on a
// dictionary), and reads the rest, for itself and the units that come to
// wait on them. A page is then read and decoded once while it stays in
// memory: the cache holds what MemoryLimit leaves, up to the dataset's
// decoded size, least recently used first out.
//
// A unit lands once everything it waits for has arrived: its own reads'
// decode and each page it is parked on (unit.waits counts them). Whoever
// delivers the last (the unit's worker, or the worker of a unit that read
// a page for it) cuts its row out of the other columns' pages and lands
// it. A page whose reader failed fails the units parked on it with the
// reader's error; a page the reader decoded reaches them even when
// another of its pages failed.
type pageCache struct {
	mu      sync.Mutex
	max     int64
	want    int64                  // what the dataset's decoded pages are estimated at
	warned  bool                   // tooSmall said so once
	c       byteLRU[codec.Page]    // by pageKey; each Page holds one reference to its array
	pending map[uint64][]parkedRow // page → units waiting for its decode
}

// parkedRow is a unit waiting for the decode of one of its pages by
// another unit: its lead page (side -1) or page j of side span side.
type parkedRow struct {
	fb      *fetchBatch
	u       *unit
	side, j int
}

// pcClaim is a page a unit reads for the units that come to wait on it:
// its lead page (side -1) or page j of side span side.
type pcClaim struct {
	key     uint64
	side, j int
}

// The page cache states of a unit's lead page (unit.pc).
const (
	pcNone   = iota // reads it
	pcHit           // from the cache: nothing to read
	pcParked        // waits for another unit's decode of it
	pcOwner         // reads it for the units parked on it
)

func (c *pageCache) init(max, want int64) {
	c.max, c.want = max, want
	c.c.init(max, func(p codec.Page) { p.Release() })
	c.pending = map[uint64][]parkedRow{}
}

// tooSmall reports, once, that the cache has let pages go to fit its
// bound: their rows to come read and decode them again, so an epoch
// reads more than the dataset. It returns the message ("" when there is
// nothing to say).
func (c *pageCache) tooSmall() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.warned || c.c.evicted == 0 {
		return ""
	}
	c.warned = true
	return fmt.Sprintf("row shuffle: the page cache of %s (at most half of MemoryLimit) holds less than the dataset's decoded pages (about %s): %d pages were let go and are read and decoded again when their other rows come; a MemoryLimit of about %s reads each page once an epoch",
		sizeStr(c.max), sizeStr(c.want), c.c.evicted, sizeStr(2*c.want+(64<<20)))
}

// share returns a new Page holding one more reference to p's array.
func share(p *codec.Page) *codec.Page {
	q := *p
	q.Array().Retain()
	return &q
}

// takeLocked decides how unit u of fb gets page key (its lead page for
// side -1, else page j of side span side): held (returned, shared for
// the caller), under decode by another unit (u is parked on it and
// waits for one more arrival), or neither (nil, false). c.mu is held.
func (c *pageCache) takeLocked(key uint64, fb *fetchBatch, u *unit, side, j int) (p *codec.Page, parked bool) {
	if p, ok := c.c.get(key); ok {
		return share(&p), false
	}
	if w, ok := c.pending[key]; ok {
		c.pending[key] = append(w, parkedRow{fb, u, side, j})
		u.waits.Add(1)
		return nil, true
	}
	return nil, false
}

// claimLocked makes u the reader of page key: units that want it
// meanwhile wait for u's decode. c.mu is held.
func (c *pageCache) claimLocked(key uint64, u *unit, side, j int) {
	c.pending[key] = nil
	u.claims = append(u.claims, pcClaim{key, side, j})
}

// lookup decides, for unit u of fb, how it gets each of its pages (see
// takeLocked), claims the pages it reads and no other unit is reading,
// and reports whether u is complete already (every page held): it then
// reads nothing and the caller lands it. Otherwise u reads what it must
// (unit.reads) and lands when its reads and the pages it waits for have
// all arrived. Its state is set under the lock: the decode a parked unit
// waits for may finish it on a worker at once. Producer only.
func (l *Loader) lookup(fb *fetchBatch, u *unit) (ready bool) {
	c := &l.pcache
	c.mu.Lock()
	defer c.mu.Unlock()
	u.rc, u.reads, u.pcErr, u.claims = true, false, nil, u.claims[:0]
	u.waits.Store(1) // the lookup's own hold, dropped at its end
	key := pageKey(l.lead, u.first)
	switch p, parked := c.takeLocked(key, fb, u, -1, 0); {
	case p != nil:
		u.pages, u.pc = append(u.pages[:0], p), pcHit
		l.sa.pageHits.Add(1)
	case parked:
		u.pages, u.pc = append(u.pages[:0], nil), pcParked // its slot
	default:
		c.claimLocked(key, u, -1, 0)
		u.pc, u.reads = pcOwner, true
	}
	for s, k := range l.sides {
		sp := &u.side[s]
		if sp.hit || sp.keep == 0 {
			continue
		}
		// The span's pages come from the cache or other units' decodes
		// when each of them does; else the unit reads the whole span
		// (a row may run into pages beyond the kept ones) and claims
		// the pages no one is reading.
		all := true
		for j := range sp.keep {
			key := pageKey(k, sp.first+j)
			if !c.c.has(key) {
				if _, ok := c.pending[key]; !ok {
					all = false
					break
				}
			}
		}
		if !all {
			for j := range sp.keep {
				key := pageKey(k, sp.first+j)
				if _, ok := c.pending[key]; !ok && !c.c.has(key) {
					c.claimLocked(key, u, s, j)
				}
			}
			u.reads = true
			continue
		}
		sp.cached = slices.Grow(sp.cached[:0], sp.keep)[:sp.keep]
		for j := range sp.keep {
			p, _ := c.takeLocked(pageKey(k, sp.first+j), fb, u, s, j)
			sp.cached[j] = nil
			if p != nil {
				sp.cached[j] = p.Array() // the share's reference
				l.sa.pageHits.Add(1)
			}
		}
		sp.hit, sp.n = true, 0
	}
	if u.reads {
		u.waits.Add(1)
	}
	// Number the reads left without gaps: a request's reads run to the
	// next request's first (unitRequests).
	u.nr = 0
	if !u.leadCached() {
		u.nr = u.n
	}
	for s := range u.side {
		u.side[s].base = u.nr
		u.nr += u.side[s].n
	}
	return u.waits.Add(-1) == 0
}

// resolve records the decode of page key (p, or nil) and returns the
// units parked on it. p is kept when it fits the cache.
func (c *pageCache) resolve(key uint64, p *codec.Page) []parkedRow {
	c.mu.Lock()
	defer c.mu.Unlock()
	parked := c.pending[key]
	delete(c.pending, key)
	if p == nil || c.c.has(key) || p.Aliased() {
		return parked
	}
	// The page's decoded bytes, as its header says: its buffers come in
	// power-of-two classes whose unwritten tails are not resident.
	size := int64(p.Header().UncompressedSize) + 8*int64(p.Rows())
	if size > c.max {
		return parked
	}
	c.c.add(key, *share(p), size)
	return parked
}

// drop releases every page held.
func (c *pageCache) drop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.c.drop()
	c.pending = map[uint64][]parkedRow{}
}

// usesPageCache reports whether row units go through the page cache.
func (l *Loader) usesPageCache() bool {
	return l.cfg.Shuffle == ShuffleRow && l.pcache.max > 0
}

// rowPagesLookup decides, for each unit of fb, which of its pages it
// reads and which it takes from the page cache or a decode under way
// (row shuffle), listing in l.hits the units that read nothing and wait
// for nothing, for rowPagesHit. It runs once fb's landing counts are set
// (a unit parked here may be finished by another unit's decode at once),
// before fb's reads are issued, and returns what the producer calls when
// it is done with fb: until then fb counts one more unit to land, so that
// it cannot pass to the consumer (its units all parked and finished by
// others) while the producer still reads it.
func (l *Loader) rowPagesLookup(fb *fetchBatch) (done func()) {
	l.hits = l.hits[:0]
	if !l.usesPageCache() {
		return noop
	}
	fb.left.Add(1)
	for i := range fb.units[:fb.n] {
		u := &fb.units[i]
		if l.lookup(fb, u) {
			l.hits = append(l.hits, u)
		}
	}
	return func() {
		if fb.left.Add(-1) == 0 {
			fb.done <- struct{}{}
		}
	}
}

// rowPagesHit lands the units of fb that rowPagesLookup listed; fb is
// not touched after the last.
func (l *Loader) rowPagesHit(fb *fetchBatch, hits []*unit) {
	for _, u := range hits {
		l.completeRow(fb, u)
	}
}

// rowPageDone runs when a row unit that read pages has decoded them (or
// failed, err): it hands each page it claimed to the units parked on it
// (or the error when the page was not decoded), and reports whether u
// itself is complete (nothing else to wait for).
func (l *Loader) rowPageDone(u *unit, err error) bool {
	for _, cl := range u.claims {
		var p *codec.Page
		if cl.side < 0 {
			if len(u.pages) == 1 && u.pages[0] != nil {
				p = u.pages[0]
			}
		} else if sp := &u.side[cl.side]; cl.j < len(sp.pages) {
			p = sp.pages[cl.j]
		}
		if err == nil && p == nil {
			err = errPageGone
		}
		for _, w := range l.pcache.resolve(cl.key, p) {
			werr := err
			if p != nil {
				werr = nil
				q := share(p)
				if w.side < 0 {
					w.u.pages[0] = q
				} else {
					w.u.side[w.side].cached[w.j] = q.Array()
				}
				l.sa.pageHits.Add(1)
			}
			if l.rowArrive(w.u, werr) {
				l.completeRow(w.fb, w.u)
			}
		}
	}
	return l.rowArrive(u, err)
}

// rowArrive counts one arrival for u (err: it brought an error, the
// first of which u lands with) and reports whether it was the last.
func (l *Loader) rowArrive(u *unit, err error) bool {
	if err != nil {
		l.pcache.mu.Lock()
		if u.pcErr == nil {
			u.pcErr = err
		}
		l.pcache.mu.Unlock()
	}
	return u.waits.Add(-1) == 0
}

// completeRow lands a row unit whose pages have all arrived: its row of
// the other columns is cut from their pages, or the first error it met
// fails it (the slots of pages that never came are dropped).
func (l *Loader) completeRow(fb *fetchBatch, u *unit) {
	l.pcache.mu.Lock()
	err := u.pcErr
	l.pcache.mu.Unlock()
	if err == nil {
		err = l.cutSides(u)
	}
	if err != nil {
		u.pages = slices.DeleteFunc(u.pages, func(p *codec.Page) bool { return p == nil })
		for s := range u.side {
			sp := &u.side[s]
			sp.cached = slices.DeleteFunc(sp.cached, func(a arrow.Array) bool { return a == nil })
		}
	}
	l.landUnit(fb, u, err)
}

func noop() {}

// skipsReads reports whether unit u reads nothing itself (page cache).
func (u *unit) skipsReads() bool { return u.rc && !u.reads }

// leadCached reports whether u's lead page comes from the page cache or
// another unit's decode, not from its own read.
func (u *unit) leadCached() bool { return u.rc && (u.pc == pcHit || u.pc == pcParked) }

// benchNoPageCache makes Open size no page cache, for
// BenchmarkRowShuffleHugePages to measure what the cache saves. Nothing
// else sets it.
var benchNoPageCache bool
