package plan

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// model is a dataset as the loader's spaces see it: units of rows, in
// one of the loader's shuffles.
type model struct {
	shuffle string // page, row, rowgroup, stream, none
	rows    []int32
	start   []uint64 // each unit's first row in the dataset
	total   uint64
}

// newModel cuts rows rows into pages of about perPage rows (rowgroup: row
// groups of ~8 pages; row: units of one row).
func newModel(rng *rand.Rand, shuffle string, rows, perPage int) *model {
	m := &model{shuffle: shuffle}
	unit := perPage
	if shuffle == "rowgroup" {
		unit = perPage * 8
	}
	for left := rows; left > 0; {
		n := 1
		if shuffle != "row" {
			n = min(left, max(1, unit/2+rng.IntN(unit+1)))
		}
		m.rows = append(m.rows, int32(n))
		left -= n
	}
	m.start = make([]uint64, len(m.rows)+1)
	for i, n := range m.rows {
		m.start[i+1] = m.start[i] + uint64(n)
	}
	m.total = m.start[len(m.rows)]
	return m
}

// space returns the model's space for a batch kind, with estimated tokens
// (tokens output) of about 40 a row, varying by unit.
func (m *model) space(t testing.TB, kind Kind, rng *rand.Rand) *Space {
	t.Helper()
	ordered := m.shuffle == "stream" || m.shuffle == "none"
	n := uint64(len(m.rows))
	var counts []int32
	if m.shuffle != "row" {
		counts = m.rows // page batches too: units that count rows
	}
	var weights []int64
	var tokens uint64
	if kind == Tokens {
		if m.shuffle == "row" {
			tokens = 41 * m.total
		} else {
			weights = make([]int64, n)
			for i, r := range m.rows {
				weights[i] = int64(r) * int64(20+rng.IntN(60))
			}
		}
	}
	s, err := NewSpace(n, counts, weights, tokens, ordered)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// rowsOf appends the dataset rows a piece delivers (the row shuffle's
// units count 1, their one row).
func (m *model) rowsOf(out []uint64, p Piece, kind Kind) []uint64 {
	for r := p.Lo; r < p.Hi; r++ {
		out = append(out, m.start[p.Item]+uint64(r))
	}
	return out
}

// TestPlanProperties: for worlds 2, 3, 4, 7, 8 times DataLoader workers
// 0, 2, 3 (shards world×workers), every shuffle, every batch kind and
// policy, pages of 5 to 5,000 rows and datasets of 3,000 to 200,000 rows:
// every rank takes the same steps (Keep: within one), the rows a rank's
// pieces deliver fill exactly its steps, no row is delivered twice (Pad:
// the repeats are the padded range), and what is left out or repeated is
// less than one batch per rank (tokens: in estimated tokens, with the
// boundary rows' estimate as slack). Over two epochs.
func TestPlanProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	datasets := []int{3000, 35005, 200000}
	if raceEnabled {
		datasets = datasets[:2] // the grid whole, the largest datasets left out
	}
	pageRows := []int{5, 60, 700, 5000}
	n := 0
	for _, world := range []int{2, 3, 4, 7, 8} {
		for _, workers := range []int{0, 2, 3} {
			shards := world * max(workers, 1)
			for _, shuffle := range []string{"page", "row", "rowgroup", "stream", "none"} {
				for _, kind := range []Kind{Rows, Units, Tokens} {
					for _, pol := range []Policy{Drop, Pad, Keep} {
						rows := datasets[rng.IntN(len(datasets))]
						if shuffle == "row" {
							rows = datasets[rng.IntN(2)] // a unit per row
						}
						m := newModel(rng, shuffle, rows, pageRows[rng.IntN(len(pageRows))])
						batch := uint64([]int{1, 8, 32, 64, 700}[rng.IntN(5)])
						if kind == Tokens {
							batch = uint64(8 * []int{128, 512, 2048}[rng.IntN(3)])
						}
						name := fmt.Sprintf("%s/%v/%v/shards%d/rows%d/units%d/batch%d", shuffle, kindName(kind), pol, shards, rows, len(m.rows), batch)
						checkPlan(t, name, m, m.space(t, kind, rng), Params{World: shards, Kind: kind, Batch: batch, Policy: pol}, rng)
						n++
					}
				}
			}
		}
	}
	t.Logf("%d configurations, %d refused", n, refused)
}

var refused int

func kindName(k Kind) string { return [...]string{"rows", "units", "tokens"}[k] }

