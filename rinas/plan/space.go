package plan

import (
	"errors"
	"fmt"
	"math/bits"
	"runtime"
	"sort"
	"sync"

	"github.com/pagefeed/pagefeed/index/perm"
)

// ErrPlan reports an input the plan cannot be made from, or a plan that
// cannot be kept (a rank left without data); the loader wraps it in its
// own error kinds.
var ErrPlan = errors.New("plan")

// Space is the units of one dataset and what each is worth. It is
// immutable and safe for concurrent use.
type Space struct {
	n       uint64
	counts  []int32 // each unit's count (negative: unknown, counts 1); nil: every unit counts 1
	weights []int64 // each unit's estimated tokens; nil: tokens spread evenly over the counts
	ordered bool    // file order every epoch, no permutation
	total   uint64  // Σ counts
	tokens  uint64  // Σ weights, or the tokens given for the whole space
	known   bool    // every count known
}

// NewSpace returns the space of n units. counts holds each unit's count
// (its rows; a negative count is unknown and counts 1), or is nil when
// every unit counts 1; weights holds each unit's estimated tokens (tokens
// output), or is nil, and tokens is then the whole space's estimate,
// spread evenly over the counts (0: none). ordered takes the units in
// their own order every epoch instead of a permutation. The slices are
// kept, not copied, and must not change.
func NewSpace(n uint64, counts []int32, weights []int64, tokens uint64, ordered bool) (*Space, error) {
	s := &Space{n: n, counts: counts, weights: weights, ordered: ordered, tokens: tokens, known: true}
	switch {
	case counts != nil && uint64(len(counts)) != n:
		return nil, fmt.Errorf("%w: %d counts for %d units", ErrPlan, len(counts), n)
	case weights != nil && uint64(len(weights)) != n:
		return nil, fmt.Errorf("%w: %d weights for %d units", ErrPlan, len(weights), n)
	}
	if counts == nil {
		s.total = n
	}
	for _, c := range counts {
		if c < 0 {
			s.known = false
			c = 1
		}
		s.total += uint64(c)
	}
	if weights != nil {
		s.tokens = 0
		for i, w := range weights {
			if w < 0 {
				return nil, fmt.Errorf("%w: unit %d weighs %d tokens", ErrPlan, i, w)
			}
			s.tokens += uint64(w)
		}
	}
	return s, nil
}

// Len returns the number of units.
func (s *Space) Len() uint64 { return s.n }

// Total returns the sum of the counts: the length of an epoch's stream.
func (s *Space) Total() uint64 { return s.total }

// Tokens returns the estimated tokens of all units.
func (s *Space) Tokens() uint64 { return s.tokens }

// Counted reports whether the units count their rows (counts were given),
// rather than 1 each.
func (s *Space) Counted() bool { return s.counts != nil }

// Known reports whether every unit's count is known.
func (s *Space) Known() bool { return s.known }

// Count returns the count of unit item (1 where unknown).
func (s *Space) Count(item uint64) int64 {
	if s.counts == nil {
		return 1
	}
	if c := s.counts[item]; c >= 0 {
		return int64(c)
	}
	return 1
}

// Rows returns the rows of unit item: its count, 0 where unknown (a unit
// counting 1 row each).
func (s *Space) Rows(item uint64) int64 {
	if s.counts == nil {
		return 1
	}
	return int64(max(s.counts[item], 0))
}

// Order is an epoch's order of a space's units: position p holds unit
// At(p). It is a small value, safe to copy and to use concurrently.
type Order struct {
	p       perm.Perm
	ordered bool
}

// Order returns the order of epoch epoch of a run seeded with seed.
func (s *Space) Order(seed, epoch uint64) Order {
	return Order{p: perm.New(s.n, seed, epoch), ordered: s.ordered}
}

// At returns the unit at position pos (< the space's Len).
func (o Order) At(pos uint64) uint64 {
	if o.ordered {
		return pos
	}
	return o.p.At(pos)
}

// Position returns the position of unit item.
func (o Order) Position(item uint64) uint64 {
	if o.ordered {
		return item
	}
	return o.p.Position(item)
}

// Epoch is one epoch's order with what it takes to map stream coordinates
// to positions: the counts (and weights) summed over blocks of positions.
// It is immutable and safe for concurrent use.
type Epoch struct {
	s     *Space
	Order Order
	shift uint     // 1<<shift positions per block
	cum   []uint64 // counts before each block; len blocks+1 (nil: every unit counts 1)
	wcum  []uint64 // weights before each block (weights set)
	epoch uint64
}

// maxBlocks bounds the blocks of an epoch's sums: a lookup scans at most
// Len/maxBlocks positions.
const maxBlocks = 1 << 12

