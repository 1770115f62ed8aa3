package plan

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// unitBatchesRef is unitBatches as first written: every rank's pieces
// walked, the rank's own kept, and the batch rule applied to them.
func (e *Epoch) unitBatchesRef(p Params, spansOf func(r int) []Span) (int64, []uint64) {
	own := e.pieces(spansOf(p.Rank), true, nil)
	steps := ceilDiv(uint64(len(own)), p.Batch)
	for r := 0; r < p.World; r++ {
		if r != p.Rank {
			steps = max(steps, ceilDiv(uint64(len(e.pieces(spansOf(r), false, nil))), p.Batch))
		}
	}
	var rows uint64
	for _, pc := range own {
		rows += pc.Len()
	}
	steps = min(steps, rows)
	return int64(steps), batchEnds(own, steps, p.Batch)
}

// TestUnitBatchesOnePass: the one-pass ends equal the reference's for
// every rank, worlds of 1 to 9, every policy, batches of 1 to 700 and
// units of 0 to 40 rows (a fifth of them counting 0), over three epochs.
func TestUnitBatchesOnePass(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for trial := 0; trial < 300; trial++ {
		n := 1 + rng.IntN(3000)
		if trial%10 == 0 {
			n = 1 + rng.IntN(8)
		}
		counts := make([]int32, n)
		for i := range counts {
			if rng.IntN(5) != 0 {
				counts[i] = int32(1 + rng.IntN(40))
			}
		}
		counts[rng.IntN(n)] = 1 // at least one row
		s, err := NewSpace(uint64(n), counts, nil, 0, rng.IntN(4) == 0)
		if err != nil {
			t.Fatal(err)
		}
		world := 1 + rng.IntN(9)
		pol := []Policy{Drop, Pad, Keep}[rng.IntN(3)]
		batch := uint64([]int{1, 3, 8, 64, 700}[rng.IntN(5)])
		for ep := uint64(0); ep < 3; ep++ {
			e := s.Epoch(uint64(trial), ep)
			for r := 0; r < world; r++ {
				p := Params{World: world, Rank: r, Kind: Units, Policy: pol, Batch: batch}
				if s.Check(p) != nil {
					continue
				}
				bounds, _ := deal(s.dealt(p), p)
				spansOf := func(r int) []Span {
					if bounds[r+1] > bounds[r] {
						return []Span{{bounds[r], bounds[r+1]}}
					}
					return nil
				}
				name := fmt.Sprintf("trial %d: %d units, world %d rank %d, %v, batch %d, epoch %d", trial, n, world, r, pol, batch, ep)
				steps, ends := e.unitBatches(p, spansOf)
				wsteps, wends := e.unitBatchesRef(p, spansOf)
				if steps != wsteps || !slices.Equal(ends, wends) {
					t.Fatalf("%s: %d steps, ends %v; want %d, %v", name, steps, ends, wsteps, wends)
				}
			}
		}
	}
}
