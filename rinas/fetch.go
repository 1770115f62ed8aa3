package rinas

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/pagefeed/pagefeed/codec"
	"github.com/pagefeed/pagefeed/engine"
	"github.com/pagefeed/pagefeed/index"
	"github.com/pagefeed/pagefeed/rinas/plan"
)

// unit is one scheduled piece of an epoch: a page (with its continuation
// where rows may cross pages), a row, or a row group.
type unit struct {
	idx   int    // its index in the fetch batch
	pos   uint64 // position in the epoch's order (at or past its units: a repeat)
	chunk int
	first int // first global page read
	n     int // pages read
	// loc is where page first lies when locOK (fillUnit looked it up:
	// the decoder reuses it rather than look it up again on its core).
	loc   index.Loc
	locOK bool
	row   int32 // row mode: the row within the page; -1 all
	// x0 and x1 are the unit's piece of the epoch's row stream; a unit
	// cut at a rank's share boundary (cut) delivers only its rows [lo,
	// hi), counted in its own order (see plan.Piece).
	x0, x1 uint64
	lo, hi int64
	cut    bool
	// keep is how many leading pages deliver rows (the rest only complete
	// the last row); rowgroup units keep all.
	keep int
	// nr counts the unit's reads: its n lead pages, then each side's
	// pages (several columns); r0 is the chunk-relative first row of its
	// span.
	nr int
	r0 int64
	// The reads go out as nreq requests (coalesced runs of adjacent
	// pages of one column chunk): request q holds reads [reqFirst[q],
	// reqFirst[q+1]) and lands in comps[q]; offs and sizes locate each
	// read's page.
	nreq     int
	reqFirst []int32
	sizes    []int32
	side     []sideSpan
	segs     [][]arrow.Array     // per kept lead page, each side's rows of it
	dicts    []*codec.Dictionary // per projected column, while decoding
	got      atomic.Int32
	comps    []*engine.Completion
	data     [][]byte // page bytes, from comps or a synchronous read
	offs     []int64
	pages    []*codec.Page
	// aliased is set when a page's array references a slot of comps:
	// the slots are then released with the batch, not after decoding.
	aliased bool
	err     error
	// Row shuffle's page cache (rowcache.go): rc says the unit went
	// through it, pc is its lead page's state, reads whether it reads
	// any page itself, claims the pages it reads for others, waits the
	// arrivals it waits for, pcErr the first error one brought.
	rc     bool
	reads  bool
	pc     int8
	claims []pcClaim
	waits  atomic.Int32
	pcErr  error
}

// fetchBatch is a batch of units read together (RINAS): all its reads are
// in flight at once and it is handed over when its last unit lands; order
// lists its units in landing order.
type fetchBatch struct {
	id    int
	epoch uint64
	// xEnd is where its last unit's piece ends in the epoch's stream: once
	// every unit is taken in, the share is taken in up to it.
	xEnd   uint64
	n      int
	units  []unit
	order  []int32
	landed atomic.Int32
	left   atomic.Int32
	done   chan struct{} // one token when the last unit lands
	// out is set while a page Batch made of fb is with the consumer: its
	// pages (and slots) are the consumer's until Batch.Release, Close
	// included.
	out atomic.Bool
	mu  sync.Mutex
	err error
}

func (fb *fetchBatch) fail(err error) {
	fb.mu.Lock()
	if fb.err == nil {
		fb.err = err
	}
	fb.mu.Unlock()
}

func (fb *fetchBatch) firstErr() error {
	fb.mu.Lock()
	defer fb.mu.Unlock()
	return fb.err
}

// releasePages drops the decoded pages and any slot still held.
func (fb *fetchBatch) releasePages() {
	for i := range fb.units[:fb.n] {
		u := &fb.units[i]
		for _, p := range u.pages {
			if p != nil { // a slot a page cache wait never filled
				p.Release()
			}
		}
		u.pages = u.pages[:0]
		u.releaseSides()
		u.aliased = false
		u.releaseComps()
	}
}

// identity lists unit indexes in plan order (Config.Deterministic).
var identity = func() []int32 {
	o := make([]int32, 1<<16)
	for i := range o {
		o[i] = int32(i)
	}
	return o
}()

// takeOrder returns the order in which the consumer takes in fb's units:
// their landing order, or with Config.Deterministic their plan order
// (fb is handed over once every unit has landed, so reads still complete
// in any order inside the fetch window).
func (l *Loader) takeOrder(fb *fetchBatch) []int32 {
	if l.cfg.Deterministic {
		return identity
	}
	return fb.order
}

