package rinas

import (
	"errors"
	"slices"

	"github.com/pagefeed/pagefeed/rinas/plan"
)

// ErrUnread reports an Unread of a batch that the loader cannot take
// back: not the batch the last Next returned, released already, or given
// back already.
var ErrUnread = errors.New("rinas: Unread of a batch that is not the last one Next returned, or was released")

// Assembly is transactional. A Next that fails (its context cancelled or
// past its deadline at any point where it waits, a producer or decode
// error, a row the tokens output cannot pack) delivers nothing and loses
// nothing: the rows it had cut for its batch go back to the head of the
// row queue with the token offsets they had, its token buffer goes back to
// the pool, and the next Next cuts the same batch again.
//
// What the failed call did take in stays taken in: the fetch batches it
// took from the producer (their units' rows are then in the shuffle buffer
// or the row queue, and State lists them as pending), the end of an epoch
// (State then names the next epoch, from its start). Taking in cannot be
// undone, because the rows of one batch may span more fetch batches than
// the fetch window holds; it does not need to be, because State then
// describes the same rows to come, in the same order.
//
// batchRecord is what the loader keeps of the batch being cut, and of
// the one the last Next returned so that Unread can give it back: for
// page batches its fetch batch and the cursor before it, for row
// batches the rows it took from the queue (still retained, with the token
// offsets they had before it) and the token offset the head row had
// before the batch packed part of it. Keeping them costs no copy and no
// snapshot: the rows are released when the next Next begins instead of
// when the batch was cut.
type batchRecord struct {
	b *Batch
	// Page batches: the fetch batch, and the cursor before it.
	fb     *fetchBatch
	cursor plan.Cursor
	// Row batches: the rows cut from the queue's head, in order, as they
	// were before the batch (tokens: their Tok), each holding its
	// references. When the batch packed part of the row it left at the
	// queue's head (tokens output), tail is set and tailTok is the Tok
	// that row had before.
	rows    []rowItem
	tail    bool
	tailTok int
}

// reset empties r, releasing the rows it holds (their pages are rs's).
func (r *batchRecord) reset(rs *rowStream) {
	for _, it := range r.rows {
		rs.unpin(it.pg)
	}
	clear(r.rows)
	*r = batchRecord{rows: r.rows[:0]}
}

// begin starts a Next: the batch the previous one returned can no longer
// be given back, and its rows are released.
func (l *Loader) begin() {
	l.last.reset(&l.rows)
}

// commit makes b, cut with the record l.work, the last batch returned.
func (l *Loader) commit(b *Batch) {
	l.last, l.work = l.work, l.last
	l.last.b = b
}

// unshift puts rows back at the head of the row queue, in order, and
// empties the record's list without releasing them (the queue holds them
// now). A tail restores the queue head's token offset first.
func (l *Loader) unshift(r *batchRecord) {
	if r.tail {
		l.rows.out[0].setTok(r.tailTok)
	}
	if len(r.rows) > 0 {
		l.rows.out = append(slices.Clone(r.rows), l.rows.out...)
	}
	clear(r.rows)
	r.rows, r.tail = r.rows[:0], false
}

// Unread gives back b, the batch the last successful Next returned, not
// yet released: the next Next returns the same rows again, in the same
// order (page batches: the same units; tokens output: the same token
// matrix), and State until then counts them as not delivered, as if the
// Next that returned b had not been called. Use it when a batch taken
// from Next could not be handed on (an interrupt between the call and
// its consumer), so that a checkpoint taken then does not count rows
// nobody received.
//
// Unread releases b: nothing of it may be used afterwards, and b.Release
// must not be called (it panics, as a second Release does). "Last" means
// that Next has not been called since it returned b, whatever that call
// returned: a later Next may have taken in the rest of b's epoch or moved
// to the next one. Unread of any other batch, or of b once released or
// given back, returns ErrUnread and changes nothing; after Close it
// returns ErrClosed. It must not be called concurrently with Next, State
// or Close. A Next that is never given back pays nothing for it but
// holding its rows' references until the next call.
func (l *Loader) Unread(b *Batch) error {
	if l.closed {
		return ErrClosed
	}
	if l.mix != nil {
		return l.mix.unread(b)
	}
	r := &l.last
	if b == nil || r.b != b || !b.released.CompareAndSwap(false, true) {
		return ErrUnread
	}
	for _, c := range b.Columns {
		for _, a := range c.Arrays {
			a.Release()
		}
	}
	if r.fb != nil {
		// The fetch batch stays the loader's, with its decoded pages,
		// ahead of everything the producer hands over.
		r.fb.out.Store(false)
		l.unread = r.fb
		l.cursor = r.cursor
	} else {
		if b.free != nil {
			b.free() // the token buffer
		}
		l.unshift(r)
	}
	l.batches--
	l.stats.Batches--
	l.stats.Rows -= int64(b.Rows)
	r.b, r.fb, r.cursor = nil, nil, plan.Cursor{}
	return nil
}
