package rinas

import (
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"slices"
	"sync"

	"github.com/pagefeed/pagefeed/codec"

	"github.com/pagefeed/pagefeed/index/perm"
)

// epochPlan is how one epoch is shared out among the ranks so that every
// rank takes the same number of steps (Config.DropLast, PadLast). Every
// rank computes the whole world's shares from the index, so no rank needs
// to hear from another.
type epochPlan struct {
	end   uint64    // this rank's shard end (perm.Shard.End)
	cuts  []UnitCut // units delivering only their first rows, by position
	steps int64     // batches this rank yields in the epoch (Len)
	// force makes Next yield exactly steps batches (tokens output, whose
	// token count the index cannot know): a short epoch is padded with
	// empty batches, the rest of a long one dropped.
	force   bool
	dropped int64 // rows of this rank's share left out (DropLast)
	padded  int64 // rows this rank repeats (PadLast)
}

// planInit reads what the epoch plans need from the index once: each
// page's row count for row batches, and for tokens output each page's
// estimated token count.
func (l *Loader) planInit() error {
	l.plans = planner{}
	if l.cfg.Shuffle != ShuffleRow && l.cfg.Shuffle != ShuffleRowGroup {
		l.pageRows = l.ix.PageRows(l.lead)
		if l.cfg.BatchRows > 0 && l.cfg.Output == OutputArrow && !l.cfg.KeepUneven {
			for g, n := range l.pageRows {
				if n < 0 {
					loc := l.ix.Locate(l.lead, g)
					return fmt.Errorf("%w: equal steps with row batches need each page's row count, and %s has pages without one (no offset index): set KeepUneven, use page batches or the rowgroup shuffle",
						ErrConfig, l.ix.File(loc.File).Path)
				}
			}
		}
	}
	if l.cfg.Output == OutputTokens {
		l.pageTok = l.tokenEstimates()
	}
	return nil
}

// tokenEstimates estimates the tokens (values, plus one EOS per row) of
// every page: a flat int32 column holds one token per row, exactly; a list
// column's values are estimated from its bytes, at the values per byte of
// sampled page headers.
func (l *Loader) tokenEstimates() []float64 {
	n := l.ix.NumPages(l.lead)
	out := make([]float64, n)
	rows := l.ix.PageRows(l.lead)
	if l.ix.Column(l.lead).Descr.MaxRepetitionLevel() == 0 {
		for g := range out {
			out[g] = float64(max(rows[g], 0))
		}
		return out
	}
	sizes := l.ix.PageSizes(l.lead)
	vals, bytes := 0.0, 0.0
	m := min(n, sampleHeaders)
	for k := 0; k < m; k++ {
		g := k * n / m
		loc := l.ix.Locate(l.lead, g)
		b, err := preadFile(l.ix.File(loc.File).Path, loc.Offset, min(int(loc.Size), 4096))
		if err != nil {
			continue
		}
		if h, _, err := codec.ParsePageHeader(b); err == nil && h.NumValues() >= 0 {
			vals += float64(h.NumValues())
			bytes += float64(loc.Size)
		}
	}
	perByte := 0.25 // plain int32
	if bytes > 0 {
		perByte = vals / bytes
	}
	for g := range out {
		r := float64(max(rows[g], 0))
		out[g] = float64(sizes[g])*perByte + r
	}
	return out
}

// unitWeight returns the rows (tokens output: estimated tokens) of the
// unit item.
func (l *Loader) unitWeight(item uint64) float64 {
	switch l.cfg.Shuffle {
	case ShuffleRow:
		if l.pageTok != nil {
			g := l.rowPage(int64(item))
			return l.pageTok[g] / float64(max(l.rowStart[g+1]-l.rowStart[g], 1))
		}
		return 1
	case ShuffleRowGroup:
		c := l.ix.Chunk(l.lead, int(item))
		if l.pageTok != nil {
			t := 0.0
			for g := c.FirstPage; g < c.FirstPage+c.NumPages; g++ {
				t += l.pageTok[g]
			}
			return t
		}
		return float64(c.NumRows)
	}
	if l.pageTok != nil {
		return l.pageTok[item]
	}
	return float64(max(l.pageRows[item], 0))
}

// rowPage returns the page holding global row row (row mode): the last
// page starting at or before it (empty pages start where the next does).
func (l *Loader) rowPage(row int64) int {
	i, _ := slices.BinarySearch(l.rowStart[:len(l.rowStart)-1], row+1)
	return i - 1
}

