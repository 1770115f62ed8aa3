package plan

import (
	"fmt"
)

// Progress is one rank's part of an epoch as Reshard needs it: its share,
// how far it has taken it in, the rows it took in but has not delivered
// (Pending).
type Progress struct {
	Spans   []Span
	Cursor  Cursor
	Pending uint64
}

// Rest is what a world leaves of an epoch for another world: the ranges
// of its ranks' shares that no rank has taken in (Spans, in stream
// order) and the rows taken in but not delivered (Pending, numbered in
// rank order: rank 0's first). It says nothing of how the new world deals it:
// every new rank deals it alike from its own Params (Share), so one Rest
// serves any policy and batch size.
type Rest struct {
	Spans   []Span
	Pending uint64
}

// MaxStream bounds stream coordinates: a state beyond it is refused before
// any arithmetic on it can wrap around.
const MaxStream = 1 << 62

// Reshard returns what the ranks of old leave of their epoch. What the
// old plan left out stays left out.
func Reshard(old []Progress) (Rest, error) {
	var rest Rest
	for r, o := range old {
		if err := CheckSpans(o.Spans, MaxStream); err != nil {
			return Rest{}, fmt.Errorf("rank %d: %w", r, err)
		}
		if err := o.Cursor.checkShape(o.Spans); err != nil {
			return Rest{}, fmt.Errorf("rank %d: %w", r, err)
		}
		if o.Pending > MaxStream-rest.Pending {
			return Rest{}, fmt.Errorf("%w: rank %d: %d rows pending", ErrPlan, r, o.Pending)
		}
		rest.Spans = appendLeft(rest.Spans, o.Spans, o.Cursor)
		rest.Pending += o.Pending
	}
	return rest, nil
}

// PendingOf returns how many of pending rows rank gets of world: row i
// goes to rank i mod world.
func PendingOf(pending uint64, world, rank int) (n uint64) {
	if uint64(rank) < pending {
		n = (pending-uint64(rank)-1)/uint64(world) + 1
	}
	return n
}

// Share returns rank p.Rank's part of rest: first the pending rows dealt
// to it (row i to rank i mod World) as far as its quota holds them
// (Share.Pending says how many it keeps, from the first), then its part
// of the ranges, in order, every rank's quota filled in rank order; past
// their end (Pad) the stream's start is repeated, at coordinates from
// total on. Quotas are as a fresh epoch's plan deals them: equal whole
// batches under Drop and Pad (what is left out or repeated is less than a
// batch per rank), within one count under Keep; tokens output deals the
// rows evenly, and derives the steps from the estimate (tokensPerCount:
// the space's Tokens over its Total), the same on every rank under Drop
// and Pad. Steps are the remainder's: they count no batch delivered
// before.
func (rest Rest) Share(p Params, total uint64, tokensPerCount float64) (Share, error) {
	if err := p.check(); err != nil {
		return Share{}, err
	}
	var stream uint64
	ext := total // repeats start past every coordinate in use
	for _, s := range rest.Spans {
		stream += s.Len()
		ext = max(ext, s.Hi)
	}
	all := stream + rest.Pending
	q := p
	if p.Kind == Tokens {
		q.Kind, q.Batch, q.Policy = Rows, 1, Keep // rows dealt evenly
	}
	bounds, _ := deal(all, q)
	var sh Share
	var off uint64 // the stream's counts dealt to the ranks before
	for r := 0; r < p.World; r++ {
		quota := bounds[r+1] - bounds[r]
		if q.Policy == Keep {
			// Within one count, the extra counts to the first ranks, as
			// PendingOf deals the extra pending rows: no rank is dealt
			// more pending rows than its quota holds, so none is dropped
			// and no rank's quota runs past the ranges (a repeat).
			quota = PendingOf(all, p.World, r)
		}
		n := PendingOf(rest.Pending, p.World, r)
		keep := min(n, quota)
		sh.DroppedPending += n - keep
		need := quota - keep
		if r == p.Rank {
			sh.Pending = keep
			sh.Spans = cutSpans(rest.Spans, off, need, ext+max(off, stream)-stream)
		}
		off += need
	}
	if off < stream {
		sh.Dropped = cutSpans(rest.Spans, off, stream-off, 0)
	}
	own := sh.Pending
	for _, s := range sh.Spans {
		own += s.Len()
	}
	switch {
	case p.Kind != Tokens:
		sh.Steps = int64(ceilDiv(own, p.Batch))
	case p.Policy == Keep:
		sh.Steps = int64(ceilF(float64(own) * tokensPerCount / float64(p.Batch)))
	default:
		// Whole-world figures, the same on every rank.
		tok := float64(all) * tokensPerCount / (float64(p.World) * float64(p.Batch))
		sh.Steps, sh.Force = int64(tok), true
		if p.Policy == Pad {
			sh.Steps = int64(ceilF(tok))
		}
	}
	return sh, nil
}

// cutSpans returns n counts of spans from offset off on, laid end to end;
// past their end, the range from pad on (Pad's repeats).
func cutSpans(spans []Span, off, n uint64, pad uint64) []Span {
	var out []Span
	for _, s := range spans {
		if n == 0 {
			return out
		}
		if off >= s.Len() {
			off -= s.Len()
			continue
		}
		take := min(n, s.Len()-off)
		out = append(out, Span{s.Lo + off, s.Lo + off + take})
		n -= take
		off = 0
	}
	if n > 0 {
		out = append(out, Span{pad, pad + n})
	}
	return out
}

// appendLeft appends the ranges of spans that c has not taken in.
func appendLeft(out []Span, spans []Span, c Cursor) []Span {
	taken := c.Taken
	for _, s := range spans {
		lo := max(s.Lo, c.Done)
		for lo < s.Hi {
			for len(taken) > 0 && taken[0].Hi <= lo {
				taken = taken[1:]
			}
			hi := s.Hi
			if len(taken) > 0 && taken[0].Lo < hi {
				hi = taken[0].Lo
			}
			if hi > lo {
				if n := len(out); n > 0 && out[n-1].Hi == lo {
					out[n-1].Hi = hi
				} else {
					out = append(out, Span{lo, hi})
				}
			}
			if len(taken) > 0 && taken[0].Lo < s.Hi {
				lo = taken[0].Hi
				taken = taken[1:]
			} else {
				lo = s.Hi
			}
		}
	}
	return out
}

func ceilF(x float64) float64 {
	n := float64(int64(x))
	if n < x {
		n++
	}
	return n
}
