package rinas

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/pagefeed/pagefeed/index/perm"
)

// RowRef names one row: a global page number (of the lead column: Config.LeadColumn) and
// the row's index among the rows that start in that page.
type RowRef struct {
	Page uint64 `json:"p"`
	Row  uint32 `json:"r"`
	// Tok counts the row's tokens already delivered (tokens output: a
	// document split across batches).
	Tok uint32 `json:"t,omitempty"`
}

// State is a loader checkpoint: small, serializable (JSON), and exact.
//
// The epoch's units (pages; rows in row mode; row groups in rowgroup mode)
// are ordered by a seeded permutation; the units of rank Rank of World are
// the positions Start+Rank, Start+Rank+World, ... (index/perm). Done counts
// the units of that shard already taken in; Exclude lists global positions
// at or beyond the shard's Done-th that were taken in too (units of a batch
// that landed first, or of faster ranks after Reshard); Pending lists rows
// taken in but not yet handed to the consumer (the shuffle buffer, in its
// order, or the rest of a page), and RNG is the shuffle buffer's generator.
// Resuming re-reads the Pending rows' pages first, so every row is
// delivered exactly once across the checkpoint.
//
// A State is input like any file: Open checks every field against the
// loader (version, dataset, seed, shuffle, output, rank and world, the
// epoch within Config.Epoch..Epoch+Epochs, positions within the epoch's
// units, pending rows within their pages and taken in with their units)
// and refuses one that does not fit with ErrState naming the field. A
// State taken after the run's last epoch (EpochEnd) resumes a finished
// loader: Next returns io.EOF.
type State struct {
	Version int `json:"version"`
	// Dataset fingerprints the dataset's content and the column: each
	// file's path relative to the files' common directory, its size and
	// its footer's hash. A copy or a move of the dataset keeps it; Files
	// holds each file's share of it (4 bytes a file, base64) so that a
	// changed file can be named.
	Dataset string `json:"dataset"`
	Files   string `json:"files,omitempty"`
	// Columns is the projection and Lead the column whose pages defined
	// the units (several columns only).
	Columns []string `json:"columns,omitempty"`
	Lead    string   `json:"lead,omitempty"`
	Shuffle string   `json:"shuffle"`
	Seed    uint64   `json:"seed"`
	Epoch   uint64   `json:"epoch"`
	Start   uint64   `json:"start"`
	Rank    int      `json:"rank"`
	World   int      `json:"world"`
	Done    uint64   `json:"done"`
	Exclude []uint64 `json:"exclude,omitempty"`
	Pending []RowRef `json:"pending,omitempty"`
	RNG     uint64   `json:"rng"`
	// Batches counts the batches the rank delivered in the epoch, so that
	// a resumed loader yields Len in all.
	Batches uint64 `json:"batches,omitempty"`
	// Flushed says the shuffle buffer had been emptied at the epoch's
	// end: the Pending rows are all in delivery order.
	Flushed bool `json:"flushed,omitempty"`
	// Resharded marks the remainder of an epoch that Reshard dealt out to
	// another world: it is delivered exactly once, without equal steps.
	Resharded bool `json:"resharded,omitempty"`
	// End is the position where the epoch's plan ends this rank's shard
	// (DropLast stops short of the units, PadLast runs past them), and
	// Cut lists the shard's units that deliver only their first rows (row
	// batches cut for equal steps). Reshard carries both to the new world
	// so that what the original plan left out stays left out. End not
	// recorded (nil: states written before it was); a resharded remainder
	// then runs to the epoch's last unit.
	End      *uint64   `json:"end,omitempty"`
	Cut      []UnitCut `json:"cut,omitempty"`
	EpochEnd bool      `json:"epoch_end,omitempty"` // the epoch is finished
	// Output is the output it was taken with ("arrow", "tokens"): a
	// tokens checkpoint holds rows partly packed (RowRef.Tok) that Arrow
	// output would deliver whole again. Empty in states written before it
	// was recorded; those are checked by their rows' Tok alone.
	Output string `json:"output,omitempty"`
}

const stateVersion = 1

// UnitCut is a unit of a shard that delivers only its first Rows rows (in
// page order, before any shuffle): the last unit of a rank's share of row
// batches, cut so that every rank fills the same number of batches.
type UnitCut struct {
	Pos  uint64 `json:"p"` // the unit's epoch position
	Rows int64  `json:"n"`
}

