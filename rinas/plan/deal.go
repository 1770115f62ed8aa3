package plan

import (
	"fmt"
)

// Policy is how an epoch that does not divide evenly among the ranks is
// shared out.
type Policy uint8

const (
	// Drop gives every rank the same number of full batches and leaves
	// the rest out (fewer than World batches' worth).
	Drop Policy = iota
	// Pad gives every rank as many batches as the one that needs the most,
	// repeating the stream's start for the shortfall (fewer than World
	// batches' worth).
	Pad
	// Keep delivers everything once; ranks may differ by a step.
	Keep
)

var policyNames = [...]string{"drop", "pad", "keep"}

func (p Policy) String() string {
	if int(p) < len(policyNames) {
		return policyNames[p]
	}
	return fmt.Sprintf("Policy(%d)", int(p))
}

// ParsePolicy parses a Policy's String.
func ParsePolicy(s string) (Policy, error) {
	for i, n := range policyNames {
		if s == n {
			return Policy(i), nil
		}
	}
	return 0, fmt.Errorf("%w: unknown policy %q", ErrPlan, s)
}

// Kind is what a batch is made of.
type Kind uint8

const (
	// Rows: batches of Batch rows (row batches). Shares are whole
	// batches of rows; boundary units are cut.
	Rows Kind = iota
	// Units: batches of up to Batch units (page batches). Over a space
	// that counts every unit's rows, shares are rows, as for Rows, and a
	// unit at a share's boundary is cut; the steps are the same on every
	// rank (Share.Ends says where each batch ends). Over a space of units
	// counting 1, shares are whole units, the last batch of a share short.
	Units
	// Tokens: batches of Batch tokens (tokens output). Shares balance the
	// units' estimated tokens and cut boundary units at a row; the
	// estimate is not exact, so Next yields exactly Steps batches (Force)
	// under Drop and Pad.
	Tokens
)

// Params is how an epoch is dealt out.
type Params struct {
	World, Rank int
	Kind        Kind
	Batch       uint64 // rows, units or tokens per batch
	Policy      Policy
}

func (p Params) check() error {
	if p.World < 1 || p.Rank < 0 || p.Rank >= p.World {
		return fmt.Errorf("%w: rank %d of world %d", ErrPlan, p.Rank, p.World)
	}
	if p.Batch == 0 || p.Kind > Tokens || p.Policy > Keep {
		return fmt.Errorf("%w: batch of %d, kind %d, policy %d", ErrPlan, p.Batch, p.Kind, p.Policy)
	}
	return nil
}

// unitRows reports whether p deals batches of units over a space that
// counts their rows: shares of rows, steps from the pieces (unitBatches).
func (s *Space) unitRows(p Params) bool { return p.Kind == Units && s.counts != nil }

// deal shares total among p.World ranks: the boundaries of every rank's
// range (bounds[r] to bounds[r+1]; bounds[World] falls short of total
// under Drop, past it under Pad) and the batches each takes.
func deal(total uint64, p Params) (bounds []uint64, steps []int64) {
	w := uint64(p.World)
	bounds = make([]uint64, p.World+1)
	steps = make([]int64, p.World)
	if p.Policy == Keep {
		for r := range bounds {
			bounds[r] = mulDiv(total, uint64(r), w)
		}
		for r := range steps {
			steps[r] = int64(ceilDiv(bounds[r+1]-bounds[r], p.Batch))
		}
		return bounds, steps
	}
	var q uint64 // each rank's range
	if p.Kind == Units {
		q = total / w
		if p.Policy == Pad {
			q = ceilDiv(total, w)
		}
	} else {
		n := total / (w * p.Batch)
		if p.Policy == Pad {
			n = ceilDiv(total, w*p.Batch)
		}
		q = n * p.Batch
	}
	for r := range bounds {
		bounds[r] = uint64(r) * q
	}
	for r := range steps {
		steps[r] = int64(ceilDiv(q, p.Batch))
	}
	return bounds, steps
}

func ceilDiv(a, b uint64) uint64 {
	if a == 0 {
		return 0
	}
	return (a-1)/b + 1
}

// Split returns rank's part of n spread over world ranks (the parts sum
// to n): how a count that belongs to the whole world, such as the rows an
// epoch leaves out, is reported rank by rank.
func Split(n uint64, world, rank int) uint64 {
	return mulDiv(n, uint64(rank+1), uint64(world)) - mulDiv(n, uint64(rank), uint64(world))
}