// item returns the unit at (unwrapped) position pos of sh's epoch.
func (l *Loader) item(sh perm.Shard, pos uint64) uint64 {
	return unitAt(sh, pos, inFileOrder(l.cfg.Shuffle))
}

// planner keeps the epoch plans computed so far, so that an epoch is
// planned once although the consumer (Open, then each epoch's start), a
// State check and the producer (planning ahead) all ask for it: with row
// batches a plan is a pass over the whole epoch. It is safe for concurrent
// use; the zero value is empty.
type planner struct {
	mu    sync.Mutex
	plans [4]plannedEpoch // the most recent, any order
	next  int             // the slot the next plan replaces
}

type planKey struct {
	epoch, start uint64
}

type plannedEpoch struct {
	key planKey
	set bool
	sh  perm.Shard
	ep  epochPlan
}

// planEpoch returns rank's plan of an epoch whose shard starts at start.
// Only an epoch planned for this world is equalized; the remainder of one
// that Reshard dealt out (rem, a Resharded state; nil otherwise) keeps the
// original plan's end and cut units, which rem carries (End, Cut). A plan
// depends on nothing but its arguments and what Open fixed (the
// configuration and the index), so a plan of this world computed before is
// returned again; a remainder's plan is computed once, at Open.
func (l *Loader) planEpoch(epoch, start uint64, rem *State) (perm.Shard, epochPlan, error) {
	if rem != nil {
		return l.computePlan(epoch, start, rem)
	}
	k := planKey{epoch, start}
	pl := &l.plans
	pl.mu.Lock()
	for _, c := range pl.plans {
		if c.set && c.key == k {
			pl.mu.Unlock()
			return c.sh, c.ep, nil
		}
	}
	pl.mu.Unlock()
	// Computed unlocked: two callers racing for a new epoch both compute
	// it, and get the same plan.
	sh, ep, err := l.computePlan(epoch, start, nil)
	if err != nil {
		return sh, ep, err
	}
	pl.mu.Lock()
	pl.plans[pl.next] = plannedEpoch{key: k, set: true, sh: sh, ep: ep}
	pl.next = (pl.next + 1) % len(pl.plans)
	pl.mu.Unlock()
	return sh, ep, nil
}

// computePlan computes planEpoch's plan: the shard of epoch's permutation
// starting at start, then the end, cuts and step count of the batching
// mode's planner (planPages, planTokens or planRows).
func (l *Loader) computePlan(epoch, start uint64, rem *State) (perm.Shard, epochPlan, error) {
	p := l.perm(epoch)
	sh, err := p.Shard(start, l.cfg.Rank, l.cfg.World)
	if err != nil {
		return sh, epochPlan{}, err
	}
	ep := epochPlan{end: l.nUnits}
	resharded := rem != nil
	if resharded && rem.End != nil {
		ep.end, ep.cuts = *rem.End, rem.Cut
	}
	even := !resharded && !l.cfg.KeepUneven
	switch {
	case l.cfg.BatchRows == 0:
		sh, ep = l.planPages(sh, start, ep, even)
	case l.cfg.Output == OutputTokens:
		sh, ep = l.planTokens(sh, start, ep, even)
	default:
		sh, ep = l.planRows(p, sh, start, ep, even)
	}
	return sh, ep, nil
}

// planPages plans page batches: equal units per rank (even), each rank's
// steps its units over BatchPages, and the rows the equal end drops or
// repeats counted for the report.
func (l *Loader) planPages(sh perm.Shard, start uint64, ep epochPlan, even bool) (perm.Shard, epochPlan) {
	w := uint64(l.cfg.World)
	ep.end = pageEnd(l.nUnits, l.cfg.World, l.cfg.PadLast, even, ep.end)
	sh = sh.WithEnd(ep.end)
	ep.steps = int64((sh.Len() + uint64(l.cfg.BatchPages) - 1) / uint64(l.cfg.BatchPages))
	if even && ep.end < l.nUnits {
		for pos := ep.end; pos < l.nUnits; pos++ {
			if (pos-start)%w == uint64(l.cfg.Rank) {
				ep.dropped += l.unitRows(l.item(sh, pos))
			}
		}
	}
	for pos := l.nUnits; even && pos < ep.end; pos++ {
		if (pos-start)%w == uint64(l.cfg.Rank) {
			ep.padded += l.unitRows(l.item(sh, pos))
		}
	}
	return sh, ep
}

