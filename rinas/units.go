package rinas

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sort"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/pagefeed/pagefeed/codec"
	"github.com/pagefeed/pagefeed/rinas/plan"
)

// What one unit of an epoch is, for each shuffle, and the plan's space of
// them. A unit is a page of the lead column (page, stream and no
// shuffle: with its continuation where rows may cross pages), one row
// (row shuffle) or a row group (rowgroup shuffle). The plan (package
// plan) sees each unit as a count and a weight: its rows (1 for the row
// shuffle's single rows, and for page batches over units whose rows are
// not all known, which are dealt whole), and its estimated tokens for
// tokens output.

// openUnits sizes the epoch's units from the index.
func (l *Loader) openUnits() error {
	n := l.ix.NumPages(l.lead)
	if n == 0 {
		return fmt.Errorf("%w: the dataset has no pages in column %s", ErrConfig, l.ix.Column(l.lead).Path)
	}
	l.unitMax = 1
	switch l.cfg.Shuffle {
	case ShuffleRow:
		l.rowStart = make([]int64, n+1)
		for g := 0; g < n; g++ {
			loc := l.ix.Locate(l.lead, g)
			if loc.NumRows < 0 {
				return fmt.Errorf("%w: row shuffle needs each page's row count, and %s has pages without one (no offset index)",
					ErrConfig, l.ix.File(loc.File).Path)
			}
			l.rowStart[g+1] = l.rowStart[g] + int64(loc.NumRows)
			if loc.NumRows == 0 && !loc.StartsMidRow {
				// No row maps to a page the index calls empty, so it is
				// never read: make sure now that it holds nothing.
				if err := l.checkEmptyPage(g); err != nil {
					return err
				}
			}
		}
	case ShuffleRowGroup:
		for c := 0; c < l.ix.NumChunks(); c++ {
			ci := l.ix.Chunk(l.lead, c)
			if ci.NumPages > maxUnitPages {
				return fmt.Errorf("%w: rowgroup shuffle reads a row group's chunk as one unit of at most %d pages, and row group %d of %s has %d in column %s: use page or row shuffle, or smaller row groups",
					ErrConfig, maxUnitPages, ci.RowGroup, l.ix.File(ci.File).Path, ci.NumPages, l.ix.Column(l.lead).Path)
			}
			if ci.NumRows > math.MaxInt32 {
				return fmt.Errorf("%w: row group %d of %s holds %d rows, more than the rowgroup shuffle's %d: use page or row shuffle",
					ErrConfig, ci.RowGroup, l.ix.File(ci.File).Path, ci.NumRows, math.MaxInt32)
			}
			l.unitMax = max(l.unitMax, ci.NumPages)
		}
		if l.cfg.BatchPages == 64 { // the default means one row group per batch here
			l.cfg.BatchPages = 1
		}
	default:
		// A page and its continuation where rows cross pages (V1 pages of
		// a repeated column without an offset index): fillUnit reads the
		// next page with a page whose last row goes on in it.
		if l.ix.SplitsRows(l.lead) {
			l.unitMax = 2
		}
	}
	l.planReads()
	if n := l.unitMax + l.sideReads; n > maxUnitPages {
		return fmt.Errorf("%w: a unit would read %d pages (%d of column %s and %d of the other columns), at most %d: use page shuffle, smaller row groups or another LeadColumn",
			ErrConfig, n, l.unitMax, l.ix.Column(l.lead).Path, l.sideReads, maxUnitPages)
	}
	return l.openSpace()
}

// kind returns what the loader's batches are made of, for the plan.
func (l *Loader) kind() plan.Kind {
	switch {
	case l.cfg.BatchRows == 0:
		return plan.Units
	case l.cfg.Output == OutputTokens:
		return plan.Tokens
	}
	return plan.Rows
}

// policy returns Config's DropLast, PadLast or KeepUneven.
func (l *Loader) policy() plan.Policy {
	switch {
	case l.cfg.PadLast:
		return plan.Pad
	case l.cfg.KeepUneven:
		return plan.Keep
	}
	return plan.Drop
}

