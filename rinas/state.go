package rinas

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/pagefeed/pagefeed/rinas/plan"
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

// Span is a range [Lo, Hi) of an epoch's row stream (see State).
type Span = plan.Span

// State is a loader checkpoint: small, serializable (JSON), and exact.
//
// An epoch orders its units (pages; rows in row mode; row groups in
// rowgroup mode) by a seeded permutation (file order for the stream and
// no shuffle); laid end to end in that order, the units' rows form the
// epoch's stream (with page batches, each unit counts one), and a
// coordinate names one of them. Rank Rank of World delivers the ranges
// Share of that stream: from a fresh epoch one contiguous range, whose
// boundary units are read by both ranks that share them, each keeping its
// rows. Done is the coordinate up to which the rank has taken its share
// in; Taken lists ranges beyond it taken in already (units of a batch
// that landed first); Pending lists rows taken in but not yet handed to
// the consumer (the shuffle buffer, in its order, or the rest of a page),
// and RNG is the shuffle buffer's generator. Resuming re-reads the Pending
// rows' pages first, so every row is delivered exactly once across the
// checkpoint.
//
// A State is input like any file: Open checks every field against the
// loader (version, dataset, seed, shuffle, output, batch sizes and equal
// steps policy, rank and world, the epoch within
// Config.Epoch..Epoch+Epochs, the share against the epoch's plan, the
// progress within the share, pending rows within their pages and taken in
// with their units) and refuses one that does not fit with ErrState
// naming the field. A State taken after the run's last epoch (EpochEnd)
// resumes a finished loader: Next returns io.EOF.
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
	// Output is the output it was taken with ("arrow", "tokens"): a
	// tokens checkpoint holds rows partly packed (RowRef.Tok) that Arrow
	// output would deliver whole again.
	Output string `json:"output"`
	Seed   uint64 `json:"seed"`
	Epoch  uint64 `json:"epoch"`
	Rank   int    `json:"rank"`
	World  int    `json:"world"`
	// BatchRows, BatchPages and Policy ("drop", "pad", "keep": DropLast,
	// PadLast, KeepUneven) are how the epoch was dealt out; Total is the
	// length of its stream.
	BatchRows  int    `json:"batch_rows,omitempty"`
	BatchPages int    `json:"batch_pages,omitempty"`
	Policy     string `json:"policy"`
	Total      uint64 `json:"total"`
	// Share, Done and Taken: see the type's doc.
	Share   []Span   `json:"share,omitempty"`
	Done    uint64   `json:"done"`
	Taken   []Span   `json:"taken,omitempty"`
	Pending []RowRef `json:"pending,omitempty"`
	RNG     uint64   `json:"rng"`
	// Batches counts the batches the rank delivered in the epoch, so that
	// a resumed loader yields Len in all.
	Batches uint64 `json:"batches,omitempty"`
	// Flushed says the shuffle buffer had been emptied at the epoch's
	// end: the Pending rows are all in delivery order.
	Flushed bool `json:"flushed,omitempty"`
	// Resharded marks the remainder of an epoch that an earlier world
	// left, as Reshard hands it on: Rest lists the ranges of the stream
	// that world had not taken in and RestPending counts the rows it had
	// taken in but not delivered. Every rank of this world deals Rest and
	// the pending rows alike, from its own settings (Reshard's doc), and
	// Share is then its part. Fresh marks a state as Reshard made it: its
	// share not dealt yet, Pending the pending rows dealt to the rank
	// (row i of RestPending to rank i mod World), of which it keeps as
	// many as its share has room for.
	Resharded   bool   `json:"resharded,omitempty"`
	Rest        []Span `json:"rest,omitempty"`
	RestPending uint64 `json:"rest_pending,omitempty"`
	Fresh       bool   `json:"fresh,omitempty"`
	EpochEnd    bool   `json:"epoch_end,omitempty"` // the epoch is finished
	// Mix is a mixture's state (Config.Sources); the fields above then
	// hold only Version, Output, Seed, Epoch, Rank and World.
	Mix *MixState `json:"mix,omitempty"`
}

// stateVersion 2: states say where the rank is in its share of the
// epoch's row stream (Share, Done, Taken); version 1 named shard
// positions.
const stateVersion = 2

// MarshalState encodes s as JSON.
func MarshalState(s *State) ([]byte, error) { return json.Marshal(s) }

