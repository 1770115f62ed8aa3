package rinas

import (
	"fmt"

	"github.com/pagefeed/pagefeed/rinas/plan"
)

// PagePlan is the order in which one rank takes in an epoch's units with
// page batches (Config.BatchRows 0) from the epoch's start: the loader's
// own plan, for a tool that reads the same units without a Loader
// (pagebench's baselines) and must read them in the same order, up to the
// same equal-steps end. A unit is a page of the lead column, or under
// ShuffleRowGroup a row group. The zero value is empty.
type PagePlan struct {
	e  *plan.Epoch
	sp plan.Span
}

// PlanPages returns rank's page plan of epoch over n units, as Open's
// loader plans it from cfg's Shuffle, Seed, Rank, World (0: 1), DropLast,
// PadLast and KeepUneven with page batches and no State: the units of the
// epoch's permutation (ShuffleNone, ShuffleStream: the file order), the
// rank's contiguous share of them, every rank the same number unless
// KeepUneven (PadLast: repeating the order's start). ShuffleRow has no
// page plan (its units are rows), and a world that leaves a rank without
// a unit has none either: an ErrConfig.
func PlanPages(cfg Config, n, epoch uint64) (PagePlan, error) {
	if cfg.Shuffle == ShuffleRow {
		return PagePlan{}, fmt.Errorf("%w: the row shuffle's units are rows: it has no page plan", ErrConfig)
	}
	if cfg.Shuffle < ShufflePage || cfg.Shuffle > ShuffleNone {
		return PagePlan{}, fmt.Errorf("%w: shuffle %d", ErrConfig, int(cfg.Shuffle))
	}
	s, err := plan.NewSpace(n, nil, nil, 0, cfg.Shuffle == ShuffleNone || cfg.Shuffle == ShuffleStream)
	if err != nil {
		return PagePlan{}, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	l := Loader{cfg: cfg}
	l.cfg.World = max(cfg.World, 1)
	l.cfg.BatchRows, l.cfg.BatchPages = 0, 1
	if !cfg.DropLast && !cfg.PadLast && !cfg.KeepUneven && l.cfg.World == 1 {
		l.cfg.KeepUneven = true
	}
	e := s.Epoch(cfg.Seed, epoch)
	sh, err := e.Plan(l.params())
	if err != nil {
		return PagePlan{}, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	p := PagePlan{e: e}
	if len(sh.Spans) > 0 {
		p.sp = sh.Spans[0]
	}
	return p, nil
}

// Len returns the number of units the rank takes in.
func (p PagePlan) Len() uint64 { return p.sp.Len() }

// At returns the j-th unit the rank takes in; j < Len.
func (p PagePlan) At(j uint64) uint64 {
	n := p.e.Space().Len()
	return p.e.Order.At((p.sp.Lo + j) % n)
}