// MarshalState encodes s as JSON.
func MarshalState(s *State) ([]byte, error) { return json.Marshal(s) }

// UnmarshalState decodes a State written by MarshalState.
func UnmarshalState(b []byte) (*State, error) {
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrState, err)
	}
	if s.Version != stateVersion {
		return nil, stateErr("version", "%d, this loader reads version %d", s.Version, stateVersion)
	}
	return &s, nil
}

// maxReshardExclude bounds the positions Reshard may have to exclude: ranks
// of one run are at most a few batches apart, so a spread beyond this is a
// bad state, not work to do.
const maxReshardExclude = 1 << 24

// stateErr is the ErrState about one field of a State.
func stateErr(field, format string, args ...any) error {
	return fmt.Errorf("%w: field %s: %s", ErrState, field, fmt.Sprintf(format, args...))
}

// checkState validates every field of s against the loader (dataset,
// seed, shuffle, output, rank and world, epochs, the epoch's units) before
// any of it is used, so a bad or edited checkpoint fails Open with ErrState
// naming the field instead of panicking, wrapping around, or delivering
// rows twice. The pending rows' row numbers and token counts are checked
// against their pages when restore reads them.
func (l *Loader) checkState(s *State) error {
	end := l.cfg.Epoch + uint64(l.cfg.Epochs)
	switch {
	case s.Version != stateVersion:
		return stateErr("version", "%d, this loader reads version %d", s.Version, stateVersion)
	case s.Dataset != l.dataset:
		return l.datasetMismatch(s)
	case s.Seed != l.cfg.Seed:
		return stateErr("seed", "it was taken with seed %d, this loader has seed %d", s.Seed, l.cfg.Seed)
	case s.Shuffle != l.cfg.Shuffle.String():
		return stateErr("shuffle", "it was taken with shuffle %q, this loader has %s", s.Shuffle, l.cfg.Shuffle)
	case s.Output != "" && s.Output != l.cfg.Output.String():
		return stateErr("output", "it was taken with %q output, this loader has %s", s.Output, l.cfg.Output)
	case s.World != l.cfg.World || s.Rank != l.cfg.Rank:
		return stateErr("rank", "it is rank %d of %d, this loader is rank %d of %d (use Reshard to change the world size)",
			s.Rank, s.World, l.cfg.Rank, l.cfg.World)
	case s.Start > l.nUnits:
		return stateErr("start", "position %d beyond the epoch's %d units", s.Start, l.nUnits)
	case s.Epoch < l.cfg.Epoch && !(s.EpochEnd && s.Epoch+1 == l.cfg.Epoch):
		return stateErr("epoch", "epoch %d is before this loader's first epoch %d", s.Epoch, l.cfg.Epoch)
	case s.Epoch >= end || s.Epoch == ^uint64(0):
		return stateErr("epoch", "epoch %d is past this loader's last epoch %d", s.Epoch, end-1)
	}
	if s.EpochEnd {
		if s.Done != 0 || len(s.Exclude) > 0 || len(s.Pending) > 0 {
			return stateErr("epoch_end", "a finished epoch with %d units done, %d excluded and %d rows pending", s.Done, len(s.Exclude), len(s.Pending))
		}
		return nil
	}
	// The shard as the epoch's plan has it: with PadLast its positions
	// run past the units (repeats), with DropLast they may stop short.
	var rem *State
	if s.Resharded {
		rem = s
		if err := l.checkRemainder(s); err != nil {
			return err
		}
	}
	sh, ep, err := l.planEpoch(s.Epoch, s.Start, rem)
	if err != nil {
		return stateErr("start", "%v", err)
	}
	if !s.Resharded && s.End != nil {
		// A state of this world's own plan records it: a differing one
		// was taken with other settings (DropLast, PadLast, BatchRows).
		if *s.End != sh.End {
			return stateErr("end", "the shard ends at position %d, this loader's plan ends it at %d", *s.End, sh.End)
		}
		if !slices.Equal(s.Cut, ep.cuts) {
			return stateErr("cut", "units cut %v, this loader's plan cuts %v", s.Cut, ep.cuts)
		}
	}
	if s.Done > sh.Len() {
		return stateErr("done", "%d units done of a shard of %d", s.Done, sh.Len())
	}
	low := sh.Pos(s.Done)
	for i, p := range s.Exclude {
		switch {
		case p >= sh.End:
			return stateErr("exclude", "position %d beyond the epoch's end %d", p, sh.End)
		case p < low || (p-s.Start)%uint64(s.World) != uint64(s.Rank):
			return stateErr("exclude", "position %d is not among rank %d's positions from %d", p, s.Rank, low)
		case i > 0 && p <= s.Exclude[i-1]:
			return stateErr("exclude", "positions not in increasing order (%d after %d)", p, s.Exclude[i-1])
		}
	}
	if len(s.Pending) > 0 && l.cfg.BatchRows == 0 {
		return stateErr("pending", "it holds %d buffered rows, which only row batches (BatchRows > 0) can deliver", len(s.Pending))
	}
	seen := make(map[RowRef]bool, len(s.Pending))
	for _, r := range s.Pending {
		if r.Page >= uint64(l.ix.NumPages(l.lead)) {
			return stateErr("pending", "row of page %d beyond the dataset's %d pages", r.Page, l.ix.NumPages(l.lead))
		}
		if r.Tok > 0 && l.cfg.Output != OutputTokens {
			return stateErr("pending", "row %d of page %d is partly delivered (%d tokens), which only tokens output does", r.Row, r.Page, r.Tok)
		}
		k := RowRef{Page: r.Page, Row: r.Row}
		if seen[k] {
			return stateErr("pending", "row %d of page %d is listed twice", r.Row, r.Page)
		}
		seen[k] = true
		// A pending row was taken in with its unit: a unit of this rank
		// still ahead would deliver it again. (A unit below Start, or of
		// another rank's positions after Reshard, was taken in by the
		// world; this rank cannot tell more.)
		pos, ok := l.unitPos(sh.Perm, r)
		if !ok {
			return stateErr("pending", "row %d of page %d is beyond the page's rows", r.Row, r.Page)
		}
		if pos >= s.Start && (pos-s.Start)%uint64(s.World) == uint64(s.Rank) && !s.consumed(pos) {
			return stateErr("pending", "row %d of page %d belongs to a unit not yet taken in (position %d)", r.Row, r.Page, pos)
		}
	}
	return nil
}

