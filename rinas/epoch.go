package rinas

import (
	"fmt"
	"io"
	"slices"

	"github.com/pagefeed/pagefeed/rinas/plan"
)

// The consumer's epochs: which one is being read, this rank's share of
// it (package plan), how far it is taken in, and the State that says so.

// startEpoch sets the consumer's epoch and share from a State or from the
// start.
func (l *Loader) startEpoch(s *State) error {
	if s == nil {
		l.epoch = l.cfg.Epoch
		return l.beginEpoch(nil)
	}
	if s.Mix != nil {
		return fmt.Errorf("%w: it is a mixture's state (%d sources), this loader reads one dataset (Config.Paths)", ErrState, len(s.Mix.Sources))
	}
	if len(l.proj) > 1 && !l.sameColumns(s.Columns, s.Lead) {
		return fmt.Errorf("%w: it was taken with columns %v led by %q, this loader reads %v led by %s",
			ErrState, s.Columns, s.Lead, l.projNames(), l.ix.Column(l.lead).Path)
	}
	if err := l.checkState(s); err != nil {
		return err
	}
	l.epoch = s.Epoch
	if s.EpochEnd {
		if s.Epoch+1 == l.cfg.Epoch+uint64(l.cfg.Epochs) {
			// The run's last epoch is done: Next says io.EOF, and the
			// producer has nothing to read.
			l.finished = true
			return nil
		}
		l.epoch++
		return l.beginEpoch(nil)
	}
	var rem *State
	if s.Resharded {
		rem = s
	}
	if err := l.beginEpoch(rem); err != nil {
		return err
	}
	pending := s.Pending
	if s.Fresh {
		// The remainder dealt just now: the rank keeps the pending rows
		// dealt to it that its share has room for.
		pending = pending[:l.share.Pending]
	} else {
		l.cursor = plan.Cursor{Done: s.Done, Taken: slices.Clone(s.Taken)} // checked by checkState
	}
	l.batches = int64(s.Batches)
	l.rows.rng = splitmix(s.RNG)
	return l.rows.restore(pending, s.Flushed)
}

// beginEpoch plans the consumer's epoch l.epoch: from its start, or (rem)
// the remainder a Reshard state holds.
func (l *Loader) beginEpoch(rem *State) error {
	e := l.epochPlan(l.epoch)
	sh, err := l.planShare(e, rem)
	if err != nil {
		return err
	}
	l.ep, l.share, l.cursor, l.batches, l.rest = e, sh, plan.Start(sh.Spans), 0, nil
	if rem != nil {
		l.rest = &plan.Rest{Spans: rem.Rest, Pending: rem.RestPending}
	}
	// What the plan leaves out belongs to the whole world and is reported
	// rank by rank; what it repeats, by the ranks that repeat it.
	w, r := l.cfg.World, l.cfg.Rank
	dropped := int64(plan.Split(uint64(l.spanRows(e, sh.Dropped))+sh.DroppedPending, w, r))
	var padded int64
	t := l.space.Total()
	for _, sp := range sh.Spans {
		if sp.Hi > t {
			padded += l.spanRows(e, []plan.Span{{Lo: max(sp.Lo, t), Hi: sp.Hi}})
		}
	}
	l.stats.DroppedRows += dropped
	l.stats.PaddedRows += padded
	switch {
	case dropped > 0:
		l.cfg.Logf("epoch %d: rank %d of %d leaves out its part, %d rows, of what cannot be spread evenly so that every rank takes %d steps (DropLast)", l.epoch, r, w, dropped, sh.Steps)
	case padded > 0:
		l.cfg.Logf("epoch %d: rank %d of %d repeats %d rows so that every rank takes %d steps (PadLast)", l.epoch, r, w, padded, sh.Steps)
	}
	return nil
}

// endEpoch moves the consumer to the next epoch, or finishes.
func (l *Loader) endEpoch() error {
	if msg := l.pcache.tooSmall(); msg != "" {
		l.cfg.Logf("%s", msg)
	}
	if l.epoch+1 >= l.cfg.Epoch+uint64(l.cfg.Epochs) {
		l.finished = true
		return io.EOF
	}
	l.epoch++
	return l.beginEpoch(nil)
}