// recycle returns a consumed fetch batch to the producer.
func (l *Loader) recycle(fb *fetchBatch) {
	fb.releasePages()
	fb.n = 0
	fb.err = nil
	fb.out.Store(false)
	l.free <- fb
}

// A page read's completion tag packs its fetch batch (at most
// maxPrefetch+1 of them), its unit within the batch (BatchPages ≤ 65,536)
// and its page within the unit (a row-group unit has up to maxUnitPages).
const (
	tagBatchBits = 8
	tagUnitBits  = 16
	tagPageBits  = 64 - tagBatchBits - tagUnitBits
)

// maxUnitPages bounds the pages of one unit (plan fails a row group with
// more): a unit holds an engine slot per page until it decodes, and a
// worker has at most 65,536 slots. A variable so tests can lower it.
var maxUnitPages = 1 << 16

func pageTag(fb, u, k int) uint64 {
	return uint64(fb)<<(tagUnitBits+tagPageBits) | uint64(u)<<tagPageBits | uint64(k)
}

// splitTag inverts pageTag.
func splitTag(tag uint64) (fb, u, k int) {
	return int(tag >> (tagUnitBits + tagPageBits)), int(tag >> tagPageBits & (1<<tagUnitBits - 1)), int(tag & (1<<tagPageBits - 1))
}

// produce schedules every unit of the loader's epochs, batch by batch,
// walking this rank's share of each epoch (from c's point in the first).
// It is the only goroutine that opens files and makes chunks.
func (l *Loader) produce(epoch uint64, e *plan.Epoch, spans []plan.Span, c plan.Cursor) {
	defer l.wg.Done()
	defer close(l.ready)
	defer close(l.pdone)
	if l.finished { // resumed after the run's last epoch
		return
	}
	ctx := l.ctx
	reqs := make([]engine.Request, 0, l.cfg.BatchPages*l.unitMax)
	// Where the share's page batches end (pages of known rows): read here,
	// before the producer hands anything over, so before the consumer
	// can move to another epoch's share.
	ends := l.share.Ends
	for {
		w := e.Walk(spans, c)
		w.Cut(ends)
		next := func() (plan.Piece, bool) {
			pc, ok := w.Next()
			for ok && ends != nil && pc.X1 == pc.X0 {
				pc, ok = w.Next() // a unit of no rows takes no place in a batch
			}
			return pc, ok
		}
		pc, more := next()
		for more {
			for len(ends) > 0 && ends[0] <= pc.X0 {
				ends = ends[1:] // the batch that ends there is taken
			}
			var fb *fetchBatch
			select {
			case fb = <-l.free:
			case <-ctx.Done():
				return
			}
			fb.epoch, fb.n = epoch, 0
			for more && fb.n < len(fb.units) && (len(ends) == 0 || pc.X0 < ends[0]) {
				u := &fb.units[fb.n]
				u.idx = fb.n
				if err := l.fillUnit(u, e, pc); err != nil {
					l.perr = err
					l.free <- fb
					return
				}
				fb.xEnd = pc.X1
				fb.n++
				pc, more = next()
			}
			fb.landed.Store(0)
			fb.left.Store(int32(fb.n))
			select {
			case l.ready <- fb:
			case <-ctx.Done():
				l.free <- fb
				return
			}
			if l.cfg.Fetch == Ordered {
				l.fetchOrdered(fb)
				continue
			}
			if err := l.submit(ctx, fb, reqs); err != nil {
				if !errors.Is(err, context.Canceled) {
					l.perr = err
				}
				return
			}
		}
		// The epoch's end.
		var fb *fetchBatch
		select {
		case fb = <-l.free:
		case <-ctx.Done():
			return
		}
		fb.n, fb.epoch = 0, epoch
		select {
		case l.ready <- fb:
		case <-ctx.Done():
			return
		}
		epoch++
		if epoch >= l.cfg.Epoch+uint64(l.cfg.Epochs) {
			return
		}
		// Memory and the page cache change between epochs: choose each
		// file's read mode again (a mixture's source: the mixture does,
		// at its own epochs, over all its sources).
		if !l.cfg.mixSource {
			l.chooseModes()
			l.applyModes()
		}
		e = l.epochPlan(epoch)
		sh, err := l.planShare(e, nil)
		if err != nil {
			l.perr = err
			return
		}
		spans, c, ends = sh.Spans, plan.Start(sh.Spans), sh.Ends
	}
}