// UnmarshalState decodes a State written by MarshalState.
func UnmarshalState(b []byte) (*State, error) {
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrState, err)
	}
	if s.Version != stateVersion {
		return nil, versionErr(s.Version)
	}
	return &s, nil
}

func versionErr(v int) error {
	if v == 1 {
		return stateErr("version", "1, written by an older loader whose shards were positions; this loader reads version %d (resume the epoch's start instead)", stateVersion)
	}
	return stateErr("version", "%d, this loader reads version %d", v, stateVersion)
}

// stateErr is the ErrState about one field of a State.
func stateErr(field, format string, args ...any) error {
	return fmt.Errorf("%w: field %s: %s", ErrState, field, fmt.Sprintf(format, args...))
}

// checkState validates every field of s against the loader (dataset,
// seed, shuffle, output, how the epoch is dealt out, rank and world,
// epochs, the share and the progress in it) before any of it is used, so
// a bad or edited checkpoint fails Open with ErrState naming the field
// instead of panicking, wrapping around, or delivering rows twice. The
// pending rows' row numbers and token counts are checked against their
// pages when restore reads them.
func (l *Loader) checkState(s *State) error {
	end := l.cfg.Epoch + uint64(l.cfg.Epochs)
	switch {
	case s.Version != stateVersion:
		return versionErr(s.Version)
	case s.Dataset != l.dataset:
		return l.datasetMismatch(s)
	case s.Seed != l.cfg.Seed:
		return stateErr("seed", "it was taken with seed %d, this loader has seed %d", s.Seed, l.cfg.Seed)
	case s.Shuffle != l.cfg.Shuffle.String():
		return stateErr("shuffle", "it was taken with shuffle %q, this loader has %s", s.Shuffle, l.cfg.Shuffle)
	case s.Output != l.cfg.Output.String():
		return stateErr("output", "it was taken with %q output, this loader has %s", s.Output, l.cfg.Output)
	case s.World != l.cfg.World || s.Rank != l.cfg.Rank:
		return stateErr("rank", "it is rank %d of %d, this loader is rank %d of %d (use Reshard to change the world size)",
			s.Rank, s.World, l.cfg.Rank, l.cfg.World)
	case (s.BatchRows == 0) != (l.cfg.BatchRows == 0) || (!s.Fresh && s.BatchRows != l.cfg.BatchRows):
		// A fresh remainder is dealt by this loader, at its own batch size.
		return stateErr("batch_rows", "it was taken with batches of %d rows, this loader has %d", s.BatchRows, l.cfg.BatchRows)
	case !s.Fresh && l.cfg.BatchRows == 0 && s.BatchPages != l.cfg.BatchPages:
		return stateErr("batch_pages", "it was taken with batches of %d units, this loader has %d", s.BatchPages, l.cfg.BatchPages)
	case !s.Fresh && s.Policy != l.policy().String():
		return stateErr("policy", "it was taken with policy %q, this loader has %s", s.Policy, l.policy())
	case s.Total != l.space.Total():
		return stateErr("total", "its epoch's stream holds %d, this loader's %d", s.Total, l.space.Total())
	case s.Epoch < l.cfg.Epoch && !(s.EpochEnd && s.Epoch+1 == l.cfg.Epoch):
		return stateErr("epoch", "epoch %d is before this loader's first epoch %d", s.Epoch, l.cfg.Epoch)
	case s.Epoch >= end || s.Epoch == ^uint64(0):
		return stateErr("epoch", "epoch %d is past this loader's last epoch %d", s.Epoch, end-1)
	}
	if s.EpochEnd {
		if s.Done != 0 || len(s.Share) > 0 || len(s.Taken) > 0 || len(s.Pending) > 0 {
			return stateErr("epoch_end", "a finished epoch with a share, %d taken in, %d early and %d rows pending", s.Done, len(s.Taken), len(s.Pending))
		}
		return nil
	}
	e := l.epochPlan(s.Epoch)
	if s.Resharded {
		if err := l.checkRest(s); err != nil {
			return err
		}
	}
	sh, err := l.planShare(e, s)
	if err != nil {
		return stateErr("share", "%v", err)
	}
	if s.Fresh {
		if len(s.Share) > 0 || s.Done != 0 || len(s.Taken) > 0 || s.Batches != 0 {
			return stateErr("fresh", "a remainder not dealt yet with a share, progress or batches of its own")
		}
		if n := plan.PendingOf(s.RestPending, s.World, s.Rank); uint64(len(s.Pending)) != n {
			return stateErr("pending", "%d rows dealt to rank %d, of %d pending rows it should get %d", len(s.Pending), s.Rank, s.RestPending, n)
		}
		return l.checkPending(s, e)
	}
	if !slices.Equal(s.Share, sh.Spans) {
		return stateErr("share", "rank %d delivers %v of the epoch, this loader's plan gives it %v (other settings?)", s.Rank, s.Share, sh.Spans)
	}
	c := plan.Cursor{Done: s.Done}
	if err := c.Check(e, s.Share); err != nil {
		return stateErr("done", "%v", err)
	}
	c.Taken = s.Taken
	if err := c.Check(e, s.Share); err != nil {
		return stateErr("taken", "%v", err)
	}
	return l.checkPending(s, e)
}