// params returns how the loader's epochs are dealt out.
func (l *Loader) params() plan.Params {
	p := plan.Params{World: l.cfg.World, Rank: l.cfg.Rank, Kind: l.kind(), Policy: l.policy(), Batch: uint64(l.cfg.BatchPages)}
	switch p.Kind {
	case plan.Rows:
		p.Batch = uint64(l.cfg.BatchRows)
	case plan.Tokens:
		p.Batch = uint64(l.cfg.BatchRows) * uint64(l.cfg.SeqLen)
	}
	return p
}

// openSpace builds the plan's space of units: each unit's count (its rows
// for row batches) and, for tokens output, its estimated tokens; then it
// checks that the plan can give every rank data.
func (l *Loader) openSpace() error {
	kind := l.kind()
	n := uint64(l.ix.NumPages(l.lead))
	var counts []int32
	var weights []int64
	var tokens uint64
	var pageTok []int64
	if kind == plan.Tokens {
		pageTok = l.tokenEstimates()
	}
	switch l.cfg.Shuffle {
	case ShuffleRow:
		n = uint64(l.rowStart[len(l.rowStart)-1])
		for _, t := range pageTok {
			tokens += uint64(t)
		}
	case ShuffleRowGroup:
		n = uint64(l.ix.NumChunks())
		counts = make([]int32, n) // every row group's rows are known
		for c := range counts {
			counts[c] = int32(l.ix.Chunk(l.lead, c).NumRows)
		}
		if pageTok != nil {
			weights = make([]int64, n)
			for c := range weights {
				ci := l.ix.Chunk(l.lead, c)
				for g := ci.FirstPage; g < ci.FirstPage+ci.NumPages; g++ {
					weights[c] += pageTok[g]
				}
			}
		}
	default:
		l.pageRows = l.ix.PageRows(l.lead)
		// Page batches share rows too where every page's rows are
		// known; otherwise they deal whole pages.
		if kind != plan.Units || !slices.ContainsFunc(l.pageRows, func(r int32) bool { return r < 0 }) {
			counts = l.pageRows
		}
		weights = pageTok
	}
	if kind == plan.Rows && l.policy() != plan.Keep {
		for g, r := range counts {
			if r < 0 {
				loc := l.ix.Locate(l.lead, g)
				return fmt.Errorf("%w: equal steps with row batches need each page's row count, and %s has pages without one (no offset index): set KeepUneven, use page batches or the rowgroup shuffle",
					ErrConfig, l.ix.File(loc.File).Path)
			}
		}
	}
	if counts != nil && l.pageRows != nil {
		// A page the index calls empty may sit at a share's boundary,
		// where no rank reads it: make sure now that it holds nothing (a
		// page inside a row holds that row's rest, read with its start).
		for g, r := range counts {
			if r == 0 && !l.ix.Locate(l.lead, g).StartsMidRow {
				if err := l.checkEmptyPage(g); err != nil {
					return err
				}
			}
		}
	}
	ordered := l.cfg.Shuffle == ShuffleNone || l.cfg.Shuffle == ShuffleStream
	s, err := plan.NewSpace(n, counts, weights, tokens, ordered)
	if err != nil {
		return fmt.Errorf("rinas: %w", err)
	}
	l.space = s
	l.epochs = epochCache{}
	if err := s.Check(l.params()); err != nil {
		return l.planErr(err)
	}
	return nil
}

// planErr turns a plan's refusal into an ErrConfig saying what to change.
func (l *Loader) planErr(err error) error {
	return fmt.Errorf("%w: %v (rank %d of %d; shards are World = ranks × DataLoader workers): use fewer ranks or workers, a smaller BatchRows or BatchPages, PadLast or KeepUneven, or a larger dataset",
		ErrConfig, err, l.cfg.Rank, l.cfg.World)
}

