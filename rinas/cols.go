package rinas

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/pagefeed/pagefeed/codec"
	"github.com/pagefeed/pagefeed/engine"
)

// Several columns. Pages of different columns do not share row
// boundaries, so the epoch's units are row spans defined by one lead
// column: a lead page (page, stream and no shuffle), one row of it (row
// shuffle) or a row group. For every other projected column (a side) the
// unit also reads the pages whose row ranges overlap the span, decodes
// them and slices them to the span's rows: one array per lead page and
// column, so the chunks of every column of a batch are row-aligned. All
// reads of a unit, over all columns, go out in the same submission as the
// rest of its batch and the unit is decoded when its last read lands.
//
// A side page usually straddles several spans. Decoded side pages are
// held for the neighbours in a bounded cache (Config.SideCacheBytes): a
// unit whose side pages are all held reads none of them
// (Stats.SideCacheHits); otherwise it reads them all, and a page whose
// rows reach outside its span is counted in Stats.StraddleReads. Units
// in flight at once that need the same page each read it: waiting for
// another unit's read would tie batches together.
//
// Where a side's pages split rows (V1 pages of a repeated column without
// an offset index), a span's last side page may end inside a row: the
// unit also reads the pages that finish it, and decodes them only as its
// continuation.

// sideSpan is what a unit reads of one side column.
type sideSpan struct {
	first, n int // pages of the column read (global numbers)
	// keep: the first keep of them are decoded, each with the rows that
	// start in it; the rest only finish the last one's last row.
	keep  int
	base  int   // their reads' index in the unit's comps, data and offs
	row0  int64 // chunk-relative first row of page first
	pages []*codec.Page
	// hit: every page was in the side cache (n is then 0 and cached
	// holds them, retained); arrs are the pages' arrays in order,
	// decoded or cached, for slicing.
	hit    bool
	cached []arrow.Array
	arrs   []arrow.Array
}

// projection resolves Config.Columns and Config.LeadColumn against the
// index: proj lists the index columns delivered, in projection order, and
// lead the one whose pages define the units.
func (l *Loader) projection() error {
	if len(l.cfg.Columns) == 0 {
		// The default projection is the first leaf.
		l.proj = []int{0}
	} else {
		// A name is a column's logical path (input_ids, meta.lang), a
		// field above some (meta), or a leaf path of some file's schema
		// (input_ids.list.element): index.Lookup.
		seen := map[int]bool{}
		for _, name := range l.cfg.Columns {
			ks := l.ix.Lookup(name)
			if len(ks) == 0 {
				return fmt.Errorf("%w: no column %q among %s", ErrConfig, name, l.columnList())
			}
			for _, k := range ks {
				if !seen[k] {
					seen[k] = true
					l.proj = append(l.proj, k)
				}
			}
		}
	}
	l.lead = -1
	if lc := l.cfg.LeadColumn; lc != "" {
		for _, k := range l.ix.Lookup(lc) {
			if slices.Contains(l.proj, k) {
				l.lead = k
				break
			}
		}
		if l.lead < 0 {
			names := make([]string, len(l.proj))
			for i, k := range l.proj {
				names[i] = l.ix.Column(k).Path
			}
			return fmt.Errorf("%w: lead column %q is not projected (projection: %s)", ErrConfig, lc, strings.Join(names, ", "))
		}
	} else if len(l.proj) == 1 {
		l.lead = l.proj[0]
	} else {
		// The projected column with the most bytes.
		var best int64 = -1
		for _, k := range l.proj {
			if b := l.columnBytes(k); b > best {
				best, l.lead = b, k
			}
		}
	}
	for i, k := range l.proj {
		if k == l.lead {
			l.leadPos = i
		} else {
			l.sides = append(l.sides, k)
			l.sidePos = append(l.sidePos, i)
		}
	}
	if l.cfg.Output == OutputTokens && len(l.sides) > 0 {
		names := make([]string, len(l.sides))
		for i, k := range l.sides {
			names[i] = l.ix.Column(k).Path
		}
		return fmt.Errorf("%w: tokens output packs one column and cannot carry %s: project only the token column, or use arrow output",
			ErrConfig, strings.Join(names, ", "))
	}
	l.chunkRow0 = make([]int64, l.ix.NumChunks())
	for c := range l.chunkRow0 {
		ci := l.ix.Chunk(l.lead, c)
		l.chunkRow0[c] = ci.FirstRow - l.ix.File(ci.File).FirstRow
	}
	return nil
}

