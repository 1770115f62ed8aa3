package rinas

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/pagefeed/pagefeed/index/perm"
)

// planEpochRef is planEpoch as first written, the reference the optimized
// plan must equal: it returns rank's plan of an epoch whose shard starts at start.
// Only an epoch planned for this world (not the remainder of a resharded
// one: resharded) is equalized.
func (l *Loader) planEpochRef(epoch, start uint64, resharded bool) (perm.Shard, epochPlan, error) {
	p := l.perm(epoch)
	sh, err := p.Shard(start, l.cfg.Rank, l.cfg.World)
	if err != nil {
		return sh, epochPlan{}, err
	}
	ep := epochPlan{end: l.nUnits}
	w := uint64(l.cfg.World)
	even := !resharded && !l.cfg.KeepUneven
	switch {
	case l.cfg.BatchRows == 0:
		// Page batches: equal units per rank.
		if even {
			ep.end = perm.EvenEnd(l.nUnits, l.cfg.World, l.cfg.PadLast)
		}
		sh = sh.WithEnd(ep.end)
		ep.steps = int64((sh.Len() + uint64(l.cfg.BatchPages) - 1) / uint64(l.cfg.BatchPages))
		if ep.end < l.nUnits {
			for pos := ep.end; pos < l.nUnits; pos++ {
				if (pos-start)%w == uint64(l.cfg.Rank) {
					ep.dropped += l.unitRows(l.item(sh, pos))
				}
			}
		}
		for pos := l.nUnits; pos < ep.end; pos++ {
			if (pos-start)%w == uint64(l.cfg.Rank) {
				ep.padded += l.unitRows(l.item(sh, pos))
			}
		}
		return sh, ep, nil
	case l.cfg.Output == OutputTokens:
		// Equal units per rank, and a step count from the estimated
		// tokens that Next then yields exactly.
		if even {
			ep.end = perm.EvenEnd(l.nUnits, l.cfg.World, l.cfg.PadLast)
		}
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
		return sh, ep, nil
	}
	// Row batches: count every rank's rows, then cut this rank's share
	// where it has filled the common number of batches.
	b := int64(l.cfg.BatchRows)
	rows := make([]int64, l.cfg.World)
	if l.cfg.Shuffle == ShuffleRow {
		for r := range rows {
			s, _ := p.Shard(start, r, l.cfg.World)
			rows[r] = int64(s.Len())
		}
	} else {
		l.countRowsRef(p, start, rows)
	}
	own := rows[l.cfg.Rank]
	if !even {
		ep.steps = (own + b - 1) / b
		return sh, ep, nil
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
	nat := sh.Len() // this rank's units up to N
	rowsAt := func(j uint64) int64 { return l.unitRows(l.item(sh, sh.Pos(j))) }
	switch {
	case want == 0:
		ep.end = start
	case l.cfg.Shuffle == ShuffleRow:
		ep.end = sh.Pos(uint64(want-1)) + 1
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
		ep.end = sh.Pos(j) + 1
		if acc > want {
			ep.cuts = []UnitCut{{Pos: sh.Pos(j), Rows: rowsAt(j) - (acc - want)}}
		}
	default:
		// PadLast: go on past N, repeating the start of the order.
		acc := own
		for j := nat; ; j++ {
			n := rowsAt(j)
			if acc+n >= want {
				ep.end = sh.Pos(j) + 1
				if acc+n > want {
					ep.cuts = []UnitCut{{Pos: sh.Pos(j), Rows: want - acc}}
				}
				break
			}
			acc += n
		}
	}
	if want < own {
		ep.dropped = own - want
	} else {
		ep.padded = want - own
	}
	sh = sh.WithEnd(ep.end)
	return sh, ep, nil
}

// countRowsRef is countRows as first written: it adds the rows of every position from start on to its rank's
// count (positions go round-robin over len(rows) ranks). It is the one
// pass over the whole epoch behind row batches' equal steps, so it runs
// over the items in order (each item's position from the inverse
// permutation: the row counts are read sequentially) on every core.
func (l *Loader) countRowsRef(p perm.Perm, start uint64, rows []int64) {
	w := uint64(len(rows))
	ordered := l.cfg.Shuffle == ShuffleNone || l.cfg.Shuffle == ShuffleStream
	n := l.nUnits
	parts := uint64(max(1, min(runtime.GOMAXPROCS(0), int(n/(1<<16)))))
	sums := make([][]int64, parts)
	var wg sync.WaitGroup
	for k := uint64(0); k < parts; k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			acc := make([]int64, w)
			for item := n * k / parts; item < n*(k+1)/parts; item++ {
				pos := item
				if !ordered {
					pos = p.Position(item)
				}
				if pos < start {
					continue
				}
				if l.pageRows != nil {
					acc[(pos-start)%w] += int64(max(l.pageRows[item], 0))
				} else {
					acc[(pos-start)%w] += l.unitRows(item)
				}
			}
			sums[k] = acc
		}()
	}
	wg.Wait()
	for _, acc := range sums {
		for r, v := range acc {
			rows[r] += v
		}
	}
}

