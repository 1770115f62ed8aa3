package plan

import (
	"cmp"
	"fmt"
	"slices"
)

// Span is a range [Lo, Hi) of an epoch's stream.
type Span struct {
	Lo uint64 `json:"lo"`
	Hi uint64 `json:"hi"`
}

// Len returns Hi − Lo.
func (s Span) Len() uint64 { return s.Hi - s.Lo }

func (s Span) String() string { return fmt.Sprintf("[%d,%d)", s.Lo, s.Hi) }

// Piece is what a rank reads of one unit: the unit at position Pos (at or
// beyond the space's Len for a repeat) is Item, and the rank keeps its
// counts [Lo, Hi) (rows in the unit's own order, before any shuffle),
// which are the stream's [X0, X1). Cut reports whether that is less than
// the whole unit.
type Piece struct {
	Pos, Item uint64
	Lo, Hi    int64
	X0, X1    uint64
	Cut       bool
}

// Walker yields the pieces of a rank's share in stream order, from a
// Cursor's point on, skipping the pieces it has taken in already. It is
// the producer's view of the plan: it never decides what is taken in.
type Walker struct {
	e     *Epoch
	spans []Span
	taken []Span
	ends  []uint64 // coordinates pieces are cut at (Cut)
	i     int      // the span being walked
	x     uint64   // the next coordinate
	// The unit holding x and the count of it before x, once located.
	pos    uint64
	off    int64
	placed bool
}

// Walk returns a walker over spans from c's point: the pieces wholly
// below c.Done, and those c.Taken lists, are skipped.
func (e *Epoch) Walk(spans []Span, c Cursor) *Walker {
	w := &Walker{e: e, spans: spans, taken: c.Taken}
	for w.i < len(spans) && spans[w.i].Hi <= c.Done {
		w.i++
	}
	if w.i < len(spans) {
		w.x = max(spans[w.i].Lo, c.Done)
	}
	return w
}

// Cut makes w cut pieces at the coordinates ends too (increasing: a
// Share's Ends), so that no piece crosses a batch's end.
func (w *Walker) Cut(ends []uint64) { w.ends = ends }

// Next returns the next piece, or false at the share's end.
func (w *Walker) Next() (Piece, bool) {
	for w.i < len(w.spans) {
		sp := w.spans[w.i]
		if w.x >= sp.Hi {
			w.i++
			w.placed = false
			if w.i < len(w.spans) {
				w.x = w.spans[w.i].Lo
			}
			continue
		}
		if !w.placed {
			w.pos, w.off = w.e.Locate(w.x)
			w.placed = true
		}
		n := w.e.s.n
		item := w.e.Order.At(w.pos % n)
		c := w.e.s.Count(item)
		lim := sp.Hi
		for len(w.ends) > 0 && w.ends[0] <= w.x {
			w.ends = w.ends[1:]
		}
		if len(w.ends) > 0 {
			lim = min(lim, w.ends[0])
		}
		hi := min(c, w.off+int64(lim-w.x))
		pc := Piece{Pos: w.pos, Item: item, Lo: w.off, Hi: hi, X0: w.x, X1: w.x + uint64(hi-w.off)}
		pc.Cut = pc.Lo > 0 || pc.Hi < c
		w.x = pc.X1
		if hi == c {
			w.pos, w.off = w.pos+1, 0
		} else {
			w.off = hi
		}
		for len(w.taken) > 0 && w.taken[0].Hi <= pc.X0 {
			w.taken = w.taken[1:]
		}
		if len(w.taken) > 0 && w.taken[0].Lo == pc.X0 && w.taken[0].Hi == pc.X1 && pc.X1 > pc.X0 {
			w.taken = w.taken[1:]
			continue // taken in already
		}
		return pc, true
	}
	return Piece{}, false
}

// Cursor is how far a rank has taken its share in: every piece below
// Done, and the pieces of Taken (ranges of pieces beyond Done taken in
// early, increasing). A piece counting 0 lies at one coordinate, and
// reading it twice or not at all delivers the same rows (none), so
// Taken never lists one.
type Cursor struct {
	Done  uint64
	Taken []Span
}

