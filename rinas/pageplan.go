package rinas

import (
	"fmt"

	"github.com/pagefeed/pagefeed/index/perm"
)

// PagePlan is the order in which one rank takes in an epoch's units with
// page batches (Config.BatchRows 0) from the epoch's start: the loader's
// own plan, for a tool that reads the same units without a Loader
// (pagebench's baselines) and must read them in the same order, up to the
// same equal-steps end. A unit is a page of the lead column, or under
// ShuffleRowGroup a row group. The zero value is empty.
type PagePlan struct {
	sh      perm.Shard
	ordered bool
}

// PlanPages returns rank's page plan of epoch over n units, as Open's
// loader plans it from cfg's Shuffle, Seed, Rank, World (0: 1), DropLast,
// PadLast and KeepUneven with page batches and no State: the units of the
// epoch's permutation (ShuffleNone, ShuffleStream: the file order) at
// positions Rank, Rank+World, …, up to every rank's equal share (PadLast:
// repeating the order's start) unless KeepUneven. ShuffleRow has no page
// plan (its units are rows): an ErrConfig.
func PlanPages(cfg Config, n, epoch uint64) (PagePlan, error) {
	if cfg.Shuffle == ShuffleRow {
		return PagePlan{}, fmt.Errorf("%w: the row shuffle's units are rows: it has no page plan", ErrConfig)
	}
	if cfg.Shuffle < ShufflePage || cfg.Shuffle > ShuffleNone {
		return PagePlan{}, fmt.Errorf("%w: shuffle %d", ErrConfig, int(cfg.Shuffle))
	}
	world := max(cfg.World, 1)
	sh, err := perm.New(n, cfg.Seed, epoch).Shard(0, cfg.Rank, world)
	if err != nil {
		return PagePlan{}, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	end := pageEnd(n, world, cfg.PadLast, !cfg.KeepUneven, n)
	return PagePlan{sh: sh.WithEnd(end), ordered: inFileOrder(cfg.Shuffle)}, nil
}

// Len returns the number of units the rank takes in.
func (p PagePlan) Len() uint64 { return p.sh.Len() }

// At returns the j-th unit the rank takes in; j < Len.
func (p PagePlan) At(j uint64) uint64 { return unitAt(p.sh, p.sh.Pos(j), p.ordered) }

// pageEnd returns the end of a shard of n units with page batches or
// tokens output: where every one of world ranks has the same number of
// units (even; PadLast rounds up), else end.
func pageEnd(n uint64, world int, padLast, even bool, end uint64) uint64 {
	if even {
		return perm.EvenEnd(n, world, padLast)
	}
	return end
}

// inFileOrder reports whether the shuffle s takes units in file order (a
// stream shuffles rows later, in its buffer).
func inFileOrder(s Shuffle) bool { return s == ShuffleNone || s == ShuffleStream }

// unitAt returns the unit at (unwrapped) position pos of sh's epoch:
// ordered, the position itself, else the permutation's item there.
func unitAt(sh perm.Shard, pos uint64, ordered bool) uint64 {
	pos = sh.Wrap(pos)
	if ordered {
		return pos
	}
	return sh.Perm.At(pos)
}