// checkRemainder checks what a Reshard state says of the original plan:
// its end within the epoch (past the units only with PadLast) and its cut
// units among the rank's positions before the end, each cut short of its
// rows (row batches only).
func (l *Loader) checkRemainder(s *State) error {
	lim := l.nUnits
	if l.cfg.PadLast {
		lim += maxReshardExclude
	}
	end := l.nUnits
	if s.End != nil {
		end = *s.End
	}
	switch {
	case end > lim:
		return stateErr("end", "position %d beyond the epoch's %d units", end, l.nUnits)
	case end < s.Start:
		return stateErr("end", "position %d before the start %d", end, s.Start)
	case len(s.Cut) > 0 && (l.cfg.BatchRows == 0 || s.End == nil || l.nUnits == 0):
		return stateErr("cut", "%d units cut, which only row batches with a recorded end do", len(s.Cut))
	}
	for i, c := range s.Cut {
		switch {
		case c.Pos < s.Start || c.Pos >= end || (c.Pos-s.Start)%uint64(s.World) != uint64(s.Rank):
			return stateErr("cut", "position %d is not among rank %d's positions from %d to %d", c.Pos, s.Rank, s.Start, end)
		case i > 0 && c.Pos <= s.Cut[i-1].Pos:
			return stateErr("cut", "positions not in increasing order (%d after %d)", c.Pos, s.Cut[i-1].Pos)
		}
		pos := c.Pos
		if pos >= l.nUnits {
			pos %= l.nUnits
		}
		item := pos
		if l.cfg.Shuffle != ShuffleNone && l.cfg.Shuffle != ShuffleStream {
			item = l.perm(s.Epoch).At(pos)
		}
		if n := l.unitRows(item); c.Rows < 0 || c.Rows >= n {
			return stateErr("cut", "unit at position %d cut to %d of its %d rows", c.Pos, c.Rows, n)
		}
	}
	return nil
}