// checkPlan checks every rank's share of two epochs of s.
func checkPlan(t *testing.T, name string, m *model, s *Space, p Params, rng *rand.Rand) {
	t.Helper()
	seed := rng.Uint64()
	for epoch := uint64(0); epoch < 2; epoch++ {
		e := s.Epoch(seed, epoch)
		seen := make([]uint8, m.total)
		var delivered, repeats uint64
		steps := make([]int64, p.World)
		var tokens []float64
		var dropped []Span
		var padded Span
		for r := 0; r < p.World; r++ {
			q := p
			q.Rank = r
			sh, err := e.Plan(q)
			if err != nil {
				if refusable(m, s, q) {
					refused++
					return // refused as it must be: nothing to check
				}
				t.Fatalf("%s: %v", name, err)
			}
			steps[r] = sh.Steps
			dropped, padded = sh.Dropped, sh.Padded
			var got []uint64
			var tok float64
			w := e.Walk(sh.Spans, Start(sh.Spans))
			for pc, ok := w.Next(); ok; pc, ok = w.Next() {
				got = m.rowsOf(got[:0], pc, p.Kind)
				if p.Kind == Tokens {
					tok += unitTokens(s, pc)
				}
				for _, g := range got {
					if pc.Pos >= s.Len() || seen[g] > 0 {
						repeats++
					}
					seen[g]++
					delivered++
				}
			}
			tokens = append(tokens, tok)
			var x uint64
			for _, sp := range sh.Spans {
				x += sp.Len()
			}
			switch p.Kind {
			case Rows:
				if p.Policy != Keep && x != uint64(sh.Steps)*p.Batch {
					t.Fatalf("%s epoch %d rank %d: %d rows for %d steps of %d", name, epoch, r, x, sh.Steps, p.Batch)
				}
				if p.Policy == Keep && uint64(sh.Steps) != ceilDiv(x, p.Batch) {
					t.Fatalf("%s rank %d: %d rows, %d steps", name, r, x, sh.Steps)
				}
			case Units:
				if s.counts != nil {
					checkBatches(t, fmt.Sprintf("%s epoch %d rank %d", name, epoch, r), e, sh, p)
				} else if uint64(sh.Steps) != ceilDiv(x, p.Batch) {
					t.Fatalf("%s rank %d: %d units, %d steps", name, r, x, sh.Steps)
				}
			}
		}
		for r := range steps {
			d := steps[r] - steps[0]
			if (p.Policy != Keep && d != 0) || d < -1 || d > 1 {
				t.Fatalf("%s epoch %d: steps %v", name, epoch, steps)
			}
		}
		// What is left out, repeated or delivered twice.
		missing := uint64(0)
		for _, c := range seen {
			if c == 0 {
				missing++
			}
		}
		bound := uint64(p.World) * p.Batch // in the kind's counts
		switch p.Policy {
		case Keep:
			if missing != 0 || repeats != 0 {
				t.Fatalf("%s epoch %d: Keep leaves out %d rows and repeats %d", name, epoch, missing, repeats)
			}
		case Drop:
			if repeats != 0 {
				t.Fatalf("%s epoch %d: %d rows twice", name, epoch, repeats)
			}
			if p.Kind == Units {
				bound = uint64(p.World) // whole units, or rows
				if spansLen(dropped) >= bound || (s.counts != nil && missing != spansLen(dropped)) {
					t.Fatalf("%s: %d units left out, bound %d", name, spansLen(dropped), bound)
				}
				break
			}
			if missing != spansLen(dropped) {
				t.Fatalf("%s epoch %d: %d rows missing, the plan drops %v", name, epoch, missing, dropped)
			}
			if p.Kind == Rows && missing >= bound {
				t.Fatalf("%s epoch %d: %d rows left out, bound %d", name, epoch, missing, bound)
			}
		case Pad:
			if missing != 0 {
				t.Fatalf("%s epoch %d: Pad leaves out %d rows", name, epoch, missing)
			}
			if p.Kind == Units {
				if padded.Len() >= uint64(p.World) {
					t.Fatalf("%s: %d units repeated", name, padded.Len())
				}
				break
			}
			if repeats != padded.Len() {
				t.Fatalf("%s epoch %d: %d repeats, the plan pads %v", name, epoch, repeats, padded)
			}
			if p.Kind == Rows && repeats >= bound {
				t.Fatalf("%s epoch %d: %d rows repeated, bound %d", name, epoch, repeats, bound)
			}
		}
		if p.Kind == Tokens {
			checkTokens(t, name, s, p, tokens, steps)
		}
	}
}