// checkRest checks what Reshard handed on: the ranges left increasing
// and within the stream and its repeats, the pending rows no more than
// there can be.
func (l *Loader) checkRest(s *State) error {
	lim := 4*s.Total + 1<<26 // the stream and, far beyond any PadLast repeats, no more
	if err := plan.CheckSpans(s.Rest, lim); err != nil {
		return stateErr("rest", "%v", err)
	}
	if s.RestPending > plan.MaxStream {
		return stateErr("rest_pending", "%d rows", s.RestPending)
	}
	return nil
}

// checkPending checks s's pending rows: on pages of the dataset, partly
// delivered only in tokens output, listed once, and taken in with their
// units (a unit of this rank's share still ahead would deliver them
// again).
func (l *Loader) checkPending(s *State, e *plan.Epoch) error {
	if len(s.Pending) > 0 && l.cfg.BatchRows == 0 {
		return stateErr("pending", "it holds %d buffered rows, which only row batches (BatchRows > 0) can deliver", len(s.Pending))
	}
	seen := make(map[RowRef]bool, len(s.Pending))
	starts := map[uint64]uint64{} // unit item → its stream coordinate
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
		item, off, ok := l.rowUnit(r)
		if !ok {
			if l.cfg.Shuffle == ShuffleRowGroup {
				continue // its place in the row group is unknown: restore checks the row
			}
			return stateErr("pending", "row %d of page %d is beyond the page's rows", r.Row, r.Page)
		}
		x, ok := starts[item]
		if !ok {
			x = e.X(e.Order.Position(item))
			starts[item] = x
		}
		if ahead(s, x+uint64(off)) {
			return stateErr("pending", "row %d of page %d belongs to a unit not yet taken in (stream coordinate %d)", r.Row, r.Page, x+uint64(off))
		}
	}
	return nil
}

// ahead reports whether the row at stream coordinate x (or a repeat of
// it, x + k·Total) lies in the part of s's share not taken in.
func ahead(s *State, x uint64) bool {
	t := s.Total
	taken := s.Taken
	for _, sp := range s.Share {
		lo := max(sp.Lo, s.Done)
		if lo >= sp.Hi || t == 0 {
			continue
		}
		// The first coordinate at or past lo that names x's row.
		y := x
		if lo > x {
			y = x + (lo-x+t-1)/t*t
		}
		for ; y < sp.Hi; y += t {
			in := false
			for _, tk := range taken {
				if y >= tk.Lo && y < tk.Hi {
					in = true
					break
				}
			}
			if !in {
				return true
			}
		}
	}
	return false
}