// prepareChunk describes chunk c of index column k once.
func (l *Loader) prepareChunk(k, c int) error {
	key := l.key(k, c)
	if l.chunks[key] != nil {
		return nil
	}
	ci := l.ix.Chunk(k, c)
	l.chunks[key] = codec.ChunkOf(ci.Descr, ci.Codec, l.ix.File(ci.File).Path, nil)
	return nil
}

// submit issues the reads of fb: dictionaries first, then every page at
// once.
func (l *Loader) submit(ctx context.Context, fb *fetchBatch, reqs []engine.Request) error {
	defer l.rowPagesLookup(fb)()
	defer l.rowPagesHit(fb, l.hits)
	for i := range fb.units[:fb.n] {
		if fb.units[i].skipsReads() {
			continue
		}
		for _, k := range l.proj {
			if err := l.ensureDict(ctx, k, fb.units[i].chunk); err != nil {
				return err
			}
		}
	}
	reqs = reqs[:0]
	for i := range fb.units[:fb.n] {
		u := &fb.units[i]
		if u.skipsReads() {
			continue
		}
		ci := l.ix.Chunk(l.lead, u.chunk)
		f := l.fc.file(ci.File)
		// Spread units over the workers explicitly: decoding runs on
		// the worker that reaps, and the engine would otherwise fill
		// one worker's slots before touching the next.
		w := l.nextWorker()
		reqs = l.unitRequests(reqs, u, f, fb.id, i, w)
	}
	if len(reqs) > 0 {
		return l.pageQ.Submit(ctx, reqs)
	}
	return nil
}

// nextWorker deals the next unit that reads to a worker, in turn across
// fetch batches (the producer's own counter): any run of n consecutive
// units, and so the window in flight, gives a worker at most ceil(n/w)
// of them, which is what the sizing gives each worker slots for (all of
// a unit's requests go to its worker). Dealing by the unit's index in
// its batch instead put every unit of one-unit batches on worker 0.
func (l *Loader) nextWorker() int {
	if l.workers <= 1 {
		return 0
	}
	w := l.dealt % l.workers
	l.dealt++
	return w
}

// onPage runs on an engine worker for every page read that lands.
func (l *Loader) onPage(c *engine.Completion) {
	ifb, iu, q := splitTag(c.Tag)
	fb := l.fbs[ifb]
	u := &fb.units[iu]
	n := u.nreq // read before the count: once it is complete, u may be reused
	u.comps[q] = c
	l.sa.disk.Add(int64(c.DeviceBytes))
	l.sa.pageBytes.Add(int64(len(c.Data)))
	if int(u.got.Add(1)) < n {
		return
	}
	l.decodeUnit(fb, u, c.Worker)
}

// decodeUnit decodes a unit whose reads have all landed, on worker w, or
// parks it until a dictionary of its chunks lands (it is called again
// then).
func (l *Loader) decodeUnit(fb *fetchBatch, u *unit, w int) {
	if len(u.dicts) < len(l.proj) {
		u.dicts = make([]*codec.Dictionary, len(l.proj))
	}
	var err error
	for i, k := range l.proj {
		u.dicts[i] = nil
		if l.ix.Chunk(k, u.chunk).DictSize == 0 {
			continue
		}
		d, derr, parked := l.dicts.getOrPark(l.key(k, u.chunk), fb, u)
		if parked {
			return
		}
		if err == nil {
			err = derr
		}
		u.dicts[i] = d
	}
	if err == nil {
		err = l.decodeWith(l.decs[w], u)
	} else {
		u.releaseComps()
	}
	for _, k := range l.proj {
		if l.ix.Chunk(k, u.chunk).DictSize > 0 {
			l.dicts.unuse(l.key(k, u.chunk))
		}
	}
	l.finishUnit(fb, u, err)
}