// checkBatches walks a share of batches of units that count rows cut at
// its batches' ends: exactly Steps batches, each of 1 to Batch pieces
// holding rows and at least one row, every piece within one batch.
func checkBatches(t *testing.T, name string, e *Epoch, sh Share, p Params) {
	t.Helper()
	if int64(len(sh.Ends)) != sh.Steps {
		t.Fatalf("%s: %d batch ends for %d steps", name, len(sh.Ends), sh.Steps)
	}
	w := e.Walk(sh.Spans, Start(sh.Spans))
	w.Cut(sh.Ends)
	k, pieces, rows := 0, uint64(0), uint64(0)
	end := func() {
		if pieces == 0 || pieces > p.Batch || rows == 0 {
			t.Fatalf("%s: batch %d of %d holds %d pieces, %d rows (batch %d)", name, k, sh.Steps, pieces, rows, p.Batch)
		}
		k, pieces, rows = k+1, 0, 0
	}
	for pc, ok := w.Next(); ok; pc, ok = w.Next() {
		if pc.X1 == pc.X0 {
			continue
		}
		if k >= len(sh.Ends) {
			t.Fatalf("%s: piece %+v past the last batch's end", name, pc)
		}
		if pc.X0 >= sh.Ends[k] {
			end()
		}
		if pc.X1 > sh.Ends[k] {
			t.Fatalf("%s: piece %+v crosses batch end %d", name, pc, sh.Ends[k])
		}
		pieces++
		rows += pc.X1 - pc.X0
	}
	if sh.Steps > 0 {
		end()
	}
	if int64(k) != sh.Steps {
		t.Fatalf("%s: %d batches for %d steps", name, k, sh.Steps)
	}
}

// unitTokens is the estimated tokens of a piece: its share of its unit's.
func unitTokens(s *Space, pc Piece) float64 {
	c := s.Count(pc.Item)
	if s.weights == nil {
		return float64(pc.Hi-pc.Lo) * float64(s.tokens) / float64(s.total)
	}
	return float64(s.weights[pc.Item]) * float64(pc.Hi-pc.Lo) / float64(max(c, 1))
}

// checkTokens: every rank's estimated tokens differ from its steps'
// worth by less than the slack a boundary row's estimate leaves, and the
// world's tokens left out or repeated are less than a batch per rank.
func checkTokens(t *testing.T, name string, s *Space, p Params, tokens []float64, steps []int64) {
	t.Helper()
	maxRow := 0.0 // the largest estimate of one row
	for i := uint64(0); i < s.Len(); i++ {
		c := float64(max(s.Count(i), 1))
		w := float64(s.tokens) / float64(max(s.total, 1))
		if s.weights != nil {
			w = float64(s.weights[i]) / c
		}
		maxRow = max(maxRow, w)
	}
	var all float64
	for r, tok := range tokens {
		all += tok
		if p.Policy == Keep {
			continue
		}
		if want := float64(steps[r]) * float64(p.Batch); tok < want-2*maxRow-1 || tok > want+2*maxRow+1 {
			t.Fatalf("%s rank %d: %.0f estimated tokens for %d steps of %d (row estimate %.1f)", name, r, tok, steps[r], p.Batch, maxRow)
		}
	}
	bound := float64(p.World)*float64(p.Batch) + 2*maxRow*float64(p.World)
	if d := float64(s.tokens) - all; p.Policy == Drop && d >= bound {
		t.Fatalf("%s: %.0f estimated tokens left out, bound %.0f", name, d, bound)
	}
	if d := all - float64(s.tokens); p.Policy == Pad && d >= bound {
		t.Fatalf("%s: %.0f estimated tokens repeated, bound %.0f", name, d, bound)
	}
}

// refusable reports whether the plan may refuse p: a rank would be left
// without data, or Drop would leave out more than half.
func refusable(m *model, s *Space, p Params) bool {
	total := s.Total()
	if p.Kind == Tokens {
		total = s.Tokens()
	}
	w := uint64(p.World)
	switch {
	case p.Kind == Units:
		return total < w // units, or rows
	case p.Policy == Drop:
		return total/(w*p.Batch)*w*p.Batch < total-total/2
	default:
		return total < w
	}
}