// tokenEstimates estimates the tokens (values, plus one EOS per row) of
// every page: a flat int32 column holds one token per row, exactly; a list
// column's values are estimated from its bytes, at the values per byte of
// sampled page headers. The estimate is integer arithmetic only, so every
// rank computes the same plan from it.
func (l *Loader) tokenEstimates() []int64 {
	n := l.ix.NumPages(l.lead)
	out := make([]int64, n)
	rows := l.ix.PageRows(l.lead)
	if l.ix.Column(l.lead).Descr.MaxRepetitionLevel() == 0 {
		for g := range out {
			out[g] = int64(max(rows[g], 0))
		}
		return out
	}
	sizes := l.ix.PageSizes(l.lead)
	var vals, bytes uint64
	m := min(n, sampleHeaders)
	for k := 0; k < m; k++ {
		g := k * n / m
		loc := l.ix.Locate(l.lead, g)
		b, err := preadFile(l.ix.File(loc.File).Path, loc.Offset, min(int(loc.Size), 4096))
		if err != nil {
			continue
		}
		if h, _, err := codec.ParsePageHeader(b); err == nil && h.NumValues() >= 0 {
			vals += uint64(h.NumValues())
			bytes += uint64(loc.Size)
		}
	}
	if bytes == 0 || vals == 0 {
		vals, bytes = 1, 4 // plain int32
	}
	for g := range out {
		hi, lo := bits.Mul64(uint64(sizes[g]), vals)
		v := uint64(math.MaxInt32)
		if hi < bytes { // the quotient fits 64 bits
			v, _ = bits.Div64(hi, lo, bytes)
		}
		out[g] = int64(min(v, math.MaxInt32)) + int64(max(rows[g], 0))
	}
	return out
}

// fillUnit describes the unit of piece pc of epoch e.
func (l *Loader) fillUnit(u *unit, e *plan.Epoch, pc plan.Piece) error {
	u.pos, u.row, u.err = pc.Pos, -1, nil
	u.x0, u.x1, u.lo, u.hi, u.cut = pc.X0, pc.X1, pc.Lo, pc.Hi, pc.Cut
	u.got.Store(0)
	u.pages = u.pages[:0]
	u.locOK = false
	item := pc.Item
	switch l.cfg.Shuffle {
	case ShuffleRowGroup:
		c := l.ix.Chunk(l.lead, int(item))
		u.chunk, u.first, u.n, u.keep = int(item), c.FirstPage, c.NumPages, c.NumPages
		l.planSides(u, 0, -1)
	case ShuffleRow:
		row := int64(item)
		// the page whose rows hold row: the last g with rowStart[g] <= row
		g := sort.Search(len(l.rowStart), func(i int) bool { return l.rowStart[i] > row }) - 1
		loc := l.ix.Locate(l.lead, g)
		u.chunk, u.first, u.n, u.keep = loc.Chunk, g, 1, 1
		u.loc, u.locOK = loc, true
		u.row = int32(row - l.rowStart[g])
		if len(l.sides) > 0 {
			r := l.pageRow(l.lead, loc.Chunk, g) + int64(u.row)
			l.planSides(u, r, r+1)
		} else {
			u.nr = u.n
		}
	default:
		g := int(item)
		loc := l.ix.Locate(l.lead, g)
		u.chunk, u.first, u.n, u.keep = loc.Chunk, g, 1, 1
		u.loc, u.locOK = loc, true
		if loc.EndsMidRow {
			u.n = 2 // its last row continues in the next page
		}
		if len(l.sides) > 0 {
			r := l.pageRow(l.lead, loc.Chunk, g)
			l.planSides(u, r, r+int64(loc.NumRows))
		} else {
			u.nr = u.n
		}
	}
	for _, k := range l.proj {
		if err := l.prepareChunk(k, u.chunk); err != nil {
			return err
		}
	}
	// The unit holds its file open until finishUnit (see fileCache).
	_, err := l.fc.acquire(l.ix.Chunk(l.lead, u.chunk).File)
	return err
}

// unitRows returns the rows of unit item (0 where unknown).
func (l *Loader) unitRows(item uint64) int64 {
	switch l.cfg.Shuffle {
	case ShuffleRow:
		return 1
	case ShuffleRowGroup:
		return l.ix.Chunk(l.lead, int(item)).NumRows
	}
	return int64(max(l.pageRows[item], 0))
}

// rowUnit returns the unit that delivers row r and the count of that unit
// before the row, or false when the row is beyond what the index says its
// page holds, or its place in the unit is unknown (a row group's page
// whose first row the index does not know).
func (l *Loader) rowUnit(r RowRef) (item uint64, off int64, ok bool) {
	g := int(r.Page)
	loc := l.ix.Locate(l.lead, g)
	switch {
	case l.cfg.Shuffle == ShuffleRow:
		if int64(r.Row) >= l.rowStart[g+1]-l.rowStart[g] {
			return 0, 0, false
		}
		return uint64(l.rowStart[g] + int64(r.Row)), 0, true
	case l.cfg.Shuffle == ShuffleRowGroup:
		if loc.FirstRow < 0 {
			return 0, 0, false
		}
		return uint64(loc.Chunk), l.pageRow(l.lead, loc.Chunk, g) + int64(r.Row), true
	case !l.space.Counted():
		return uint64(g), 0, true
	}
	if loc.NumRows >= 0 && int64(r.Row) >= int64(loc.NumRows) {
		return 0, 0, false
	}
	return uint64(g), int64(r.Row), true
}