// unitPos returns the epoch position (in p) of the unit that delivers row
// r, or false when r's row is beyond what the index says its page holds
// (row mode, where the unit is the row).
func (l *Loader) unitPos(p perm.Perm, r RowRef) (uint64, bool) {
	g := int(r.Page)
	switch l.cfg.Shuffle {
	case ShuffleNone, ShuffleStream:
		return uint64(g), true
	case ShuffleRowGroup:
		return p.Position(uint64(l.ix.Locate(l.lead, g).Chunk)), true
	case ShuffleRow:
		if int64(r.Row) >= l.rowStart[g+1]-l.rowStart[g] {
			return 0, false
		}
		return p.Position(uint64(l.rowStart[g] + int64(r.Row))), true
	}
	return p.Position(uint64(g)), true
}

// consumed reports whether global position pos is taken in by the state's
// rank: below its Done-th shard position, or excluded.
func (s *State) consumed(pos uint64) bool {
	if pos < s.Start || (pos-s.Start)%uint64(s.World) != uint64(s.Rank) {
		return false
	}
	if (pos-s.Start)/uint64(s.World) < s.Done {
		return true
	}
	_, found := slices.BinarySearch(s.Exclude, pos)
	return found
}

// Reshard turns the states of every rank of one world (taken at the same
// step or not) into states for a world of world ranks that together deliver
// exactly the rows the original world had yet to deliver in the epoch: the
// new shards start at the first position no rank has taken in, positions
// beyond it that some rank took in are excluded, and the pending rows are
// dealt out round-robin.
//
// What the original world's plan left out stays left out: the units at or
// beyond each rank's End (DropLast) are excluded, and a unit that plan cut
// (row batches: a rank's last unit delivers only its first rows) is cut the
// same way by the new rank that takes it in. So the rows delivered before
// the checkpoint and after it are the epoch's rows less the original
// plan's DropLast tail, each once (PadLast: plus its repeats), whatever
// the world sizes and the steps at which the states were taken. The new
// world's epoch remainder does not have equal steps; the next epoch does.
// States that do not record End (written before it was) are resharded to
// the epoch's last unit, the dropped tail included.
func Reshard(states []*State, world int) ([]*State, error) {
	byRank, err := reshardByRank(states, world)
	if err != nil {
		return nil, err
	}
	s0 := states[0] // its RNG seeds the new ranks'
	// The first position not taken in by its owner.
	start := ^uint64(0)
	for r, s := range byRank {
		start = min(start, s.Start+s.Done*uint64(s.World)+uint64(r))
	}
	// The end of the remainder: where the last rank's share ends.
	recorded := s0.End != nil
	end := uint64(0)
	for _, s := range byRank {
		if recorded {
			end = max(end, *s.End)
		}
	}
	exclude, pending, cuts, err := reshardLeftOut(byRank, start, end, recorded)
	if err != nil {
		return nil, err
	}
	out := make([]*State, world)
	for r := range out {
		ns := &State{Version: stateVersion, Dataset: s0.Dataset, Columns: s0.Columns, Lead: s0.Lead, Shuffle: s0.Shuffle, Seed: s0.Seed, Output: s0.Output,
			Files: s0.Files, Epoch: s0.Epoch, Start: start, Rank: r, World: world, EpochEnd: s0.EpochEnd, Resharded: !s0.EpochEnd,
			RNG: s0.RNG ^ (0x9e3779b97f4a7c15 * uint64(r+1))}
		if recorded && !s0.EpochEnd {
			e := max(end, start)
			ns.End = &e
		}
		for _, p := range exclude {
			if (p-start)%uint64(world) == uint64(r) {
				ns.Exclude = append(ns.Exclude, p)
			}
		}
		for _, c := range cuts {
			if (c.Pos-start)%uint64(world) == uint64(r) {
				ns.Cut = append(ns.Cut, c)
			}
		}
		for i := r; i < len(pending); i += world {
			ns.Pending = append(ns.Pending, pending[i])
		}
		out[r] = ns
	}
	return out, nil
}

