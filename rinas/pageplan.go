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
	e     *plan.Epoch
	sp    plan.Span
	units []uint64 // PlanPagesRows: the unit of each piece, in order
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
	return planPages(cfg, n, nil, epoch)
}

// PlanPagesRows is PlanPages over units whose rows are known (rows[u]:
// unit u's; a page with an offset index, every row group), as the loader
// plans them: ranks share rows, a unit at a rank's boundary, or cut
// between two of its batches, is read by each piece that keeps rows of
// it, so a unit may come twice in one rank's plan (the loader delivers
// it in two batches, each its own rows) and in two ranks' plans. A
// negative row count (unknown) makes it PlanPages over len(rows) units.
// Where a rank cuts a unit between its batches depends on the batch
// size: cfg.BatchPages, as the Loader has it (Loader.BatchPages; 0: the
// default, 64 pages or one row group).
func PlanPagesRows(cfg Config, rows []int32, epoch uint64) (PagePlan, error) {
	for _, r := range rows {
		if r < 0 {
			return planPages(cfg, uint64(len(rows)), nil, epoch)
		}
	}
	return planPages(cfg, uint64(len(rows)), rows, epoch)
}

func planPages(cfg Config, n uint64, rows []int32, epoch uint64) (PagePlan, error) {
	if cfg.Shuffle == ShuffleRow {
		return PagePlan{}, fmt.Errorf("%w: the row shuffle's units are rows: it has no page plan", ErrConfig)
	}
	if cfg.Shuffle < ShufflePage || cfg.Shuffle > ShuffleNone {
		return PagePlan{}, fmt.Errorf("%w: shuffle %d", ErrConfig, int(cfg.Shuffle))
	}
	s, err := plan.NewSpace(n, rows, nil, 0, cfg.Shuffle == ShuffleNone || cfg.Shuffle == ShuffleStream)
	if err != nil {
		return PagePlan{}, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	l := Loader{cfg: cfg}
	l.cfg.World = max(cfg.World, 1)
	l.cfg.BatchRows = 0
	if rows == nil || l.cfg.BatchPages <= 0 {
		// Whole units: the order does not depend on the batch size.
		l.cfg.BatchPages = 64
		if cfg.Shuffle == ShuffleRowGroup {
			l.cfg.BatchPages = 1
		}
	}
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
	if rows != nil {
		w := e.Walk(sh.Spans, plan.Start(sh.Spans))
		w.Cut(sh.Ends)
		p.units = []uint64{}
		for pc, ok := w.Next(); ok; pc, ok = w.Next() {
			if pc.X1 > pc.X0 { // a unit of no rows is not read
				p.units = append(p.units, pc.Item)
			}
		}
	}
	return p, nil
}

// Len returns the number of units the rank takes in.
func (p PagePlan) Len() uint64 {
	if p.units != nil {
		return uint64(len(p.units))
	}
	return p.sp.Len()
}

// At returns the j-th unit the rank takes in; j < Len.
func (p PagePlan) At(j uint64) uint64 {
	if p.units != nil {
		return p.units[j]
	}
	n := p.e.Space().Len()
	return p.e.Order.At((p.sp.Lo + j) % n)
}
