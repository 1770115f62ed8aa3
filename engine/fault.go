package engine

import (
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// FaultInjector rewrites read results between the kernel and the engine. It
// is the hook that reliability tests and soak runs use (Options.Faults) to
// make a healthy disk look like a failing one; production engines leave it
// nil, which costs one nil check per read attempt.
//
// Fault is called once per read attempt (every resubmission of a short or
// retried read is an attempt of its own) on the worker that reaped it, with
// the file, the absolute offset and the length the attempt asked for, and
// res, the kernel's result: bytes read, or a negative errno. It returns the
// result the engine acts on:
//   - res itself: no fault;
//   - a negative errno: EINTR, EAGAIN and ECANCELED are transient and the
//     engine retries the attempt (at most maxTransient times in a row);
//     any other errno completes the request with *Error{Op: "read"};
//   - a count in [1, res) when res > 0: a short read; the engine reads the
//     rest again. Other counts are clamped to that range.
//
// Fault is called concurrently from every worker and must not block.
type FaultInjector interface {
	Fault(f *File, off int64, n int, res int) int
}

// EnterFaulter is implemented by a FaultInjector that also fails
// io_uring_enter calls, to test a ring that stops working. FaultEnter is
// called on worker's goroutine before each io_uring_enter it makes and
// returns 0 to let the call run, or the errno the call fails with instead:
// the kernel is not entered, so nothing is submitted or waited for.
// EAGAIN and EBUSY are transient (the worker reaps and enters again);
// other errnos fail the requests that were to be submitted, and after
// maxEnterErrors in a row the worker gives up on its ring (see
// worker.abandon).
type EnterFaulter interface {
	FaultEnter(worker int) syscall.Errno
}

// FaultFunc adapts a function to FaultInjector.
type FaultFunc func(f *File, off int64, n int, res int) int

// Fault implements FaultInjector.
func (fn FaultFunc) Fault(f *File, off int64, n int, res int) int { return fn(f, off, n, res) }

// maxTransient bounds the transient errors (EINTR, EAGAIN, ECANCELED) one
// request may meet in a row before it fails with the last of them: a device
// that keeps saying "again" must not hang the consumer.
const maxTransient = 64

// maxEnterErrors is how many io_uring_enter calls in a row may fail with
// an errno retrying cannot fix before a worker gives up on its ring.
const maxEnterErrors = 8

// transient reports whether errno means "try the same read again".
func transient(errno syscall.Errno) bool {
	return errno == unix.EINTR || errno == unix.EAGAIN || errno == unix.ECANCELED
}

// fault runs the engine's injector, if any, on one attempt of s.
func (e *Engine) fault(s *slot, res int) int {
	if e.opts.Faults == nil {
		return res
	}
	got := clampFault(res, e.opts.Faults.Fault(s.c.File, s.aoff+int64(s.got), s.want-s.got, res))
	s.injected = got != res
	return got
}

// clampFault keeps an injected result honest: it can fail an attempt or
// shorten it, never invent bytes the kernel did not read or turn a read
// into end of file.
func clampFault(res, got int) int {
	switch {
	case got < 0 || got == res:
		return got
	case res <= 0:
		return res // no bytes to shorten
	case got == 0:
		return 1
	case got > res:
		return res
	}
	return got
}

// RateFaults is a FaultInjector that fails read attempts at random, at a
// configured probability per kind, and counts what it injected. The
// draws come from a counter-based generator keyed by Seed: safe for
// concurrent use, no lock, no allocation. The zero value injects nothing.
type RateFaults struct {
	// Probabilities per read attempt, each in [0, 1]; their sum should
	// stay below 1 (the kinds are drawn from one number, in this order).
	EIO, Short, EAGAIN, EINTR, ECANCELED float64
	Seed                                 uint64
	// Only, when set, limits faults to the attempts it accepts (a file, a
	// range); others pass through untouched.
	Only func(f *File, off int64) bool

	n      atomic.Uint64
	counts [faultKinds]atomic.Int64
}

// Fault kinds, indexes of FaultCounts.
const (
	faultEIO = iota
	faultShort
	faultEAGAIN
	faultEINTR
	faultECANCELED
	faultKinds
)

// FaultCounts is what a RateFaults injected so far.
type FaultCounts struct {
	Attempts                             int64 // read attempts seen
	EIO, Short, EAGAIN, EINTR, ECANCELED int64
}

// Transient returns the faults the engine is expected to absorb.
func (c FaultCounts) Transient() int64 { return c.Short + c.EAGAIN + c.EINTR + c.ECANCELED }

// Total returns every fault injected.
func (c FaultCounts) Total() int64 { return c.Transient() + c.EIO }

// Counts returns what r injected so far.
func (r *RateFaults) Counts() FaultCounts {
	return FaultCounts{
		Attempts:  int64(r.n.Load()),
		EIO:       r.counts[faultEIO].Load(),
		Short:     r.counts[faultShort].Load(),
		EAGAIN:    r.counts[faultEAGAIN].Load(),
		EINTR:     r.counts[faultEINTR].Load(),
		ECANCELED: r.counts[faultECANCELED].Load(),
	}
}

// Fault implements FaultInjector.
func (r *RateFaults) Fault(f *File, off int64, n int, res int) int {
	i := r.n.Add(1)
	if r.Only != nil && !r.Only(f, off) {
		return res
	}
	v := mix64(r.Seed ^ i*0x9e3779b97f4a7c15)
	u := float64(v>>11) / (1 << 53) // uniform in [0, 1)
	p := [faultKinds]float64{r.EIO, r.Short, r.EAGAIN, r.EINTR, r.ECANCELED}
	for k, pk := range p {
		if u >= pk {
			u -= pk
			continue
		}
		switch k {
		case faultEIO:
			res = -int(unix.EIO)
		case faultShort:
			if res <= 1 {
				return res // nothing to shorten: not a fault
			}
			res = 1 + int(v%uint64(res-1)) // in [1, res)
		case faultEAGAIN:
			res = -int(unix.EAGAIN)
		case faultEINTR:
			res = -int(unix.EINTR)
		case faultECANCELED:
			res = -int(unix.ECANCELED)
		}
		r.counts[k].Add(1)
		return res
	}
	return res
}

// mix64 is splitmix64's finalizer: a bijective scramble of a counter.
func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}