// decodeWith decodes u's landed reads with the dictionaries in u.dicts
// and releases their slots, unless a decoded page references them (then
// recycle does).
func (l *Loader) decodeWith(dec *codec.Decoder, u *unit) error {
	defer func() {
		if !u.aliased {
			u.releaseComps()
		}
	}()
	for q, c := range u.comps[:u.nreq] {
		if c.Err != nil {
			return readErr(l.chunks[l.key(l.lead, u.chunk)].Path, c)
		}
		// The pages of request q: one, or a coalesced run.
		for k := int(u.reqFirst[q]); k < int(u.reqFirst[q+1]); k++ {
			lo := u.offs[k] - c.Off
			hi := lo + int64(u.sizes[k])
			if hi > int64(len(c.Data)) {
				return pageErrorf("read", l.chunks[l.key(l.lead, u.chunk)].Path, u.offs[k], ErrFileChanged,
					"read %d of the page's %d bytes", max(int64(len(c.Data))-lo, 0), u.sizes[k])
			}
			u.data[k] = c.Data[lo:hi]
		}
	}
	// A row unit of the page cache decodes every page it read, past a
	// failed one: the units parked on its other pages need them.
	var err error
	if !u.leadCached() {
		if err = l.decodePages(dec, u, u.dicts[l.leadPos], preadFile); err != nil && !u.rc {
			return err
		}
	}
	if serr := l.decodeSides(dec, u, u.dicts, preadFile); err == nil {
		err = serr
	}
	return err
}

// decodePages decodes the pages of u held in u.data; read fetches pages
// beyond the unit when a row runs past them.
func (l *Loader) decodePages(dec *codec.Decoder, u *unit, dict *codec.Dictionary, read readFunc) (err error) {
	ch := l.chunks[l.key(l.lead, u.chunk)]
	end := l.chunkEnd(l.lead, u.chunk)
	for k := 0; k < u.keep; k++ {
		// Decode page k with as many of the unit's following pages as its
		// last row needs: one more where rows may cross pages, growing
		// while the row goes on, then synchronous reads past the unit.
		// A page with a known row count (offset index) starts and ends at
		// row boundaries, as the format requires; only the others may end
		// inside a row.
		var loc index.Loc
		if k == 0 && u.locOK {
			loc = u.loc
		} else {
			loc = l.ix.Locate(l.lead, u.first+k)
		}
		aligned := !loc.EndsMidRow
		m := 1
		if !aligned && k+1 < u.n {
			m = 2
		}
		var p *codec.Page
		for {
			if p, err = dec.DecodeSpan(ch, dict, u.data[k:k+m], u.offs[k:k+m]); err != nil {
				return err
			}
			if aligned || !p.LastRowMayContinue() || u.first+k+m >= end {
				break
			}
			if k+m < u.n {
				p.Release()
				m++
				continue
			}
			if p, err = l.slowSpan(dec, u, k, dict, p, read); err != nil {
				return err
			}
			break
		}
		if err := l.checkPageAt(loc, p); err != nil {
			p.Release()
			return err
		}
		if p.Aliased() {
			u.aliased = true
			l.sa.zeroCopy.Add(1)
		}
		l.sa.pages.Add(1)
		l.sa.decoded.Add(int64(p.Header().UncompressedSize))
		u.pages = append(u.pages, p)
	}
	return nil
}

// checkPage holds decoded page g of column k to what the index claims of it, before
// any of its rows is used: rows are addressed by index (row mode, resume)
// on the index's word, so a page the index misdescribes would deliver
// garbage or lose rows. Every page must decode to exactly the rows the
// index counts in it (offset index, header or levels) and start a row (no
// leading levels continuing an earlier page) unless the index says it
// starts inside one; the index never says so of a chunk's first page,
// whose leading levels would belong to no row.
func (l *Loader) checkPage(k, g int, p *codec.Page) error {
	return l.checkPageAt(l.ix.Locate(k, g), p)
}

// checkPageAt is checkPage of the page at loc.
func (l *Loader) checkPageAt(loc index.Loc, p *codec.Page) error {
	if p.LeadingLevels() != 0 && !loc.StartsMidRow {
		return pageErrorf("check rows", l.ix.File(loc.File).Path, loc.Offset, ErrPageRows,
			"%d levels at its head continue a row of an earlier page, but the page should start a row", p.LeadingLevels())
	}
	if p.Rows() != int(loc.NumRows) {
		return pageErrorf("check rows", l.ix.File(loc.File).Path, loc.Offset, ErrPageRows,
			"%d rows decoded, the index says %d", p.Rows(), loc.NumRows)
	}
	return nil
}

// checkEmptyPage reads the header of page g, which the offset index says
// holds no row, and fails unless it holds no value either.
func (l *Loader) checkEmptyPage(g int) error {
	loc := l.ix.Locate(l.lead, g)
	path := l.ix.File(loc.File).Path
	b, err := preadFile(path, loc.Offset, min(int(loc.Size), 4096))
	if err != nil {
		return err
	}
	h, _, err := codec.ParsePageHeader(b)
	if err != nil {
		return &codec.Error{Op: "parse header", Path: path, Column: l.ix.Column(l.lead).Path, Off: loc.Offset, Err: err}
	}
	if h.NumValues() != 0 {
		return pageErrorf("check rows", path, loc.Offset, ErrPageRows, "%d values, the offset index says the page holds no row", h.NumValues())
	}
	return nil
}