// reshardByRank checks that states are every rank of one world, of one
// run and epoch, with counts that cannot wrap around, and returns them
// indexed by rank.
func reshardByRank(states []*State, world int) ([]*State, error) {
	if world < 1 || world > maxWorld {
		return nil, fmt.Errorf("%w: reshard to a world of %d (want 1..%d)", ErrConfig, world, maxWorld)
	}
	if len(states) == 0 {
		return nil, fmt.Errorf("%w: reshard %d states to world %d", ErrState, len(states), world)
	}
	s0 := states[0]
	if len(states) != s0.World {
		return nil, fmt.Errorf("%w: %d states for a world of %d", ErrState, len(states), s0.World)
	}
	byRank := make([]*State, s0.World)
	for _, s := range states {
		if s.Version != stateVersion || s.Dataset != s0.Dataset || s.Seed != s0.Seed || s.Epoch != s0.Epoch || s.Start != s0.Start ||
			s.World != s0.World || s.Shuffle != s0.Shuffle || s.EpochEnd != s0.EpochEnd || s.Output != s0.Output ||
			s.Lead != s0.Lead || !slices.Equal(s.Columns, s0.Columns) || (s.End == nil) != (s0.End == nil) {
			return nil, fmt.Errorf("%w: states of different runs or epochs", ErrState)
		}
		if s.Rank < 0 || s.Rank >= s.World || byRank[s.Rank] != nil {
			return nil, fmt.Errorf("%w: rank %d missing or twice", ErrState, s.Rank)
		}
		// Start + Done·World + Rank must not wrap around (Open checks the
		// rest against the dataset).
		if w, lim := uint64(s.World), ^uint64(0)-uint64(s.Rank); s.Start > lim || s.Done > (lim-s.Start)/w {
			return nil, stateErr("done", "rank %d: %d units done from position %d overflow", s.Rank, s.Done, s.Start)
		}
		byRank[s.Rank] = s
	}
	return byRank, nil
}

// reshardLeftOut returns what the remainder from start to end (recorded:
// the states record their End) must not deliver again or must deliver
// differently: the positions to exclude (sorted, once each), the pending
// rows of every rank in rank order, and the cut units not yet taken in
// (by position). The exclusions it adds are capped at maxReshardExclude.
func reshardLeftOut(byRank []*State, start, end uint64, recorded bool) ([]uint64, []RowRef, []UnitCut, error) {
	var exclude []uint64
	var pending []RowRef
	var cuts []UnitCut
	for r, s := range byRank {
		for _, p := range s.Exclude {
			if p >= start && (!recorded || p < end) {
				exclude = append(exclude, p)
			}
		}
		pending = append(pending, s.Pending...)
		// A cut unit not yet taken in keeps its cut; one taken in has
		// delivered its rows or holds them pending.
		for _, c := range s.Cut {
			if c.Pos >= start && c.Pos < *s.End && !s.consumed(c.Pos) {
				cuts = append(cuts, c)
			}
		}
		// The positions of rank r's own plan at or beyond its end and
		// before the remainder's end were left out: exclude them.
		if !recorded || *s.End >= end || s.EpochEnd {
			continue
		}
		w := uint64(s.World)
		first := max(*s.End, start)
		if first < s.Start+uint64(r) {
			first = s.Start + uint64(r)
		} else if k := (first - s.Start - uint64(r)) % w; k != 0 {
			first += w - k
		}
		if first < end && (end-first-1)/w+1 > maxReshardExclude-uint64(len(exclude)) {
			return nil, nil, nil, stateErr("end", "rank %d ends its share %d positions before the last rank's", r, end-*s.End)
		}
		for p := first; p < end; p += w {
			exclude = append(exclude, p)
		}
	}
	slices.SortFunc(cuts, func(a, b UnitCut) int { return cmp.Compare(a.Pos, b.Pos) })
	// Positions below a rank's Done but at or beyond start were taken in:
	// those of shard indexes j0 ≤ j < Done, j0 the first at or past start.
	for r, s := range byRank {
		w := uint64(s.World)
		j0 := uint64(0)
		if first := s.Start + uint64(r); first < start {
			j0 = (start - first + w - 1) / w
		}
		if s.Done > j0 && s.Done-j0 > maxReshardExclude-uint64(len(exclude)) {
			return nil, nil, nil, stateErr("done", "rank %d is %d units ahead of the slowest rank", r, s.Done-j0)
		}
		for j := j0; j < s.Done; j++ {
			if p := s.Start + j*w + uint64(r); !recorded || p < end {
				exclude = append(exclude, p)
			}
		}
	}
	slices.Sort(exclude)
	return slices.Compact(exclude), pending, cuts, nil
}