func (l *Loader) columnList() string {
	names := make([]string, l.ix.NumColumns())
	for k := range names {
		names[k] = l.ix.Column(k).Path
	}
	return strings.Join(names, ", ")
}

func (l *Loader) columnBytes(k int) int64 {
	var n int64
	for g := 0; g < l.ix.NumPages(k); g++ {
		n += int64(l.ix.Locate(k, g).Size)
	}
	return n
}

// key numbers chunk c of index column k for the chunk descriptors and the
// dictionary cache.
func (l *Loader) key(k, c int) int { return k*l.ix.NumChunks() + c }

// pageRow returns the chunk-relative first row of page g of column k in
// chunk c (the first row that starts in it).
func (l *Loader) pageRow(k, c, g int) int64 {
	return l.ix.Locate(k, g).FirstRow - l.chunkRow0[c]
}

// sidePages returns the pages of side s in chunk c whose rows overlap the
// chunk-relative rows [r0, r1) (keep of them, from first on), the pages to
// read (n: those and the ones that finish the last one's last row), and
// the first row of the first one.
func (l *Loader) sidePages(s, c int, r0, r1 int64) (first, keep, n int, row0 int64) {
	k := l.sides[s]
	ci := l.ix.Chunk(k, c)
	if ci.NumPages == 0 {
		return ci.FirstPage, 0, 0, 0
	}
	// the last page starting at or before r0, through the last starting before r1
	i := sort.Search(ci.NumPages, func(i int) bool { return l.pageRow(k, c, ci.FirstPage+i) > r0 }) - 1
	i = max(i, 0)
	j := sort.Search(ci.NumPages, func(j int) bool { return l.pageRow(k, c, ci.FirstPage+j) >= r1 })
	j = max(j, i+1)
	n = j - i
	// The last kept page's last row goes on while the next page starts
	// inside it; a page that starts a row of its own finishes it.
	for g := ci.FirstPage + j; g < ci.FirstPage+ci.NumPages; g++ {
		loc := l.ix.Locate(k, g)
		if !loc.StartsMidRow {
			break
		}
		n++
		if loc.NumRows > 0 {
			break
		}
	}
	return ci.FirstPage + i, j - i, n, l.pageRow(k, c, ci.FirstPage+i)
}

// runBytes returns the bytes from the start of page g of column k to the
// end of page g+n-1: one coalesced read of them.
func (l *Loader) runBytes(k, g, n int) int {
	if n <= 0 {
		return 0
	}
	a, b := l.ix.Locate(k, g), l.ix.Locate(k, g+n-1)
	return int(b.Offset + int64(b.Size) - a.Offset)
}

// planReads sizes what units read beyond their lead pages: l.sideReads,
// the most side pages one unit reads; l.sideMean, their mean size in lead
// pages of mean size (side pages are often far smaller); and l.maxRun, the longest run of one chunk's pages one unit reads (what a
// coalesced read may span).
func (l *Loader) planReads() {
	l.maxRun = 0
	if l.cfg.Shuffle == ShuffleRowGroup {
		for c := 0; c < l.ix.NumChunks(); c++ {
			for _, k := range l.proj {
				ci := l.ix.Chunk(k, c)
				l.maxRun = max(l.maxRun, l.runBytes(k, ci.FirstPage, ci.NumPages))
			}
		}
	}
	l.sideReads, l.sideMean = 0, 0
	if len(l.sides) == 0 {
		return
	}
	defer func() {
		// bytes per unit, in lead pages of mean size
		if n := l.ix.NumPages(l.lead); n > 0 {
			l.sideMean /= float64(l.columnBytes(l.lead)) / float64(n)
		}
	}()
	switch l.cfg.Shuffle {
	case ShuffleRowGroup:
		var total int64
		for c := 0; c < l.ix.NumChunks(); c++ {
			n := 0
			for _, k := range l.sides {
				ci := l.ix.Chunk(k, c)
				n += ci.NumPages
				total += int64(l.runBytes(k, ci.FirstPage, ci.NumPages))
			}
			l.sideReads = max(l.sideReads, n)
		}
		l.sideMean = float64(total) / float64(max(l.ix.NumChunks(), 1))
	default:
		// Every lead page's span (a row's span in row mode reads no more).
		var total int64
		for g := 0; g < l.ix.NumPages(l.lead); g++ {
			loc := l.ix.Locate(l.lead, g)
			r0 := loc.FirstRow - l.chunkRow0[loc.Chunk]
			r1 := r0 + int64(max(loc.NumRows, 0))
			n := 0
			for s, k := range l.sides {
				first, _, m, _ := l.sidePages(s, loc.Chunk, r0, r1)
				n += m
				run := l.runBytes(k, first, m)
				total += int64(run)
				if m > 1 {
					l.maxRun = max(l.maxRun, run)
				}
			}
			l.sideReads = max(l.sideReads, n)
		}
		l.sideMean = float64(total) / float64(max(l.ix.NumPages(l.lead), 1))
	}
}

