package plan

import (
	"fmt"
	"math"
)

// Blend decides which source of a mixture gives the next unit: the one
// furthest behind its target, weight × all units given so far, counted in
// the units' own sizes (rows; tokens for tokens output). It is pure and
// deterministic: the same weights and the same sequence of Add calls pick
// the same sources on every rank.
//
// # The prefix bound
//
// Let w_i be source i's share (its weight over the sum of the weights),
// g_i the counts given to it and T = Σ g_i. Next picks the source with the
// largest deficit d_i = w_i·T − g_i (ties: the larger weight, then the
// lower index; sources of weight 0 are never picked). Since Σ d_i = 0, the
// source picked has d_i ≥ 0, so after it is given a unit of size u it is
// ahead of its target by at most (1 − w_i)·u; a source falls further
// ahead only when it is picked. Hence, after every unit, for every source
//
//	g_i − w_i·T ≤ (1 − w_i)·U_i                 (never a unit ahead)
//	w_i·T − g_i ≤ Σ_{j≠i} (1 − w_j)·U_j          (the others' lead)
//
// where U_j is the largest unit source j has been given. With units of one
// count (rows of a row batch) that is: never a row ahead, and at most
// S − 2 + w_i rows behind among S sources (less than 2 rows for 3
// sources). The bound holds in every prefix, not merely on average, and
// it holds across every call to Take and Add.
//
// A Blend is used by one goroutine.
type Blend struct {
	w     []float64 // shares, summing to 1
	given []uint64
	total uint64
}

// NewBlend returns a blend over sources with weights (relative: any
// non-negative values, not all zero), with nothing given yet.
func NewBlend(weights []float64) (*Blend, error) {
	var sum float64
	for i, w := range weights {
		if w < 0 || math.IsNaN(w) || math.IsInf(w, 0) {
			return nil, fmt.Errorf("%w: source %d weighs %v", ErrPlan, i, w)
		}
		sum += w
	}
	if len(weights) == 0 || sum <= 0 {
		return nil, fmt.Errorf("%w: the weights %v are all zero", ErrPlan, weights)
	}
	b := &Blend{w: make([]float64, len(weights)), given: make([]uint64, len(weights))}
	for i, w := range weights {
		b.w[i] = w / sum
	}
	return b, nil
}

// Restore sets the counts given so far (a checkpoint's counters), one per
// source.
func (b *Blend) Restore(given []uint64) error {
	if len(given) != len(b.given) {
		return fmt.Errorf("%w: %d counters for %d sources", ErrPlan, len(given), len(b.given))
	}
	var t uint64
	for i, g := range given {
		if g > MaxStream || t > MaxStream-g {
			return fmt.Errorf("%w: counter %d of source %d", ErrPlan, g, i)
		}
		if b.w[i] == 0 && g > 0 {
			return fmt.Errorf("%w: source %d has weight 0 but was given %d", ErrPlan, i, g)
		}
		t += g
	}
	copy(b.given, given)
	b.total = t
	return nil
}

// Share returns source i's share of the units (its weight normalized).
func (b *Blend) Share(i int) float64 { return b.w[i] }

// Given returns the counts given to each source so far (a copy).
func (b *Blend) Given() []uint64 { return append([]uint64(nil), b.given...) }

// Total returns the counts given to all sources so far.
func (b *Blend) Total() uint64 { return b.total }

// Next returns the source that gives the next unit: the one furthest
// behind its target.
func (b *Blend) Next() int {
	best, bd := -1, 0.0
	t := float64(b.total)
	for i, w := range b.w {
		if w == 0 {
			continue
		}
		d := w*t - float64(b.given[i])
		if best < 0 || d > bd || (d == bd && w > b.w[best]) {
			best, bd = i, d
		}
	}
	return best
}

// Add records that source i gave a unit of n counts.
func (b *Blend) Add(i int, n uint64) {
	b.given[i] += n
	b.total += n
}

// Take deals n units of one count each, one at a time as Next picks them,
// and adds to counts[i] the units source i gives (counts has one entry
// per source).
func (b *Blend) Take(n uint64, counts []uint64) {
	for ; n > 0; n-- {
		i := b.Next()
		b.Add(i, 1)
		counts[i]++
	}
}