func (l *Loader) chunkEnd(k, c int) int {
	ci := l.ix.Chunk(k, c)
	return ci.FirstPage + ci.NumPages
}

// finishUnit records a unit whose reads have been decoded (or failed,
// err): it lands, unless it is a row unit of the page cache still
// waiting for pages other units decode (rowcache.go).
func (l *Loader) finishUnit(fb *fetchBatch, u *unit, err error) {
	if u.rc {
		if l.rowPageDone(u, err) {
			l.completeRow(fb, u)
		}
		return
	}
	l.landUnit(fb, u, err)
}

// landUnit records a landed unit.
func (l *Loader) landUnit(fb *fetchBatch, u *unit, err error) {
	l.fc.release(l.ix.Chunk(l.lead, u.chunk).File)
	if err != nil && !l.skip(fb, u, err) {
		u.err = err
		fb.fail(err)
	}
	i := fb.landed.Add(1) - 1
	fb.order[i] = int32(u.idx)
	if fb.left.Add(-1) == 0 {
		fb.done <- struct{}{}
	}
}

// ensureDict makes sure the dictionary of chunk c of column k is loaded or
// being read.
func (l *Loader) ensureDict(ctx context.Context, k, c int) error {
	ci := l.ix.Chunk(k, c)
	if ci.DictSize == 0 || !l.dicts.acquire(l.key(k, c)) {
		return nil
	}
	f, err := l.fc.acquire(ci.File) // released by onDict
	if err != nil {
		return err
	}
	req := [1]engine.Request{{File: f, Off: ci.DictOffset, Len: int(ci.DictSize), Tag: uint64(l.key(k, c)), Worker: -1}}
	return l.dictQ.Submit(ctx, req[:])
}

// onDict runs on an engine worker when a dictionary page lands: it
// decodes it and then every unit that was waiting for it.
func (l *Loader) onDict(c *engine.Completion) {
	key, w := int(c.Tag), c.Worker // c is reused once released
	chunk := key % l.ix.NumChunks()
	l.fc.release(l.ix.Chunk(l.lead, chunk).File)
	l.sa.disk.Add(int64(c.DeviceBytes))
	l.sa.pageBytes.Add(int64(len(c.Data)))
	l.sa.dicts.Add(1)
	var d *codec.Dictionary
	var err error
	if c.Err != nil {
		err = readErr(l.chunks[key].Path, c)
	} else {
		d, err = l.decs[w].Dictionary(l.chunks[key], c.Data, c.Off)
	}
	c.Release()
	for _, p := range l.dicts.resolve(key, d, err, func() string { return l.chunkName(key) }) {
		l.decodeUnit(p.fb, p.u, w)
	}
}

// chunkName describes the chunk of key (see Loader.key), for errors.
func (l *Loader) chunkName(key int) string {
	k, c := key/l.ix.NumChunks(), key%l.ix.NumChunks()
	ci := l.ix.Chunk(k, c)
	return fmt.Sprintf("%s column %s row group %d", l.ix.File(ci.File).Path, l.ix.Column(k).Path, ci.RowGroup)
}

// releaseComps gives the unit's slots back. Each reference is cleared
// before its Release: a Drain that returns after the last Release must not
// race with writes to the unit.
func (u *unit) releaseComps() {
	for k, c := range u.comps {
		if c != nil {
			u.comps[k] = nil
			c.Release()
		}
	}
}

// dictCache holds each chunk's dictionary once read. An entry counts the
// units scheduled on it. Ready dictionaries count their decompressed bytes
// against budget (half of what MemoryLimit leaves after slots, token
// buffers and decoded pages; the decoders' column readers, which keep the
// dictionaries they decoded alive, share the other half through
// codec.Options.MaxStateDictBytes); beyond it, or beyond maxDictEntries entries, unused ready
// entries are evicted least recently used first (a later unit reads the
// dictionary again). Entries in use are never evicted, so the cache may
// exceed its budget by the dictionaries of the units in flight; a single
// dictionary larger than the whole budget fails its units with ErrMemory.
type dictCache struct {
	mu      sync.Mutex
	entries map[int]*dictEntry
	tick    uint64
	bytes   int64 // decompressed bytes of the ready entries
	budget  int64
}