// planSides fills u's side spans for the chunk-relative rows [r0, r1)
// (r1 < 0: to the chunk's end) and numbers their reads after the lead's.
func (l *Loader) planSides(u *unit, r0, r1 int64) {
	u.r0, u.nr = r0, u.n
	if len(l.sides) == 0 {
		return
	}
	if r1 < 0 {
		r1 = l.ix.Chunk(l.lead, u.chunk).NumRows
	}
	for s := range l.sides {
		sp := &u.side[s]
		sp.pages = sp.pages[:0] // released with the unit's batch
		sp.first, sp.keep, sp.n, sp.row0 = l.sidePages(s, u.chunk, r0, r1)
		sp.base = u.nr
		if l.sideHit(sp, l.sides[s]) {
			continue
		}
		u.nr += sp.n
		// A side page whose rows reach outside the span is read by the
		// neighbouring span's unit too.
		k, ci := l.sides[s], l.ix.Chunk(l.sides[s], u.chunk)
		end := ci.NumRows
		if g := sp.first + sp.keep; g < ci.FirstPage+ci.NumPages {
			end = l.pageRow(k, u.chunk, g)
		}
		if sp.row0 < r0 {
			l.sa.straddle.Add(1)
		}
		if end > r1 {
			l.sa.straddle.Add(1)
		}
	}
	for len(u.comps) < u.nr {
		u.comps = append(u.comps, nil)
		u.data = append(u.data, nil)
		u.offs = append(u.offs, 0)
	}
}

// decodeSides decodes u's side pages (held in u.data, or taken from the
// side cache) and cuts, for every lead page kept (its rows follow u.r0 in
// order; in row mode the one row u.r0), each side's rows of it into
// u.segs. dicts holds each projected column's dictionary.
func (l *Loader) decodeSides(dec *codec.Decoder, u *unit, dicts []*codec.Dictionary, read readFunc) error {
	if len(l.sides) == 0 {
		return nil
	}
	var first error
	for s, k := range l.sides {
		sp := &u.side[s]
		if sp.hit {
			continue
		}
		if err := l.decodeRun(dec, k, u.chunk, dicts[l.sidePos[s]], u.data[sp.base:sp.base+sp.n], u.offs[sp.base:sp.base+sp.n],
			sp.first, sp.keep, &sp.pages, read, &u.aliased); err != nil {
			// A row unit of the page cache goes on with the other
			// columns: units wait for its pages (rowcache.go).
			if !u.rc {
				return err
			}
			first = cmp.Or(first, err)
			continue
		}
		l.keepSide(sp, k)
	}
	if u.rc || first != nil {
		// The page cache cuts the row once every page has arrived.
		return first
	}
	return l.cutSides(u)
}

// cutSides cuts, for every lead page of u kept, each side's rows of it
// into u.segs, from the side pages decoded or cached.
func (l *Loader) cutSides(u *unit) error {
	if len(l.sides) == 0 {
		return nil
	}
	for s := range l.sides {
		if sp := &u.side[s]; sp.hit {
			sp.arrs = append(sp.arrs[:0], sp.cached...)
		}
	}
	row := u.r0
	for k, p := range u.pages {
		lo, hi := row, row+int64(p.Rows())
		row = hi
		if u.row >= 0 {
			lo, hi = u.r0, u.r0+1
		}
		if k == len(u.segs) {
			u.segs = append(u.segs, make([]arrow.Array, 0, len(l.sides)))
		}
		seg := u.segs[k][:0]
		for s := range l.sides {
			a, err := l.sliceSide(u, s, lo, hi)
			if err != nil {
				for _, x := range seg {
					x.Release()
				}
				return err
			}
			seg = append(seg, a)
		}
		u.segs[k] = seg
	}
	return nil
}