// Reshard turns the states of every rank of one world (taken at the same
// step or not) into states for a world of world ranks that together
// deliver exactly the rows the original world had yet to deliver in the
// epoch, each once: the rows taken in but not delivered (Pending) first,
// dealt round-robin, then the ranges of the ranks' shares no rank has
// taken in, in stream order. Each new rank deals that rest at Open, from
// its own Config, as a fresh epoch's plan deals the whole stream: under
// DropLast and PadLast every new rank gets the same number of full
// batches, and the deal leaves out (or repeats) fewer than World batches'
// worth; KeepUneven deals within one row. So the rest of the epoch takes
// equal steps on every new rank, and the new world may change the batch
// size. What the original plan left out stays left out. Tokens output
// deals the rows evenly, and the new ranks derive the steps from the
// dataset's mean tokens per row.
func Reshard(states []*State, world int) ([]*State, error) {
	if len(states) > 0 && states[0] != nil && states[0].Mix != nil {
		return reshardMix(states, world)
	}
	byRank, err := reshardByRank(states, world)
	if err != nil {
		return nil, err
	}
	s0 := byRank[0]
	out := make([]*State, world)
	for r := range out {
		out[r] = &State{Version: stateVersion, Dataset: s0.Dataset, Files: s0.Files, Columns: s0.Columns, Lead: s0.Lead, Shuffle: s0.Shuffle,
			Output: s0.Output, Seed: s0.Seed, Epoch: s0.Epoch, Rank: r, World: world, BatchRows: s0.BatchRows, BatchPages: s0.BatchPages,
			Policy: s0.Policy, Total: s0.Total, EpochEnd: s0.EpochEnd, RNG: s0.RNG ^ (0x9e3779b97f4a7c15 * uint64(r+1))}
	}
	if s0.EpochEnd {
		return out, nil
	}
	// The new world's policy: as the old one's, but a default follows the
	// world as Config's does (DropLast for several ranks, KeepUneven for
	// one), so that a world grown from one rank takes equal steps.
	old := make([]plan.Progress, len(byRank))
	var pending []RowRef
	for r, s := range byRank {
		old[r] = plan.Progress{Spans: s.Share, Cursor: plan.Cursor{Done: s.Done, Taken: s.Taken}, Pending: uint64(len(s.Pending))}
		pending = append(pending, s.Pending...)
	}
	var rest plan.Rest
	if s0.Fresh {
		// Not resumed since Reshard made them: the same rest, dealt anew.
		rest = plan.Rest{Spans: s0.Rest, Pending: uint64(len(pending))}
		if err := plan.CheckSpans(rest.Spans, plan.MaxStream); err != nil {
			return nil, stateErr("rest", "%v", err)
		}
	} else {
		var err error
		if rest, err = plan.Reshard(old); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrState, err)
		}
	}
	for r, ns := range out {
		ns.Resharded, ns.Fresh = true, true
		ns.Rest, ns.RestPending = rest.Spans, rest.Pending
		for i := r; i < len(pending); i += world {
			ns.Pending = append(ns.Pending, pending[i])
		}
	}
	return out, nil
}

// reshardByRank checks that states are every rank of one world, of one
// run and epoch, dealt out the same way, and returns them indexed by rank.
func reshardByRank(states []*State, world int) ([]*State, error) {
	if world < 1 || world > maxWorld {
		return nil, fmt.Errorf("%w: reshard to a world of %d (want 1..%d)", ErrConfig, world, maxWorld)
	}
	if len(states) == 0 {
		return nil, fmt.Errorf("%w: reshard %d states to world %d", ErrState, len(states), world)
	}
	s0 := states[0]
	if s0 == nil || len(states) != s0.World {
		w := 0
		if s0 != nil {
			w = s0.World
		}
		return nil, fmt.Errorf("%w: %d states for a world of %d", ErrState, len(states), w)
	}
	byRank := make([]*State, s0.World)
	for _, s := range states {
		if s == nil {
			return nil, fmt.Errorf("%w: a nil state", ErrState)
		}
		if s.Version != stateVersion {
			return nil, versionErr(s.Version)
		}
		if s.Dataset != s0.Dataset || s.Seed != s0.Seed || s.Epoch != s0.Epoch || s.World != s0.World || s.Shuffle != s0.Shuffle ||
			s.Fresh != s0.Fresh || (s.Fresh && !slices.Equal(s.Rest, s0.Rest)) ||
			s.EpochEnd != s0.EpochEnd || s.Output != s0.Output || s.Lead != s0.Lead || !slices.Equal(s.Columns, s0.Columns) ||
			s.BatchRows != s0.BatchRows || s.BatchPages != s0.BatchPages || s.Policy != s0.Policy || s.Total != s0.Total {
			return nil, fmt.Errorf("%w: states of different runs, epochs or settings", ErrState)
		}
		if s.Rank < 0 || s.Rank >= s.World || byRank[s.Rank] != nil {
			return nil, fmt.Errorf("%w: rank %d missing or twice", ErrState, s.Rank)
		}
		byRank[s.Rank] = s
	}
	if _, err := plan.ParsePolicy(s0.Policy); err != nil {
		return nil, stateErr("policy", "%v", err)
	}
	if s0.BatchRows < 0 || (s0.BatchRows == 0 && s0.BatchPages <= 0) {
		return nil, stateErr("batch_rows", "batches of %d rows or %d units", s0.BatchRows, s0.BatchPages)
	}
	if s0.Total > plan.MaxStream {
		return nil, stateErr("total", "a stream of %d", s0.Total)
	}
	return byRank, nil
}