// Epoch returns epoch's order of s and its block sums. Unless every unit
// counts 1 and tokens are spread evenly, that is one pass over the units:
// items in order, each one's position from the inverse permutation (a
// block of items at a time), split over GOMAXPROCS goroutines it waits
// for.
func (s *Space) Epoch(seed, epoch uint64) *Epoch {
	e := &Epoch{s: s, Order: s.Order(seed, epoch), epoch: epoch}
	if s.counts == nil && s.weights == nil {
		return e
	}
	if n := s.n; n > maxBlocks {
		e.shift = uint(bits.Len64((n - 1) / maxBlocks)) // blocks of 2^shift ≥ n/maxBlocks
	}
	blocks := int((s.n + 1<<e.shift - 1) >> e.shift)
	w := s.weights != nil
	sums := func(lo, hi uint64, cnt, wt []uint64) {
		shift, counts, weights := e.shift, s.counts, s.weights
		add := func(item, pos uint64) {
			b := pos >> shift
			c := uint64(1)
			if counts != nil {
				if v := counts[item]; v >= 0 {
					c = uint64(v)
				}
			}
			cnt[b] += c
			if w {
				wt[b] += uint64(weights[item])
			}
		}
		if s.ordered {
			for item := lo; item < hi; item++ {
				add(item, item)
			}
			return
		}
		var buf [2048]uint64
		for item := lo; item < hi; {
			pos := buf[:min(uint64(len(buf)), hi-item)]
			e.Order.p.Positions(item, pos)
			if counts != nil && !w {
				// The common case (row batches), without the branches.
				cs := counts[item : item+uint64(len(pos))]
				for i, q := range pos {
					cnt[q>>shift] += uint64(max(cs[i], 0)) + uint64(cs[i]>>31&1)
				}
			} else {
				for i, q := range pos {
					add(item+uint64(i), q)
				}
			}
			item += uint64(len(pos))
		}
	}
	parts := uint64(max(1, min(runtime.GOMAXPROCS(0), int(s.n/(1<<16)))))
	if s.ordered {
		parts = 1 // a sequential sum: no inverse permutation to spread
	}
	cnt := make([][]uint64, parts)
	wt := make([][]uint64, parts)
	var wg sync.WaitGroup
	for k := uint64(0); k < parts; k++ {
		cnt[k] = make([]uint64, blocks)
		if w {
			wt[k] = make([]uint64, blocks)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sums(s.n*k/parts, s.n*(k+1)/parts, cnt[k], wt[k])
		}()
	}
	wg.Wait()
	e.cum = make([]uint64, blocks+1)
	if w {
		e.wcum = make([]uint64, blocks+1)
	}
	for b := 0; b < blocks; b++ {
		e.cum[b+1] = e.cum[b]
		for k := range cnt {
			e.cum[b+1] += cnt[k][b]
		}
		if w {
			e.wcum[b+1] = e.wcum[b]
			for k := range wt {
				e.wcum[b+1] += wt[k][b]
			}
		}
	}
	return e
}

// Space returns the epoch's space.
func (e *Epoch) Space() *Space { return e.s }

// Number returns the epoch's number.
func (e *Epoch) Number() uint64 { return e.epoch }

// wrap splits a stream coordinate into its round (x / Total) and the
// coordinate within the stream.
func (e *Epoch) wrap(x uint64) (round, in uint64) {
	t := e.s.total
	if t == 0 || x < t {
		return 0, x
	}
	return x / t, x % t
}

// Locate returns the unit holding stream coordinate x: its position (at
// or beyond Len for a repeat: position p repeats p mod Len) and the count
// of it before x. A unit counting 0 sits before the unit holding the
// coordinate where it lies, so a range of the stream holds the units
// counting 0 strictly inside it (those at its ends hold no row, and no
// range may read them). At Total (and in an empty stream) it returns
// (Len, 0).
func (e *Epoch) Locate(x uint64) (pos uint64, off int64) {
	s := e.s
	if s.total == 0 {
		return s.n, 0
	}
	round, x := e.wrap(x)
	base := round * s.n
	if e.cum == nil {
		return base + x, 0
	}
	// The first block whose end is past x, then its first unit whose end
	// is.
	b := sort.Search(len(e.cum)-1, func(b int) bool { return e.cum[b+1] > x })
	r := e.cum[b]
	for p := uint64(b) << e.shift; ; p++ {
		c := uint64(s.Count(e.Order.At(p)))
		if r+c > x {
			return base + p, int64(x - r)
		}
		r += c
	}
}

// X returns the stream coordinate where the unit at position pos starts
// (pos may be a repeat, at or beyond Len).
func (e *Epoch) X(pos uint64) uint64 {
	s := e.s
	if s.n == 0 {
		return 0
	}
	round, p := pos/s.n, pos%s.n
	base := round * s.total
	if e.cum == nil {
		return base + p
	}
	b := p >> e.shift
	r := e.cum[b]
	for q := b << e.shift; q < p; q++ {
		r += uint64(s.Count(e.Order.At(q)))
	}
	return base + r
}

// XOfTokens returns the stream coordinate where the estimated tokens of
// the stream before it reach y (y ≤ the space's Tokens, or beyond it in
// later rounds): inside a unit, at the row its share of the unit's tokens
// falls on, rounded down. All integer: every rank computes the same.
func (e *Epoch) XOfTokens(y uint64) uint64 {
	s := e.s
	if s.tokens == 0 {
		return 0
	}
	round, y := y/s.tokens, y%s.tokens
	base := round * s.total
	if s.weights == nil {
		return base + mulDiv(y, s.total, s.tokens)
	}
	b := sort.Search(len(e.wcum)-1, func(b int) bool { return e.wcum[b+1] > y })
	wr := e.wcum[b]
	var r uint64
	if e.cum != nil {
		r = e.cum[b]
	} else {
		r = uint64(b) << e.shift
	}
	for p := uint64(b) << e.shift; p < s.n; p++ {
		item := e.Order.At(p)
		w, c := uint64(s.weights[item]), uint64(s.Count(item))
		if wr+w > y {
			return base + r + mulDiv(y-wr, c, w)
		}
		wr, r = wr+w, r+c
	}
	return base + s.total
}

// mulDiv returns ⌊a·b/c⌋ without overflow (the result must fit 64 bits).
func mulDiv(a, b, c uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	if hi >= c {
		return ^uint64(0)
	}
	q, _ := bits.Div64(hi, lo, c)
	return q
}