// TestReshardProperties: ranks of a world stop at random points of an
// epoch (units taken in early, rows taken in but not delivered), their
// progress is dealt to another world, possibly twice: every row the
// uninterrupted world would deliver and that no rank delivered before is
// delivered once after, except what each deal leaves out (less than a
// batch per new rank); every new rank takes the same steps, and its
// pieces and pending rows fill them exactly.
func TestReshardProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	trials := 400
	if raceEnabled {
		trials = 100
	}
	for trial := 0; trial < trials; trial++ {
		shuffle := []string{"page", "row", "rowgroup", "stream", "none"}[rng.IntN(5)]
		rows := []int{3000, 35005, 90001}[rng.IntN(3)]
		m := newModel(rng, shuffle, rows, []int{5, 60, 700, 5000}[rng.IntN(4)])
		kind := []Kind{Rows, Units}[rng.IntN(2)]
		pol := []Policy{Drop, Pad, Keep}[rng.IntN(3)]
		batch := uint64([]int{1, 8, 32, 64, 700}[rng.IntN(5)])
		worlds := []int{1 + rng.IntN(16), 1 + rng.IntN(16), 1 + rng.IntN(16)}
		name := fmt.Sprintf("%d/%s/%s/%v/rows%d/units%d/batch%d/worlds%v", trial, shuffle, kindName(kind), pol, rows, len(m.rows), batch, worlds)
		s := m.space(t, kind, rng)
		e := s.Epoch(rng.Uint64(), rng.Uint64N(9))
		checkReshard(t, name, m, s, e, kind, pol, batch, worlds, rng)
	}
}

// rank is a simulated rank: its share, its cursor and the rows it took in
// but has not delivered.
type rank struct {
	spans   []Span
	cur     Cursor
	pending []uint64 // dataset rows
	steps   int64
}

func checkReshard(t *testing.T, name string, m *model, s *Space, e *Epoch, kind Kind, pol Policy, batch uint64, worlds []int, rng *rand.Rand) {
	t.Helper()
	count := make([]int, m.total)
	var ranks []rank
	for r := 0; r < worlds[0]; r++ {
		sh, err := e.Plan(Params{World: worlds[0], Rank: r, Kind: kind, Batch: batch, Policy: pol})
		if err != nil {
			return // refused (checked by TestPlanProperties)
		}
		ranks = append(ranks, rank{spans: sh.Spans, cur: Start(sh.Spans), steps: sh.Steps})
	}
	var got []uint64
	for stage := 1; stage <= len(worlds); stage++ {
		var old []Progress
		var allPending []uint64
		for r := range ranks {
			rk := &ranks[r]
			// Deliver the pending rows first, then take pieces in: a run
			// of them in order, then some of the next few early.
			last := stage == len(worlds)
			stop := rng.IntN(3) == 0 || last
			if stop && !last {
				// stop at once, pending rows kept
			} else {
				got = append(got, rk.pending...)
				rk.pending = nil
			}
			w := e.Walk(rk.spans, rk.cur)
			var ps []Piece
			for pc, ok := w.Next(); ok; pc, ok = w.Next() {
				ps = append(ps, pc)
			}
			k := len(ps)
			if !last {
				k = rng.IntN(len(ps) + 1)
			}
			for _, pc := range ps[:k] {
				got = m.rowsOf(got, pc, kind)
			}
			if k > 0 {
				rk.cur.Commit(ps[k-1].X1)
			}
			if !last && k < len(ps) {
				// Some of the next pieces taken in early; the rows of the
				// last of them pending.
				var early []Span
				for j := k + 1; j < min(len(ps), k+6); j++ {
					if rng.IntN(2) == 0 && ps[j].X1 > ps[j].X0 {
						early = append(early, Span{ps[j].X0, ps[j].X1})
						rows := m.rowsOf(nil, ps[j], kind)
						if kind == Rows && rng.IntN(2) == 0 {
							rk.pending = append(rk.pending, rows...)
						} else {
							got = append(got, rows...)
						}
					}
				}
				rk.cur = rk.cur.With(early)
			}
			old = append(old, Progress{Spans: rk.spans, Cursor: rk.cur, Pending: uint64(len(rk.pending))})
			allPending = append(allPending, rk.pending...)
		}
		if stage == len(worlds) {
			break
		}
		nw := worlds[stage]
		p := Params{World: nw, Kind: kind, Batch: batch, Policy: pol}
		rest, err := Reshard(old)
		if err != nil {
			t.Fatalf("%s: Reshard: %v", name, err)
		}
		next := make([]rank, nw)
		for r := range next {
			p.Rank = r
			sh, err := e.RestShare(rest, p, 0)
			if err != nil {
				t.Fatal(err)
			}
			if kind == Units && s.counts != nil {
				checkBatches(t, fmt.Sprintf("%s stage %d rank %d", name, stage, r), e, sh, p)
			}
			next[r] = rank{spans: sh.Spans, cur: Start(sh.Spans), steps: sh.Steps}
			for i := uint64(r); i < uint64(len(allPending)) && uint64(len(next[r].pending)) < sh.Pending; i += uint64(nw) {
				next[r].pending = append(next[r].pending, allPending[i])
			}
			if uint64(len(next[r].pending)) != sh.Pending || sh.Pending > PendingOf(rest.Pending, nw, r) {
				t.Fatalf("%s stage %d rank %d: keeps %d pending rows of %d dealt", name, stage, r, sh.Pending, PendingOf(rest.Pending, nw, r))
			}
			quota := sh.Pending
			for _, sp := range sh.Spans {
				quota += sp.Len()
			}
			if err := CheckSpans(sh.Spans, MaxStream); err != nil {
				t.Fatalf("%s stage %d rank %d: %v", name, stage, r, err)
			}
			if pol != Keep && next[r].steps != next[0].steps {
				t.Fatalf("%s stage %d: steps %d and %d", name, stage, next[0].steps, next[r].steps)
			}
			if kind == Rows && pol != Keep && quota != uint64(next[r].steps)*batch {
				t.Fatalf("%s stage %d rank %d: %d rows for %d steps", name, stage, r, quota, next[r].steps)
			}
		}
		ranks = next
	}
	// Every row at most once (Pad: repeats beyond the first delivery are
	// the deals' padding), and what is missing within the bounds.
	for _, g := range got {
		count[g]++
	}
	var missing, repeats uint64
	for _, c := range count {
		if c == 0 {
			missing++
		}
		if c > 1 {
			repeats += uint64(c - 1)
		}
	}
	unit := batch
	if kind == Units {
		unit = 1 // whole units, of up to the largest unit's rows
		for _, r := range m.rows {
			unit = max(unit, uint64(r))
		}
	}
	var bound uint64
	for _, w := range worlds {
		bound += uint64(w) * unit
	}
	switch pol {
	case Keep:
		if missing != 0 || repeats != 0 {
			t.Fatalf("%s: %d missing, %d repeated", name, missing, repeats)
		}
	case Drop:
		if repeats != 0 || missing >= bound {
			t.Fatalf("%s: %d missing (bound %d), %d repeated", name, missing, bound, repeats)
		}
	case Pad:
		if missing != 0 || repeats >= bound {
			t.Fatalf("%s: %d missing, %d repeated (bound %d)", name, missing, repeats, bound)
		}
	}
}

