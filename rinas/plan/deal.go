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
	// Units: batches of up to Batch whole units (page batches), the last
	// one of a rank's share short. Shares are whole units.
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

// fits checks that s can be dealt as p says: batches of whole units
// need units that count 1 each.
func (s *Space) fits(p Params) error {
	if p.Kind == Units && s.counts != nil {
		return fmt.Errorf("%w: batches of whole units deal units that count 1, not rows", ErrPlan)
	}
	return nil
}

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
// on the space's totals only), or the Plan's refusal.
func (s *Space) Steps(p Params) (int64, error) {
	if err := p.check(); err != nil {
		return 0, err
	}
	if err := s.fits(p); err != nil {
		return 0, err
	}
	total := s.total
	if p.Kind == Tokens {
		total = s.tokens
	}
	bounds, steps := deal(total, p)
	if err := checkDeal(total, bounds, p); err != nil {
		return 0, err
	}
	return steps[p.Rank], nil
}

// Plan returns rank p.Rank's share of epoch e from its start. It fails
// (ErrPlan, saying why) where the plan would leave a rank without data,
// or where Drop would leave out more than half of the stream.
func (e *Epoch) Plan(p Params) (Share, error) {
	if err := p.check(); err != nil {
		return Share{}, err
	}
	if err := e.s.fits(p); err != nil {
		return Share{}, err
	}
	t := e.s.total
	total := t
	if p.Kind == Tokens {
		total = e.s.tokens
	}
	bounds, steps := deal(total, p)
	if err := checkDeal(total, bounds, p); err != nil {
		return Share{}, err
	}
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
// Drop, leaves out more than half of total.
func checkDeal(total uint64, bounds []uint64, p Params) error {
	what := map[Kind]string{Rows: "rows", Units: "units", Tokens: "estimated tokens"}[p.Kind]
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