// decodeRun decodes the first keep pages of column k held in data (global
// numbers from first on), each with as many following pages as its last
// row needs (those in data, then read), appending one Page per page to
// out.
func (l *Loader) decodeRun(dec *codec.Decoder, k, c int, dict *codec.Dictionary, data [][]byte, offs []int64, first, keep int,
	out *[]*codec.Page, read readFunc, aliased *bool) error {
	ch := l.chunks[l.key(k, c)]
	ci := l.ix.Chunk(k, c)
	end := ci.FirstPage + ci.NumPages
	for i := range data[:keep] {
		aligned := !l.ix.Locate(k, first+i).EndsMidRow
		m := 1
		if !aligned && i+1 < len(data) {
			m = 2
		}
		var p *codec.Page
		var err error
		for {
			if p, err = dec.DecodeSpan(ch, dict, data[i:i+m], offs[i:i+m]); err != nil {
				return err
			}
			if aligned || !p.LastRowMayContinue() || first+i+m >= end {
				break
			}
			if i+m < len(data) {
				p.Release()
				m++
				continue
			}
			p.Release()
			l.sa.slow.Add(1)
			var bufs [][]byte
			var os []int64
			for j := i; j < len(data); j++ {
				bufs, os = append(bufs, clone(data[j])), append(os, offs[j])
			}
			if p, err = l.extendSpan(dec, k, c, dict, bufs, os, first+len(data), read); err != nil {
				return err
			}
			break
		}
		if err := l.checkPage(k, first+i, p); err != nil {
			p.Release()
			return err
		}
		if p.Aliased() {
			*aliased = true
			l.sa.zeroCopy.Add(1)
		}
		l.sa.pages.Add(1)
		l.sa.sidePages.Add(1)
		l.sa.decoded.Add(int64(p.Header().UncompressedSize))
		*out = append(*out, p)
	}
	return nil
}

func clone(b []byte) []byte { return append([]byte(nil), b...) }

// sliceSide returns side s's chunk-relative rows [lo, hi) from u's decoded
// side pages: a zero-copy slice when one page holds them, else a copy of
// the slices concatenated.
func (l *Loader) sliceSide(u *unit, s int, lo, hi int64) (arrow.Array, error) {
	sp := &u.side[s]
	var parts []arrow.Array
	row := sp.row0
	for _, a := range sp.arrs {
		n := int64(a.Len())
		plo, phi := max(lo, row), min(hi, row+n)
		if plo < phi {
			parts = append(parts, array.NewSlice(a, plo-row, phi-row))
		}
		row += n
		if row >= hi {
			break
		}
	}
	got := int64(0)
	for _, a := range parts {
		got += int64(a.Len())
	}
	if got != hi-lo {
		for _, a := range parts {
			a.Release()
		}
		k := l.sides[s]
		ci := l.ix.Chunk(k, u.chunk)
		return nil, pageErrorf("check rows", l.ix.File(ci.File).Path, l.ix.Locate(k, sp.first).Offset, ErrPageRows,
			"row group %d: column %s holds %d of rows [%d, %d) that column %s has: the columns' row counts differ",
			ci.RowGroup, l.ix.Column(k).Path, got, lo, hi, l.ix.Column(l.lead).Path)
	}
	if len(parts) == 1 {
		return parts[0], nil
	}
	if len(parts) == 0 && len(sp.arrs) > 0 { // a lead page where no row starts
		return array.NewSlice(sp.arrs[0], 0, 0), nil
	}
	a, err := array.Concatenate(parts, memory.DefaultAllocator)
	for _, x := range parts {
		x.Release()
	}
	return a, err
}