func spansLen(s []Span) uint64 {
	var n uint64
	for _, x := range s {
		n += x.Len()
	}
	return n
}

// TestPlanUnknownCounts: units whose rows are unknown count 1 and are
// never cut, so with Keep every row is delivered once over the ranks
// (whole units), in every order.
func TestPlanUnknownCounts(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := 0; trial < 60; trial++ {
		shuffle := []string{"page", "stream", "none"}[trial%3]
		m := newModel(rng, shuffle, []int{3000, 35005}[rng.IntN(2)], []int{5, 60, 700}[rng.IntN(3)])
		counts := slices.Clone(m.rows)
		for i := range counts {
			if rng.IntN(4) == 0 {
				counts[i] = -1
			}
		}
		s, err := NewSpace(uint64(len(counts)), counts, nil, 0, shuffle != "page")
		if err != nil {
			t.Fatal(err)
		}
		if s.Known() {
			continue
		}
		e := s.Epoch(rng.Uint64(), 0)
		world := 1 + rng.IntN(9)
		seen := make([]int, m.total)
		for r := 0; r < world; r++ {
			sh, err := e.Plan(Params{World: world, Rank: r, Kind: Rows, Batch: 16, Policy: Keep})
			if err != nil {
				t.Fatalf("trial %d: %v", trial, err)
			}
			w := e.Walk(sh.Spans, Start(sh.Spans))
			for pc, ok := w.Next(); ok; pc, ok = w.Next() {
				lo, hi := pc.Lo, pc.Hi
				if counts[pc.Item] < 0 {
					if pc.Cut {
						t.Fatalf("trial %d: a unit of unknown rows cut: %+v", trial, pc)
					}
					lo, hi = 0, int64(m.rows[pc.Item])
				}
				for r := lo; r < hi; r++ {
					seen[m.start[pc.Item]+uint64(r)]++
				}
			}
		}
		for i, c := range seen {
			if c != 1 {
				t.Fatalf("trial %d (%s, world %d): row %d delivered %d times", trial, shuffle, world, i, c)
			}
		}
	}
}