// Start returns the cursor at the start of spans.
func Start(spans []Span) Cursor {
	if len(spans) == 0 {
		return Cursor{}
	}
	return Cursor{Done: spans[0].Lo}
}

// Commit moves the cursor to x, all pieces below it taken in, and drops
// the early pieces it passes.
func (c *Cursor) Commit(x uint64) {
	c.Done = x
	i := 0
	for i < len(c.Taken) && c.Taken[i].Lo < x {
		i++
	}
	c.Taken = c.Taken[i:]
}

// With returns a copy of c with the pieces ps taken in too (those beyond
// Done that count), for a State taken while a batch is half taken in.
func (c Cursor) With(ps []Span) Cursor {
	t := slices.Clone(c.Taken)
	for _, p := range ps {
		if p.Hi > p.Lo && p.Lo >= c.Done {
			t = append(t, p)
		}
	}
	slices.SortFunc(t, func(a, b Span) int { return cmp.Compare(a.Lo, b.Lo) })
	c.Taken = t
	return c
}

// Left returns the counts of spans that c has not taken in.
func (c Cursor) Left(spans []Span) uint64 {
	var n uint64
	for _, sp := range spans {
		if sp.Hi > c.Done {
			n += sp.Hi - max(sp.Lo, c.Done)
		}
	}
	for _, t := range c.Taken {
		n -= t.Len()
	}
	return n
}

// CheckSpans checks that spans are increasing, disjoint, non-empty ranges
// below lim.
func CheckSpans(spans []Span, lim uint64) error {
	for i, s := range spans {
		switch {
		case s.Hi <= s.Lo:
			return fmt.Errorf("%w: range %v is empty", ErrPlan, s)
		case s.Hi > lim:
			return fmt.Errorf("%w: range %v beyond %d", ErrPlan, s, lim)
		case i > 0 && s.Lo < spans[i-1].Hi:
			return fmt.Errorf("%w: range %v overlaps or precedes %v", ErrPlan, s, spans[i-1])
		}
	}
	return nil
}

// Check checks c against spans: Done within them, and every range of
// Taken one piece of them beyond Done, increasing (e locates the pieces).
func (c Cursor) Check(e *Epoch, spans []Span) error {
	if err := c.checkShape(spans); err != nil {
		return err
	}
	for _, t := range c.Taken {
		k := 0
		for spans[k].Hi < t.Hi {
			k++ // checkShape found t within a span
		}
		w := e.Walk(spans[k:k+1], Cursor{Done: t.Lo})
		if p, ok := w.Next(); !ok || p.X0 != t.Lo || p.X1 != t.Hi {
			return fmt.Errorf("%w: early piece %v is not a piece of the share", ErrPlan, t)
		}
	}
	return nil
}

// checkShape checks c against spans without the dataset: Done within
// them, and Taken increasing, within them and beyond Done.
func (c Cursor) checkShape(spans []Span) error {
	if len(spans) == 0 {
		if c.Done != 0 || len(c.Taken) > 0 {
			return fmt.Errorf("%w: progress %d with %d early pieces in an empty share", ErrPlan, c.Done, len(c.Taken))
		}
		return nil
	}
	if c.Done < spans[0].Lo || c.Done > spans[len(spans)-1].Hi {
		return fmt.Errorf("%w: progress %d outside the share %v..%v", ErrPlan, c.Done, spans[0], spans[len(spans)-1])
	}
	j := 0
	for i, t := range c.Taken {
		if t.Hi <= t.Lo || t.Lo < c.Done || (i > 0 && t.Lo < c.Taken[i-1].Hi) {
			return fmt.Errorf("%w: early piece %v: empty, below the progress %d or out of order", ErrPlan, t, c.Done)
		}
		for j < len(spans) && spans[j].Hi < t.Hi {
			j++
		}
		if j == len(spans) || t.Lo < spans[j].Lo {
			return fmt.Errorf("%w: early piece %v is not within the share", ErrPlan, t)
		}
	}
	return nil
}