// releaseSides drops u's side pages and cut arrays.
func (u *unit) releaseSides() {
	for s := range u.side {
		sp := &u.side[s]
		for _, p := range sp.pages {
			p.Release()
		}
		for _, a := range sp.cached {
			if a != nil { // a slot a page cache wait never filled
				a.Release()
			}
		}
		sp.pages, sp.cached, sp.hit = sp.pages[:0], sp.cached[:0], false
		clear(sp.arrs)
		sp.arrs = sp.arrs[:0]
	}
	for k := range u.segs {
		for _, a := range u.segs[k] {
			a.Release()
		}
		u.segs[k] = u.segs[k][:0]
	}
}

// columnsOf assembles one Column per projected column from the lead's
// arrays and the sides' (segs[i][s]: side s's array beside lead array i).
func (l *Loader) columnsOf(lead []arrow.Array, segs [][]arrow.Array) []Column {
	cols := make([]Column, len(l.proj))
	for i, k := range l.proj {
		cols[i].Name = l.ix.Column(k).Path
	}
	cols[l.leadPos].Arrays = lead
	for s, pos := range l.sidePos {
		arrs := make([]arrow.Array, len(segs))
		for i := range segs {
			arrs[i] = segs[i][s]
		}
		cols[pos].Arrays = arrs
	}
	return cols
}

// readSidesSync reads, on the calling goroutine, every side's rows of lead
// page g (rows rows): resume rebuilds pending rows with it.
func (l *Loader) readSidesSync(g, rows int) (out []arrow.Array, err error) {
	loc := l.ix.Locate(l.lead, g)
	u := &unit{chunk: loc.Chunk, row: -1, side: make([]sideSpan, len(l.sides))}
	defer u.releaseSides()
	defer func() {
		if err != nil {
			for _, x := range out {
				x.Release()
			}
			out = nil
		}
	}()
	r0 := l.pageRow(l.lead, loc.Chunk, g)
	u.r0 = r0
	for s, k := range l.sides {
		if err := l.prepareChunk(k, loc.Chunk); err != nil {
			return out, err
		}
		dict, err := l.syncDict(k, loc.Chunk)
		if err != nil {
			return out, err
		}
		sp := &u.side[s]
		sp.first, sp.keep, sp.n, sp.row0 = l.sidePages(s, loc.Chunk, r0, r0+int64(rows))
		path := l.ix.File(loc.File).Path
		data, offs := make([][]byte, sp.n), make([]int64, sp.n)
		for j := range data {
			pl := l.ix.Locate(k, sp.first+j)
			if data[j], err = preadFile(path, pl.Offset, int(pl.Size)); err != nil {
				return out, err
			}
			offs[j] = pl.Offset
		}
		var aliased bool
		if err := l.decodeRun(l.syncD, k, loc.Chunk, dict, data, offs, sp.first, sp.keep, &sp.pages, preadFile, &aliased); err != nil {
			return out, err
		}
		for _, p := range sp.pages {
			sp.arrs = append(sp.arrs, p.Array())
		}
		a, err := l.sliceSide(u, s, r0, r0+int64(rows))
		if err != nil {
			return out, err
		}
		out = append(out, a)
	}
	return out, nil
}

// sameColumns reports whether a checkpoint's columns and lead name this
// loader's projection and lead: by their logical paths, or by names that
// mean them (a leaf path, as checkpoints of earlier versions hold).
func (l *Loader) sameColumns(cols []string, lead string) bool {
	means := func(name string, k int) bool {
		ks := l.ix.Lookup(name)
		return name == l.ix.Column(k).Path || (len(ks) == 1 && ks[0] == k)
	}
	if len(cols) != len(l.proj) || !means(lead, l.lead) {
		return false
	}
	for i, k := range l.proj {
		if !means(cols[i], k) {
			return false
		}
	}
	return true
}

// projNames returns the projected columns' logical paths in projection
// order.
func (l *Loader) projNames() []string {
	names := make([]string, len(l.proj))
	for i, k := range l.proj {
		names[i] = l.ix.Column(k).Path
	}
	return names
}

// coalesceGap is the most bytes between two pages of one chunk that a
// coalesced read spans: O_DIRECT reads are rounded out to 4 KiB anyway.
const coalesceGap = 4096

// joinsRun reports whether a page at off of size bytes joins the
// coalesced read [start, end) within limit bytes (0: coalescing off).
func joinsRun(start, end, off int64, size int32, limit int) bool {
	return off >= end && off-end <= coalesceGap && off+int64(size)-start <= int64(limit)
}