// TestPlanMatchesReference: the epoch plan (row counts a block of items at
// a time, split over goroutines, plans kept for reuse) equals the plan as
// first written, for random row counts (unknown ones included), unit
// counts, worlds, ranks, starts, seeds and policies, for every shuffle
// that plans from page row counts; and countRows equals the reference
// with more parts than this machine has cores.
func TestPlanMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	sizes := []uint64{1, 2, 3, 7, 64, 100, 1000, 4097, 70001, 1<<17 + 3, 300007}
	for _, n := range sizes {
		rows := make([]int32, n)
		for i := range rows {
			rows[i] = int32(rng.IntN(60)) - 1 // -1: unknown, counts 0
		}
		for trial := 0; trial < 12; trial++ {
			world := 1 + rng.IntN(9)
			cfg := Config{
				Shuffle:    []Shuffle{ShufflePage, ShuffleNone, ShuffleStream, ShuffleRow}[rng.IntN(4)],
				World:      world,
				Rank:       rng.IntN(world),
				Seed:       rng.Uint64(),
				BatchRows:  []int{0, 1 + rng.IntN(200)}[min(trial, 1)],
				BatchPages: 1 + rng.IntN(64),
				KeepUneven: rng.IntN(5) == 0,
			}
			cfg.PadLast = rng.IntN(2) == 0
			cfg.DropLast = !cfg.PadLast
			start := uint64(0)
			if trial%3 == 2 {
				start = rng.Uint64N(n + 1)
			}
			resharded := start > 0 && rng.IntN(2) == 0
			epoch := rng.Uint64N(1000)
			l := &Loader{cfg: cfg, nUnits: n, pageRows: rows}
			name := fmt.Sprintf("n=%d/%s/world=%d/rank=%d/rows=%d/start=%d/resharded=%v/keep=%v/pad=%v",
				n, cfg.Shuffle, world, cfg.Rank, cfg.BatchRows, start, resharded, cfg.KeepUneven, cfg.PadLast)
			wsh, wep, werr := l.planEpochRef(epoch, start, resharded)
			for pass := 0; pass < 2; pass++ { // computed, then kept
				sh, ep, err := l.planEpoch(epoch, start, remnant(resharded))
				if sh != wsh || !samePlan(ep, wep) || (err == nil) != (werr == nil) {
					t.Fatalf("%s pass %d: plan %+v %+v %v, reference %+v %+v %v", name, pass, sh, ep, err, wsh, wep, werr)
				}
			}
			if cfg.Shuffle == ShuffleRow {
				continue
			}
			p := l.perm(epoch)
			want := make([]int64, world)
			l.countRowsRef(p, start, want)
			for _, procs := range []int{1, 3, 8} {
				prev := runtime.GOMAXPROCS(procs)
				got := make([]int64, world)
				l.countRows(p, start, got)
				runtime.GOMAXPROCS(prev)
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("%s GOMAXPROCS %d: rows per rank %v, reference %v", name, procs, got, want)
				}
			}
		}
	}
}

// TestPlanMatchesReferenceDataset: on a generated dataset, for every
// shuffle (rowgroup units' rows come from the index), one column and two
// (either leading), row and page batches, worlds and starts, the plan
// equals the reference.
func TestPlanMatchesReferenceDataset(t *testing.T) {
	ds := testDataset(t, "v2")
	leads := map[int]bool{}
	for _, sh := range []Shuffle{ShufflePage, ShuffleRow, ShuffleRowGroup, ShuffleStream, ShuffleNone} {
		for _, world := range []int{1, 3, 8} {
			for ci, pad := range []bool{false, true, false} {
				cfg := baseConfig(ds, "id")
				cfg.Columns = [][]string{{"id"}, {"input_ids", "id"}, {"id", "input_ids"}}[(ci+world)%3]
				cfg.Shuffle, cfg.World, cfg.Rank = sh, world, world-1
				cfg.BatchRows, cfg.BufferRows, cfg.BatchPages = 37, 50, 5
				cfg.DropLast, cfg.PadLast = !pad, pad
				l := openT(t, cfg)
				leads[l.lead] = true
				for _, start := range []uint64{0, 1, l.nUnits / 2, l.nUnits} {
					for epoch := uint64(0); epoch < 3; epoch++ {
						for _, resharded := range []bool{false, true} {
							wsh, wep, _ := l.planEpochRef(epoch, start, resharded)
							gsh, gep, _ := l.planEpoch(epoch, start, remnant(resharded))
							if gsh != wsh || !samePlan(gep, wep) {
								t.Fatalf("%s world %d pad %v epoch %d start %d resharded %v: plan %+v %+v, reference %+v %+v",
									sh, world, pad, epoch, start, resharded, gsh, gep, wsh, wep)
							}
						}
					}
				}
			}
		}
	}
	if !leads[0] || !leads[1] {
		t.Fatalf("leading columns seen %v, want 0 and 1", leads)
	}
}

// remnant returns a Resharded state that records no end or cut units (as
// one written before states recorded them), or nil.
func remnant(resharded bool) *State {
	if !resharded {
		return nil
	}
	return &State{Resharded: true}
}

// samePlan reports whether two plans are equal, field by field.
func samePlan(a, b epochPlan) bool {
	return a.end == b.end && slices.Equal(a.cuts, b.cuts) && a.steps == b.steps &&
		a.force == b.force && a.dropped == b.dropped && a.padded == b.padded
}
