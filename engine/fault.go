package engine

import (
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