// State returns a checkpoint after the last batch Next returned.
func (l *Loader) State() *State {
	if l.mix != nil {
		return l.mix.state()
	}
	s := &State{Version: stateVersion, Dataset: l.dataset, Files: l.fileSums, Shuffle: l.cfg.Shuffle.String(), Output: l.cfg.Output.String(),
		Seed: l.cfg.Seed, Epoch: l.epoch, Rank: l.cfg.Rank, World: l.cfg.World, BatchRows: l.cfg.BatchRows, Policy: l.policy().String(),
		Total: l.space.Total(), RNG: uint64(l.rows.rng), Batches: uint64(l.batches)}
	if l.cfg.BatchRows == 0 {
		s.BatchPages = l.cfg.BatchPages
	}
	if len(l.proj) > 1 {
		s.Columns, s.Lead = l.projNames(), l.ix.Column(l.lead).Path
	}
	if l.finished {
		s.EpochEnd, s.Batches = true, 0
		return s
	}
	s.Share = cloneSpans(l.share.Spans)
	c := l.cursor
	if fb := l.cur; fb != nil {
		// Units of the batch being taken in: those already taken.
		var in []plan.Span
		for _, ui := range l.takeOrder(fb)[:l.curNext] {
			u := &fb.units[ui]
			in = append(in, plan.Span{Lo: u.x0, Hi: u.x1})
		}
		c = c.With(in)
	}
	s.Done, s.Taken = c.Done, cloneSpans(c.Taken)
	if l.rest != nil {
		s.Resharded, s.Rest, s.RestPending = true, l.rest.Spans, l.rest.Pending
	}
	s.Pending = l.rows.pending()
	s.Flushed = l.atEnd && len(s.Pending) > 0
	return s
}

// Len returns the number of batches Next yields in the current epoch for
// this rank (Open's first epoch until Next moves on). It is exact, known
// at Open, and the same on every rank unless KeepUneven is set (then
// ranks differ by at most one):
//   - page batches over pages (or row groups) whose rows are all known
//     (an offset index; row groups always): ranks share rows, every rank
//     ⌊rows/World⌋ (DropLast) or ⌈rows/World⌉ (PadLast), a page at a
//     rank's boundary read by both ranks, each keeping its rows; every
//     rank takes the largest ⌈pieces/BatchPages⌉ over the ranks, and a
//     rank with fewer pieces spreads them over as many batches (cutting
//     a page at a row where it has fewer pieces than batches: package
//     plan states the rule);
//   - page batches over pages of unknown rows, and of the row shuffle:
//     ⌈units/BatchPages⌉ of the rank's units, every rank taking
//     ⌊units/World⌋ (DropLast) or ⌈units/World⌉ (PadLast) units;
//   - row batches (arrow output): every rank takes ⌊rows/(World·BatchRows)⌋
//     full batches (DropLast; PadLast rounds up), or ⌈its rows/BatchRows⌉;
//   - tokens output: from the tokens of the rank's share, estimated for a
//     list column (from its page bytes, at the values per byte of sampled
//     page headers, plus one EOS per row) and exact for a flat one (one
//     token per row): ⌊tokens/(World·BatchRows·SeqLen)⌋ under DropLast,
//     rounded up under PadLast. Next honours the count under DropLast
//     and PadLast, so that every rank takes the same steps: an epoch
//     whose tokens run out early is padded with empty batches (all Pad,
//     LossMask 0, Fill 0), and one that has more drops the rest
//     (Stats.DroppedRows). With KeepUneven (World 1's default) every
//     token is delivered and Len is the estimate.
//
// An epoch resumed from a State counts its whole length, the batches
// delivered before the checkpoint included; the rest of an epoch that
// Reshard dealt to this world counts its own steps (the same on every
// rank), not the old world's. A mixture's Len is its epoch's steps
// (Config.EpochSize over World × BatchRows), the rest of a resharded
// epoch likewise its own.
func (l *Loader) Len() int {
	if l.mix != nil {
		return int(l.mix.steps())
	}
	return int(l.share.Steps)
}

// EpochLen returns the number of batches Next yields for this rank in
// epoch: Len of the epoch being read (resumed and resharded epochs
// included), and of any other epoch as a fresh start of it plans it
// (every epoch's plan deals the same totals, so this needs no pass over
// the epoch, except for page batches of units whose rows are known: their
// steps depend on the epoch's order, planned once per epoch). Like Len it
// is exact for page and row batches and the same on every rank unless
// KeepUneven is set; see Len for tokens output.
func (l *Loader) EpochLen(epoch uint64) (int, error) {
	if l.closed {
		return 0, ErrClosed
	}
	if l.mix != nil {
		if epoch == l.mix.epoch {
			return int(l.mix.steps()), nil
		}
		return int(l.mix.stepsOf(l.mix.units)), nil
	}
	if epoch == l.epoch {
		return int(l.share.Steps), nil
	}
	if p := l.params(); p.Kind == plan.Units && l.space.Counted() {
		// Page batches that share rows: the steps count every rank's
		// pieces, which the epoch's order decides.
		sh, err := l.epochPlan(epoch).Plan(p)
		if err != nil {
			return 0, l.planErr(err)
		}
		return int(sh.Steps), nil
	}
	n, err := l.space.Steps(l.params())
	if err != nil {
		return 0, l.planErr(err)
	}
	return int(n), nil
}
