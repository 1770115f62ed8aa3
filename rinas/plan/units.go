package plan

import "fmt"

// Batches of units over a space that counts rows (page batches of pages
// or row groups whose rows are known): shares are rows, dealt as for row
// batches, and every rank must take the same number of batches of at most
// Batch pieces each, a number known before any is read.
//
// A rank's pieces are those of its share that hold rows (a unit counting
// 0 delivers nothing, so it is left out and takes no place in a batch).
// Steps is the largest ⌈pieces/Batch⌉ over the ranks, under every
// policy (Keep too: equal steps cost no row). A rank takes its m pieces in exactly Steps batches:
//   - when ⌈m/Batch⌉ = Steps: Batch pieces a batch in order, the last
//     short;
//   - when m ≥ Steps otherwise: batch k holds pieces ⌊k·m/Steps⌋ to
//     ⌊(k+1)·m/Steps⌋ (at most ⌈m/Steps⌉ ≤ Batch);
//   - when m < Steps: every batch holds part of one piece. Piece i is cut
//     at rows into a_i parts of near-equal rows, a_i = 1 + ⌊D_i·E/K⌋ −
//     ⌊D_{i−1}·E/K⌋, where E = Steps − m parts are extra, K is the
//     rank's rows − m (its cut points) and D_i sums the cut points
//     (rows − 1) of pieces up to i: so a_i ≤ the piece's rows, and the
//     a_i sum to Steps.
//
// Every rank holds at least Steps rows (each piece holds one, and every
// rank the same rows), so no batch is empty; under Keep, where ranks'
// rows differ by one, a rank holding fewer rows than Steps takes a step
// a row.
// Everything is integer arithmetic on the shares and the epoch's order:
// every rank finds the same Steps, and its own Ends, alone.

// unitBatches returns the steps of rank p.Rank (spansOf gives each rank's
// share) and where its batches end.
func (e *Epoch) unitBatches(p Params, spansOf func(r int) []Span) (int64, []uint64) {
	// One pass over the rank's own pieces counts them and their rows and
	// keeps where every Batch-th ends: the ends of the first rule, which
	// holds wherever no other rank has more batches' worth of pieces (a
	// world of one always). The other rules walk the pieces again.
	own := spansOf(p.Rank)
	var m, rows, last uint64
	var ends []uint64
	w := e.Walk(own, Start(own))
	for pc, ok := w.Next(); ok; pc, ok = w.Next() {
		if pc.X1 > pc.X0 {
			m++
			rows += pc.X1 - pc.X0
			last = pc.X1
			if m%p.Batch == 0 {
				ends = append(ends, last)
			}
		}
	}
	if m%p.Batch != 0 {
		ends = append(ends, last)
	}
	steps := ceilDiv(m, p.Batch)
	var scratch []Span
	for r := 0; r < p.World; r++ {
		if r != p.Rank {
			scratch = e.pieces(spansOf(r), false, scratch[:0])
			steps = max(steps, ceilDiv(uint64(len(scratch)), p.Batch))
		}
	}
	// Keep: a rank a row short may take a step fewer. A rank with no
	// piece holds no row, so it takes none.
	steps = min(steps, rows)
	if steps == 0 {
		return int64(steps), nil
	}
	if ceilDiv(m, p.Batch) == steps {
		return int64(steps), ends
	}
	return int64(steps), batchEnds(e.pieces(own, true, nil), steps, p.Batch)
}

// pieces returns the ranges of the pieces of spans that hold rows; with
// keep false only their number counts (the ranges are left zero).
func (e *Epoch) pieces(spans []Span, keep bool, out []Span) []Span {
	w := e.Walk(spans, Start(spans))
	for pc, ok := w.Next(); ok; pc, ok = w.Next() {
		if pc.X1 > pc.X0 {
			if keep {
				out = append(out, Span{pc.X0, pc.X1})
			} else {
				out = append(out, Span{})
			}
		}
	}
	return out
}

// batchEnds returns where each of steps batches of the pieces ps ends
// (see the rule above).
func batchEnds(ps []Span, steps, batch uint64) []uint64 {
	m := uint64(len(ps))
	if steps == 0 || m == 0 {
		return nil
	}
	ends := make([]uint64, 0, steps)
	switch {
	case ceilDiv(m, batch) == steps:
		for k := uint64(1); k <= steps; k++ {
			ends = append(ends, ps[min(k*batch, m)-1].Hi)
		}
	case m >= steps:
		for k := uint64(1); k <= steps; k++ {
			ends = append(ends, ps[k*m/steps-1].Hi)
		}
	default:
		var rows uint64
		for _, p := range ps {
			rows += p.Len()
		}
		extra, cuts := steps-m, rows-m // cuts ≥ extra: the rank holds ≥ steps rows
		var d, prev uint64
		for _, p := range ps {
			n := p.Len()
			d += n - 1
			cur := mulDiv(d, extra, max(cuts, 1))
			a := min(1+cur-prev, n)
			prev = cur
			for j := uint64(1); j <= a; j++ {
				ends = append(ends, p.Lo+mulDiv(j, n, a))
			}
		}
	}
	return ends
}

// RestShare returns rank p.Rank's part of rest as rest.Share deals it,
// with, for batches of units over a space that counts rows, the steps and
// batch ends found from every rank's part (such batches carry no pending
// rows).
func (e *Epoch) RestShare(rest Rest, p Params, tokensPerCount float64) (Share, error) {
	sh, err := rest.Share(p, e.s.total, tokensPerCount)
	if err != nil || !e.s.unitRows(p) {
		return sh, err
	}
	if rest.Pending > 0 {
		return Share{}, fmt.Errorf("%w: %d pending rows in a rest of batches of units", ErrPlan, rest.Pending)
	}
	sh.Steps, sh.Ends = e.unitBatches(p, func(r int) []Span {
		if r == p.Rank {
			return sh.Spans
		}
		q := p
		q.Rank = r
		o, _ := rest.Share(q, e.s.total, tokensPerCount) // p checked
		return o.Spans
	})
	return sh, nil
}