// rowGroupRequests returns the most requests one row-group unit issues
// when adjacent pages coalesce within limit bytes (see chunkRequests).
func (l *Loader) rowGroupRequests(limit int) int {
	most := 0
	for c := 0; c < l.ix.NumChunks(); c++ {
		most = max(most, l.chunkRequests(c, limit))
	}
	return most
}

// chunkRequests returns the requests unitRequests makes for the unit of
// row group c: every projected column's pages of the chunk, lead first,
// adjacent ones coalesced within limit bytes.
func (l *Loader) chunkRequests(c, limit int) int {
	n := 0
	for i := -1; i < len(l.sides); i++ {
		k := l.lead
		if i >= 0 {
			k = l.sides[i]
		}
		ci := l.ix.Chunk(k, c)
		var start, end int64
		for g := ci.FirstPage; g < ci.FirstPage+ci.NumPages; g++ {
			loc := l.ix.Locate(k, g)
			if g > ci.FirstPage && joinsRun(start, end, loc.Offset, loc.Size, limit) {
				end = loc.Offset + int64(loc.Size)
				continue
			}
			n++
			start, end = loc.Offset, loc.Offset+int64(loc.Size)
		}
	}
	return n
}

// unitRequests appends the requests of u's reads to reqs: each column's
// pages in order, adjacent ones (gap at most coalesceGap) merged into one
// request while it stays within l.coalesce bytes. It fills u.offs,
// u.sizes, u.reqFirst and u.nreq.
func (l *Loader) unitRequests(reqs []engine.Request, u *unit, f *engine.File, fb, i, w int) []engine.Request {
	u.reqFirst = u.reqFirst[:0]
	if cap(u.sizes) < u.nr {
		u.sizes = make([]int32, u.nr)
	}
	u.sizes = u.sizes[:u.nr]
	var cur *engine.Request
	add := func(read, k, g int, newRun bool) {
		loc := l.ix.Locate(k, g)
		u.offs[read], u.sizes[read] = loc.Offset, loc.Size
		if cur != nil && !newRun {
			end := cur.Off + int64(cur.Len)
			if joinsRun(cur.Off, end, loc.Offset, loc.Size, l.coalesce) {
				cur.Len = int(loc.Offset + int64(loc.Size) - cur.Off)
				l.sa.coalesced.Add(1)
				return
			}
		}
		q := len(u.reqFirst)
		u.reqFirst = append(u.reqFirst, int32(read))
		reqs = append(reqs, engine.Request{File: f, Off: loc.Offset, Len: int(loc.Size), Tag: pageTag(fb, i, q), Worker: w})
		cur = &reqs[len(reqs)-1]
	}
	for k := 0; k < u.n && !u.leadCached(); k++ {
		add(k, l.lead, u.first+k, k == 0)
	}
	for s, sk := range l.sides {
		sp := &u.side[s]
		for j := 0; j < sp.n; j++ {
			add(sp.base+j, sk, sp.first+j, j == 0)
		}
	}
	u.nreq = len(u.reqFirst)
	u.reqFirst = append(u.reqFirst, int32(u.nr))
	l.sa.reads.Add(int64(u.nreq))
	return reqs
}

// sideHit takes sp's pages of column k from the side cache when all are
// there (sp.n becomes 0: nothing to read).
func (l *Loader) sideHit(sp *sideSpan, k int) bool {
	sp.hit = false
	if l.sideC.max <= 0 {
		return false
	}
	for j := 0; j < sp.keep; j++ {
		a := l.sideC.get(k, sp.first+j)
		if a == nil {
			for _, x := range sp.cached {
				x.Release()
			}
			sp.cached = sp.cached[:0]
			return false
		}
		sp.cached = append(sp.cached, a)
	}
	l.sa.sideHits.Add(int64(sp.keep))
	sp.hit, sp.n = true, 0
	return true
}

// keepSide lists sp's decoded pages for slicing and offers them to the
// side cache (not those whose arrays reference a read slot).
func (l *Loader) keepSide(sp *sideSpan, k int) {
	sp.arrs = sp.arrs[:0]
	for j, p := range sp.pages {
		sp.arrs = append(sp.arrs, p.Array())
		if !p.Aliased() {
			l.sideC.put(k, sp.first+j, p.Array())
		}
	}
}
