package engine

import (
	"context"
	"errors"
	"os"
	"sync/atomic"
)

// More sentinel errors.
var (
	// ErrInvalid reports a malformed request: nil File, negative offset or
	// length, or a Worker out of range.
	ErrInvalid = errors.New("engine: invalid request")
	// ErrHandler is returned by Next on a queue whose completions go to a
	// Handler.
	ErrHandler = errors.New("engine: queue delivers to its Handler, not Next")
	// ErrResubmit is returned by Resubmit called anywhere but inside the
	// Handler call that was handed the completion.
	ErrResubmit = errors.New("engine: Resubmit outside the completion's Handler call")
)

// Submit queues reqs. It blocks while no slot is free and returns ctx.Err()
// if ctx ends first (requests already queued still complete). A request
// that cannot be served (ErrTooLarge, ErrInvalid, a closed file) stops
// Submit with an *Error; the requests before it stay queued. After Close it
// returns ErrClosed.
//
// A sleeping worker is woken once for all the requests of one call that
// it is given, after the last of them (or before Submit blocks for a free
// slot): woken at its first, it would take that one alone into the ring,
// and with several workers each would enter the kernel for a read or two.
func (q *Queue) Submit(ctx context.Context, reqs []Request) error {
	e := q.e
	var wk wakes
	defer wk.flush(e)
	for i := range reqs {
		req := &reqs[i]
		if err := e.check(req); err != nil {
			return err
		}
		if err := q.submitOne(ctx, req, &wk); err != nil {
			return err
		}
	}
	return nil
}

// wakes are the workers a Submit call owes a wakeup: posted to while
// asleep (see post).
type wakes struct {
	n  int
	ws [16]*worker // beyond these, a worker is woken at once
}

// owe records that w is owed a wakeup.
func (wk *wakes) owe(w *worker) {
	if wk.n == len(wk.ws) {
		w.wake() // under subMu's read lock: called from submitOne
		return
	}
	wk.ws[wk.n] = w
	wk.n++
}

// flush wakes every worker owed a wakeup. Like a post, a wake must
// happen under e.subMu's read lock (Close's barrier before it closes the
// eventfds), and not once Close began: its stop wakes every worker.
func (wk *wakes) flush(e *Engine) {
	if wk.n == 0 {
		return
	}
	e.subMu.RLock()
	wk.flushLocked(e)
	e.subMu.RUnlock()
}

// flushLocked is flush with e.subMu read-locked by the caller.
func (wk *wakes) flushLocked(e *Engine) {
	if !e.closing.Load() {
		for _, w := range wk.ws[:wk.n] {
			w.wake()
		}
	}
	wk.n = 0
}

func (q *Queue) submitOne(ctx context.Context, req *Request, wk *wakes) error {
	e := q.e
	e.subMu.RLock()
	defer e.subMu.RUnlock()
	if e.closing.Load() {
		return ErrClosed
	}
	var w *worker
	var idx int32
	ok := false
	n := len(e.workers)
	if req.Worker >= 0 {
		if req.Worker >= n {
			return &Error{Op: "submit", Path: req.File.path, Off: req.Off, Err: ErrInvalid}
		}
		w = e.workers[req.Worker]
		select {
		case idx = <-w.free:
			ok = true
		default:
		}
	} else {
		// Round robin, taking the first worker in turn with a free slot;
		// when all are full, wait for the one whose turn it is.
		start := int(e.rr.Add(1))
		w = e.workers[start%n]
		for k := 0; k < n && !ok; k++ {
			c := e.workers[(start+k)%n]
			select {
			case idx = <-c.free:
				w, ok = c, true
			default:
			}
		}
	}
	if !ok {
		// The slots come free as the workers deliver: none may sleep on
		// a request of this call while it waits.
		wk.flushLocked(e)
		select {
		case idx = <-w.free:
		case <-ctx.Done():
			return ctx.Err()
		case <-e.closedCh:
			return ErrClosed
		}
	}
	e.taken.Add(1)
	f := req.File
	f.inflight.Add(1)
	if f.closing.Load() {
		f.readDone()
		w.free <- idx
		e.taken.Add(-1)
		return &Error{Op: "submit", Path: f.path, Off: req.Off, Err: os.ErrClosed}
	}
	s := &w.slots[idx]
	s.state.Store(slotBusy)
	s.setup(q, req)
	q.inflight.Add(1)
	q.undelivered.Add(1)
	if w.post(idx) {
		wk.owe(w)
	}
	return nil
}

// Next returns the next completion in arrival order, blocking until one
// lands or ctx ends. Once the engine is closed and every completion was
// taken it returns ErrClosed.
func (q *Queue) Next(ctx context.Context) (*Completion, error) {
	if q.handler != nil {
		return nil, ErrHandler
	}
	select {
	case c := <-q.ch:
		return c, nil
	default:
	}
	select {
	case c := <-q.ch:
		return c, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-q.e.doneCh:
		select {
		case c := <-q.ch:
			return c, nil
		default:
			return nil, ErrClosed
		}
	}
}

// InFlight returns the number of requests submitted and not yet released.
func (q *Queue) InFlight() int { return int(q.inflight.Load()) }

// Drain waits until every request of the queue is completed and released,
// or ctx ends.
func (q *Queue) Drain(ctx context.Context) error {
	return q.waitZero(ctx, &q.inflight, &q.idle)
}

// Settle waits until every request submitted before the call has been
// delivered: its Handler call returned, or it was queued for Next. Unlike
// Drain it does not wait for Release, so a Handler may keep completions
// (their data) and the caller releases them once Settle returns, when no
// Handler of the queue runs any more (given that nothing is submitted
// meanwhile). It returns ctx.Err() if ctx ends first.
func (q *Queue) Settle(ctx context.Context) error {
	return q.waitZero(ctx, &q.undelivered, &q.settled)
}

// delivered counts one request handed over, waking Settle at zero.
func (q *Queue) delivered() { q.countDown(&q.undelivered, &q.settled) }

// done counts one released request, waking Drain at zero.
func (q *Queue) done() { q.countDown(&q.inflight, &q.idle) }

// waitZero waits until n is 0 or ctx ends. *zero is the channel closed when
// n reaches 0, made under q.mu by the first waiter.
func (q *Queue) waitZero(ctx context.Context, n *atomic.Int64, zero *chan struct{}) error {
	q.mu.Lock()
	if n.Load() == 0 {
		q.mu.Unlock()
		return nil
	}
	if *zero == nil {
		*zero = make(chan struct{})
	}
	ch := *zero
	q.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// countDown takes one from n and wakes waitZero's waiters at 0.
func (q *Queue) countDown(n *atomic.Int64, zero *chan struct{}) {
	if n.Add(-1) != 0 {
		return
	}
	q.mu.Lock()
	if *zero != nil && n.Load() == 0 {
		close(*zero)
		*zero = nil
	}
	q.mu.Unlock()
}