// Share is one rank's part of an epoch.
type Share struct {
	// Spans are the rank's ranges of the stream, increasing.
	Spans []Span
	// Steps is the number of batches the rank takes. Force says Next must
	// yield exactly Steps (tokens output under Drop and Pad: the token
	// estimate is not exact).
	Steps int64
	Force bool
	// Ends, for batches of units over a space that counts rows, is where
	// each of the Steps batches ends in the stream, increasing: a batch
	// holds the pieces from the previous end (the share's start) to its
	// own, cut there (Walker.Cut), pieces counting 0 left out (see
	// unitBatches). Nil for the other kinds.
	Ends []uint64
	// Dropped are the ranges of the stream the plan leaves out (Drop),
	// and Padded the range beyond Total it repeats (Pad), for the whole
	// world: report them rank by rank with Split, or by the ranks whose
	// spans hold them.
	Dropped []Span
	Padded  Span
	// Pending is how many of the pending rows dealt to the rank it keeps
	// (a Rest's share), from the first; DroppedPending how many the whole
	// world leaves out.
	Pending, DroppedPending uint64
}

// Steps returns the batches rank p.Rank takes in an epoch of s from its
// start, without the pass over the epoch a Plan makes (the steps depend
// on the space's totals only), or the Plan's refusal. Batches of units
// over a space that counts rows take steps that depend on the epoch's
// order (how many units each share holds): Steps refuses them, and
// Epoch.Plan gives them.
func (s *Space) Steps(p Params) (int64, error) {
	if err := s.Check(p); err != nil {
		return 0, err
	}
	if s.unitRows(p) {
		return 0, fmt.Errorf("%w: the steps of batches of units that count rows depend on the epoch's order", ErrPlan)
	}
	_, steps := deal(s.dealt(p), p)
	return steps[p.Rank], nil
}

// Check returns the refusal any epoch's Plan of s with p gives, or nil:
// a rank without data, or Drop leaving out more than half.
func (s *Space) Check(p Params) error {
	if err := p.check(); err != nil {
		return err
	}
	total := s.dealt(p)
	bounds, _ := deal(total, p)
	return checkDeal(total, bounds, p, s.unitRows(p))
}

// dealt returns what p shares out: s's total, or its tokens.
func (s *Space) dealt(p Params) uint64 {
	if p.Kind == Tokens {
		return s.tokens
	}
	return s.total
}

// Plan returns rank p.Rank's share of epoch e from its start. It fails
// (ErrPlan, saying why) where the plan would leave a rank without data,
// or where Drop would leave out more than half of the stream.
func (e *Epoch) Plan(p Params) (Share, error) {
	if err := e.s.Check(p); err != nil {
		return Share{}, err
	}
	t := e.s.total
	bounds, steps := deal(e.s.dealt(p), p)
	x := func(b uint64) uint64 {
		if p.Kind == Tokens {
			return e.XOfTokens(b)
		}
		return b
	}
	sh := Share{Steps: steps[p.Rank], Force: p.Kind == Tokens && p.Policy != Keep}
	if lo, hi := x(bounds[p.Rank]), x(bounds[p.Rank+1]); hi > lo {
		sh.Spans = []Span{{lo, hi}}
	}
	if e.s.unitRows(p) {
		sh.Steps, sh.Ends = e.unitBatches(p, func(r int) []Span {
			if bounds[r+1] > bounds[r] {
				return []Span{{bounds[r], bounds[r+1]}}
			}
			return nil
		})
	}
	end := x(bounds[p.World])
	switch {
	case end < t:
		sh.Dropped = []Span{{end, t}}
	case end > t:
		sh.Padded = Span{t, end}
	}
	return sh, nil
}

// checkDeal refuses a deal that leaves a rank without data or, under
// Drop, leaves out more than half of total (rows says units count rows).
func checkDeal(total uint64, bounds []uint64, p Params, rows bool) error {
	what := map[Kind]string{Rows: "rows", Units: "units", Tokens: "estimated tokens"}[p.Kind]
	if rows {
		what = "rows"
	}
	if total == 0 {
		return fmt.Errorf("%w: the dataset has no %s", ErrPlan, what)
	}
	for r := 0; r < p.World; r++ {
		if bounds[r+1] == bounds[r] {
			if p.Policy == Drop && p.Kind != Units {
				return fmt.Errorf("%w: %d %s do not fill one batch of %d on each of %d ranks, so DropLast would leave every rank without data",
					ErrPlan, total, what, p.Batch, p.World)
			}
			return fmt.Errorf("%w: %d %s leave rank %d of %d without data", ErrPlan, total, what, r, p.World)
		}
	}
	if p.Policy == Drop && total-bounds[p.World] > total/2 {
		return fmt.Errorf("%w: DropLast would leave out %d of %d %s (more than half) so that %d ranks take equal batches of %d",
			ErrPlan, total-bounds[p.World], total, what, p.World, p.Batch)
	}
	return nil
}