// planTokens plans tokens output: equal units per rank (even), and a step
// count from the estimated tokens that Next then yields exactly.
func (l *Loader) planTokens(sh perm.Shard, start uint64, ep epochPlan, even bool) (perm.Shard, epochPlan) {
	w := uint64(l.cfg.World)
	ep.end = pageEnd(l.nUnits, l.cfg.World, l.cfg.PadLast, even, ep.end)
	sh = sh.WithEnd(ep.end)
	per := float64(l.cfg.BatchRows) * float64(l.cfg.SeqLen)
	tok := make([]float64, l.cfg.World)
	for pos := start; pos < ep.end; pos++ {
		tok[(pos-start)%w] += l.unitWeight(l.item(sh, pos))
	}
	ep.steps, ep.force = ceilSteps(tok[l.cfg.Rank], per), even
	if even && l.cfg.World > 1 {
		for _, t := range tok {
			if l.cfg.DropLast {
				ep.steps = min(ep.steps, ceilSteps(t, per))
			} else {
				ep.steps = max(ep.steps, ceilSteps(t, per))
			}
		}
	}
	return sh, ep
}

// planRows plans row batches: it counts every rank's rows, takes the
// common number of batches (the fewest full ones under DropLast, the most
// under PadLast), and cuts this rank's share where it has filled them
// (planRowsEnd).
func (l *Loader) planRows(p perm.Perm, sh perm.Shard, start uint64, ep epochPlan, even bool) (perm.Shard, epochPlan) {
	b := int64(l.cfg.BatchRows)
	rows := make([]int64, l.cfg.World)
	if l.cfg.Shuffle == ShuffleRow {
		for r := range rows {
			s, _ := p.Shard(start, r, l.cfg.World)
			rows[r] = int64(s.Len())
		}
	} else {
		l.countRows(p, start, rows)
	}
	own := rows[l.cfg.Rank]
	if !even {
		ep.steps = (own + b - 1) / b
		return sh.WithEnd(ep.end), ep
	}
	steps := own / b
	if l.cfg.PadLast {
		steps = (own + b - 1) / b
	}
	for _, r := range rows {
		if l.cfg.PadLast {
			steps = max(steps, (r+b-1)/b)
		} else {
			steps = min(steps, r/b)
		}
	}
	ep.steps = steps
	want := steps * b
	ep.end, ep.cuts = l.planRowsEnd(sh, start, own, want, ep.end, ep.cuts)
	if want < own {
		ep.dropped = own - want
	} else {
		ep.padded = want - own
	}
	return sh.WithEnd(ep.end), ep
}

// planRowsEnd returns the end (and the cut unit, if one delivers only its
// first rows) at which sh's share, own rows up to N, holds exactly want
// rows; end and cuts are returned unchanged where the share already ends
// there.
func (l *Loader) planRowsEnd(sh perm.Shard, start uint64, own, want int64, end uint64, cuts []UnitCut) (uint64, []UnitCut) {
	nat := sh.Len() // this rank's units up to N
	rowsAt := func(j uint64) int64 { return l.unitRows(l.item(sh, sh.Pos(j))) }
	switch {
	case want == 0:
		end = start
	case l.cfg.Shuffle == ShuffleRow:
		end = sh.Pos(uint64(want-1)) + 1
	case want == own:
		// ends with its last unit
	case want < own:
		// DropLast: walk back from the share's end to the unit where want
		// rows are reached.
		acc, j := own, nat-1
		for acc-rowsAt(j) >= want {
			acc -= rowsAt(j)
			j--
		}
		end = sh.Pos(j) + 1
		if acc > want {
			cuts = []UnitCut{{Pos: sh.Pos(j), Rows: rowsAt(j) - (acc - want)}}
		}
	default:
		// PadLast: go on past N, repeating the start of the order.
		acc := own
		for j := nat; ; j++ {
			n := rowsAt(j)
			if acc+n >= want {
				end = sh.Pos(j) + 1
				if acc+n > want {
					cuts = []UnitCut{{Pos: sh.Pos(j), Rows: want - acc}}
				}
				break
			}
			acc += n
		}
	}
	return end, cuts
}