// spanRows returns the rows of the units in spans of epoch e's stream
// (whole units where they count 1 each; otherwise the counts, which are
// rows).
func (l *Loader) spanRows(e *plan.Epoch, spans []plan.Span) int64 {
	var n int64
	for _, sp := range spans {
		if l.space.Counted() || l.cfg.Shuffle == ShuffleRow {
			n += int64(sp.Len())
			continue
		}
		for x := sp.Lo; x < sp.Hi; x++ {
			pos, _ := e.Locate(x)
			n += l.unitRows(e.Order.At(pos % l.space.Len()))
		}
	}
	return n
}

// epochCache keeps the epochs' orders and sums computed so far, so that
// an epoch is summed once although the consumer, a State check and the
// producer (planning ahead) all ask for it: a sum is a pass over the
// whole epoch. It keeps the rank's share of each too (planShare from the
// epoch's start), which the producer and the consumer both take: dealing
// page batches walks the rank's whole share. It is safe for concurrent
// use; the zero value is empty.
type epochCache struct {
	mu     sync.Mutex
	eps    [4]*plan.Epoch // the most recent, any order
	next   int            // the slot the next one replaces
	shares [4]sharedPlan  // shares of the most recent epochs, any order
	snext  int
}

// sharedPlan is the rank's share of epoch e from its start. Its slices
// are shared by every caller, which only read them.
type sharedPlan struct {
	e  *plan.Epoch
	sh plan.Share
}

// epochPlan returns epoch's order and sums.
func (l *Loader) epochPlan(epoch uint64) *plan.Epoch {
	c := &l.epochs
	c.mu.Lock()
	for _, e := range c.eps {
		if e != nil && e.Number() == epoch {
			c.mu.Unlock()
			return e
		}
	}
	c.mu.Unlock()
	// Computed unlocked: two callers racing for a new epoch both compute
	// it, and get the same sums.
	e := l.space.Epoch(l.cfg.Seed, epoch)
	c.mu.Lock()
	c.eps[c.next] = e
	c.next = (c.next + 1) % len(c.eps)
	c.mu.Unlock()
	return e
}

// planShare returns the rank's part of epoch e: from the remainder an
// earlier world left (rem, a Resharded state) or from the epoch's start
// (rem nil).
func (l *Loader) planShare(e *plan.Epoch, rem *State) (plan.Share, error) {
	p := l.params()
	if rem == nil || !rem.Resharded {
		c := &l.epochs
		c.mu.Lock()
		for _, s := range c.shares {
			if s.e == e {
				c.mu.Unlock()
				return s.sh, nil
			}
		}
		c.mu.Unlock()
		// Computed unlocked, as epochPlan: a racing caller gets the same.
		sh, err := e.Plan(p)
		if err != nil {
			return sh, l.planErr(err)
		}
		c.mu.Lock()
		c.shares[c.snext] = sharedPlan{e, sh}
		c.snext = (c.snext + 1) % len(c.shares)
		c.mu.Unlock()
		return sh, nil
	}
	perCount := 0.0
	if t := l.space.Total(); t > 0 {
		perCount = float64(l.space.Tokens()) / float64(t)
	}
	rest := plan.Rest{Spans: rem.Rest, Pending: rem.RestPending}
	return e.RestShare(rest, p, perCount)
}

// cloneSpans copies spans (nil stays nil).
func cloneSpans(s []plan.Span) []plan.Span { return slices.Clone(s) }

// sliceSegs returns the rows [lo, hi) of each side's array beside a lead
// page (a page batch's cut unit), as new arrays the batch releases.
func sliceSegs(seg []arrow.Array, lo, hi int64) []arrow.Array {
	out := make([]arrow.Array, len(seg))
	for s, a := range seg {
		out[s] = array.NewSlice(a, lo, hi)
	}
	return out
}