type parkedUnit struct {
	fb *fetchBatch
	u  *unit
}

type dictEntry struct {
	ready  bool
	users  int
	used   uint64 // d.tick at the last use, for LRU eviction
	size   int64
	dict   *codec.Dictionary
	err    error
	parked []parkedUnit
}

const maxDictEntries = 256

func (d *dictCache) init(budget int64) {
	d.entries = map[int]*dictEntry{}
	d.budget = budget
}

// acquire counts one more unit on chunk c's dictionary and reports whether
// the dictionary must be read (no entry yet).
func (d *dictCache) acquire(c int) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.tick++
	if e, ok := d.entries[c]; ok {
		e.users++
		e.used = d.tick
		return false
	}
	d.entries[c] = &dictEntry{users: 1, used: d.tick}
	return true
}

// unuse ends one unit's use of chunk c's dictionary.
func (d *dictCache) unuse(c int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if e := d.entries[c]; e != nil {
		e.users--
	}
	d.evictLocked()
}

// evictLocked drops unused ready entries, least recently used first, until
// the cache is within its entry count and byte budget.
func (d *dictCache) evictLocked() {
	for len(d.entries) > maxDictEntries || d.bytes > d.budget {
		lru, lc := (*dictEntry)(nil), 0
		for c, e := range d.entries {
			if e.ready && e.users <= 0 && (lru == nil || e.used < lru.used) {
				lru, lc = e, c
			}
		}
		if lru == nil {
			return
		}
		d.bytes -= lru.size
		delete(d.entries, lc)
	}
}

// setLocked makes e ready with dict (or err), counting dict's bytes; a
// dictionary larger than the whole budget becomes an ErrMemory error.
func (d *dictCache) setLocked(e *dictEntry, c int, dict *codec.Dictionary, err error, name func() string) {
	if err == nil && dict != nil {
		if n := int64(dict.Bytes()); n > d.budget {
			err = fmt.Errorf("%w: the dictionary of %s decodes to %d bytes, more than the %d bytes MemoryLimit leaves for dictionaries", ErrMemory, name(), n, max(d.budget, 0))
			dict = nil
		} else {
			e.size = n
			d.bytes += n
		}
	}
	e.ready, e.dict, e.err = true, dict, err
}

// getOrPark returns chunk c's dictionary, or parks u until it lands.
func (d *dictCache) getOrPark(c int, fb *fetchBatch, u *unit) (*codec.Dictionary, error, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e := d.entries[c]
	if e == nil {
		return nil, fmt.Errorf("rinas: dictionary of chunk %d was never requested", c), false
	}
	if !e.ready {
		e.parked = append(e.parked, parkedUnit{fb, u})
		return nil, nil, true
	}
	return e.dict, e.err, false
}

// resolve stores a landed dictionary (or its error) and returns the units
// parked on it; name describes the chunk for an ErrMemory error.
func (d *dictCache) resolve(c int, dict *codec.Dictionary, err error, name func() string) []parkedUnit {
	d.mu.Lock()
	defer d.mu.Unlock()
	e := d.entries[c]
	if e == nil {
		return nil
	}
	d.setLocked(e, c, dict, err, name)
	p := e.parked
	e.parked = nil
	return p
}

// lookup returns a ready dictionary.
func (d *dictCache) lookup(c int) (*codec.Dictionary, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if e := d.entries[c]; e != nil && e.ready && e.err == nil {
		d.tick++
		e.used = d.tick
		return e.dict, true
	}
	return nil, false
}

// store adds a dictionary read synchronously; it fails with ErrMemory for
// a dictionary larger than the whole budget.
func (d *dictCache) store(c int, dict *codec.Dictionary, name func() string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.tick++
	e := &dictEntry{used: d.tick}
	d.setLocked(e, c, dict, nil, name)
	if e.err != nil {
		d.bytes -= e.size
		return e.err
	}
	if _, ok := d.entries[c]; ok {
		// cached already, or being read for units parked on that entry:
		// the caller uses its own copy once
		d.bytes -= e.size
		return nil
	}
	d.entries[c] = e
	d.evictLocked()
	return nil
}

// cachedBytes returns the decompressed bytes of the cached dictionaries.
func (d *dictCache) cachedBytes() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.bytes
}

func (d *dictCache) drop() {
	d.mu.Lock()
	d.entries = map[int]*dictEntry{}
	d.bytes = 0
	d.mu.Unlock()
}