// countRows adds the rows of every position from start on to its rank's
// count (positions go round-robin over len(rows) ranks). It is the one
// pass over the whole epoch behind row batches' equal steps, so it runs
// over the items in order (each item's position from the inverse
// permutation, a block at a time: the row counts are read sequentially),
// split over GOMAXPROCS goroutines it waits for.
func (l *Loader) countRows(p perm.Perm, start uint64, rows []int64) {
	n := l.nUnits
	if start >= n {
		return
	}
	unit := l.pageRows
	if unit == nil { // rowgroup units: each chunk's rows, flat
		unit = make([]int32, n)
		for c := range unit {
			r := l.ix.Chunk(l.lead, c).NumRows
			if r > math.MaxInt32 {
				// Beyond a flat int32 count: the reference pass.
				l.countRowsLoop(p, start, rows)
				return
			}
			unit[c] = int32(r)
		}
	}
	ordered := inFileOrder(l.cfg.Shuffle)
	parts := uint64(max(1, min(runtime.GOMAXPROCS(0), int(n/(1<<16)))))
	if parts == 1 {
		countRange(p, ordered, unit, start, 0, n, rows)
		return
	}
	w := uint64(len(rows))
	sums := make([]int64, parts*w)
	var wg sync.WaitGroup
	for k := uint64(0); k < parts; k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			countRange(p, ordered, unit, start, n*k/parts, n*(k+1)/parts, sums[k*w:(k+1)*w])
		}()
	}
	wg.Wait()
	for k := uint64(0); k < parts; k++ {
		for r, v := range sums[k*w : (k+1)*w] {
			rows[r] += v
		}
	}
}

// countRange adds to rows[r] the rows (unit[item], 0 where negative) of
// the items in [lo, hi) whose position from start falls to rank r of
// len(rows); ordered: each item is at its own position.
func countRange(p perm.Perm, ordered bool, unit []int32, start, lo, hi uint64, rows []int64) {
	w := uint64(len(rows))
	unit = unit[:hi]
	if ordered {
		r := uint64(0)
		if lo < start {
			lo = start
		} else {
			r = (lo - start) % w
		}
		for item := lo; item < hi; item++ {
			rows[r] += int64(max(unit[item], 0))
			if r++; r == w {
				r = 0
			}
		}
		return
	}
	// (pos-start) mod w by Lemire's multiply (positions below 2³²), not a
	// division per item.
	fast := p.Len() <= 1<<32
	mw := ^uint64(0)/w + 1
	var buf [2048]uint64
	for item := lo; item < hi; {
		pos := buf[:min(uint64(len(buf)), hi-item)]
		p.Positions(item, pos)
		for i, q := range pos {
			if q < start {
				continue
			}
			d := q - start
			var r uint64
			if fast {
				r, _ = bits.Mul64(mw*d, w)
			} else {
				r = d % w
			}
			rows[r] += int64(max(unit[item+uint64(i)], 0))
		}
		item += uint64(len(pos))
	}
}

// countRowsLoop is countRows one position at a time (rowgroups of more
// than 2³¹ rows).
func (l *Loader) countRowsLoop(p perm.Perm, start uint64, rows []int64) {
	w := uint64(len(rows))
	for pos := start; pos < l.nUnits; pos++ {
		rows[(pos-start)%w] += l.unitRows(p.At(pos))
	}
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

func ceilSteps(t, per float64) int64 {
	n := int64(t / per)
	if float64(n)*per < t {
		n++
	}
	return n
}

// Len returns the number of batches Next yields in the current epoch for
// this rank (Open's first epoch until Next moves on). It is exact, known
// at Open, and the same on every rank unless KeepUneven is set:
//   - page batches: ⌈units/BatchPages⌉ of the rank's units;
//   - row batches (arrow output): the rank's rows (after DropLast or
//     PadLast) over BatchRows, rounded up;
//   - tokens output: from the tokens of the rank's units, exact for a flat
//     int32 column (one token per row) and estimated for a list column
//     (from its page bytes, at the values per byte of sampled page
//     headers, plus one EOS per row). With DropLast or PadLast Next
//     honours the count, so that every rank takes the same steps: an
//     epoch whose tokens run out early is padded with empty batches (all
//     Pad, LossMask 0, Fill 0), and one that has more drops the rest
//     (Stats.DroppedRows); DropLast takes the smallest rank's count,
//     PadLast the largest. With KeepUneven (World 1's default) every
//     token is delivered and Len is the estimate.
//
// An epoch resumed from a State counts its whole length, the batches
// delivered before the checkpoint included.
func (l *Loader) Len() int { return int(l.ep.steps) }

// EpochLen returns the number of batches Next yields for this rank in
// epoch: Len of the epoch being read (resumed and resharded epochs
// included), and of any other epoch as a fresh start of it plans it. Like
// Len it is exact for page and row batches and the same on every rank
// unless KeepUneven is set; see Len for tokens output.
func (l *Loader) EpochLen(epoch uint64) (int, error) {
	if l.closed {
		return 0, ErrClosed
	}
	if epoch == l.epoch {
		return int(l.ep.steps), nil
	}
	_, ep, err := l.planEpoch(epoch, 0, nil)
	if err != nil {
		return 0, err
	}
	return int(ep.steps), nil
}
