package engine

import (
	"fmt"
	"math"
	"os"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// Slot states. A slot moves free → busy (Submit or Resubmit) → held
// (delivered) → free (Release) or busy again (Resubmit).
const (
	slotFree int32 = iota
	slotBusy
	slotHeld
)

// slot is one aligned buffer of a worker and the request it serves.
type slot struct {
	w     *worker
	idx   int32
	buf   []byte // the whole slot; reads land at buf[got:want]
	q     *Queue
	c     Completion
	state atomic.Int32

	aoff int64 // aligned file offset of buf[0]
	head int   // Request.Off - aoff
	n    int   // bytes wanted after clamping to the file size
	want int   // bytes to read into buf (aligned superset, clamped)
	got  int   // bytes read so far
	a    int   // alignment kept by resumed reads (1 when buffered)
	// tries counts the attempts in a row that moved the read no further:
	// transient errors (EINTR, EAGAIN, ECANCELED) and injected short
	// reads. Only progress resets it.
	tries int
	// injected is set by Engine.fault when the FaultInjector changed this
	// attempt's result.
	injected bool
	// inRing is set while an SQE for the slot is in its worker's ring
	// (io_uring worker goroutine only).
	inRing bool
	// lost marks a slot whose read the kernel may still complete into it
	// after its worker gave up on the ring: Release keeps it out of the
	// free list for good.
	lost bool
}

// check validates req against the engine's slots.
func (e *Engine) check(req *Request) error {
	f := req.File
	if f == nil {
		return &Error{Op: "submit", Off: req.Off, Err: fmt.Errorf("%w: nil File", ErrInvalid)}
	}
	if f.e != e {
		return &Error{Op: "submit", Path: f.path, Off: req.Off, Err: fmt.Errorf("%w: file opened by another engine", ErrInvalid)}
	}
	if req.Off < 0 || req.Len < 0 || req.Off > math.MaxInt64-int64(req.Len) {
		return &Error{Op: "submit", Path: f.path, Off: req.Off, Err: fmt.Errorf("%w: offset %d length %d", ErrInvalid, req.Off, req.Len)}
	}
	limit := e.opts.SlotSize
	if f.direct {
		limit -= max(f.offAlign, f.memAlign) // slack for the aligned superset
	}
	if req.Len > limit {
		return &Error{Op: "submit", Path: f.path, Off: req.Off, Err: fmt.Errorf("%w: %d bytes, slot %d, alignment %d", ErrTooLarge, req.Len, e.opts.SlotSize, f.offAlign)}
	}
	if f.closing.Load() {
		return &Error{Op: "submit", Path: f.path, Off: req.Off, Err: os.ErrClosed}
	}
	return nil
}

// setup points s at req: the aligned superset of [Off, Off+Len) clamped
// to the file size.
func (s *slot) setup(q *Queue, req *Request) {
	f := req.File
	s.q = q
	s.c = Completion{Tag: req.Tag, File: f, Off: req.Off, Worker: s.w.id, s: s}
	end := req.Off + int64(req.Len)
	if end > f.size {
		end = f.size
	}
	a := int64(1)
	if f.direct {
		a = int64(max(f.offAlign, f.memAlign))
	}
	s.a = int(a)
	s.got = 0
	s.tries = 0
	if req.Off >= end {
		s.aoff, s.head, s.n, s.want = req.Off, 0, 0, 0
		return
	}
	s.aoff = req.Off - req.Off%a
	aend := end + (a-end%a)%a
	s.head = int(req.Off - s.aoff)
	s.n = int(end - req.Off)
	s.want = int(aend - s.aoff)
}

// advance accounts res bytes read and reports whether the slot is done
// (all wanted bytes, or an error recorded in c.Err). A short read resumes
// where it stopped; one that stopped making progress fails (stalled).
func (s *slot) advance(res int) (done bool) {
	if res < 0 {
		errno := syscall.Errno(-res)
		if transient(errno) && s.tries < maxTransient {
			s.tries++
			return false // read it again
		}
		s.fail(errno)
		return true
	}
	before := s.got
	s.got += res
	if s.got >= s.head+s.n || s.got >= s.want {
		s.finish()
		return true
	}
	// Short read: resume from an aligned point for direct I/O.
	s.got -= s.got % s.a
	if s.got > before {
		s.tries = 0
		return false
	}
	return s.stalled(before, res)
}

// stalled handles an attempt that moved the read no further: 0 bytes, or a
// direct read shorter than the alignment it resumes from. The request was
// clamped to the file's size at Open, so the kernel says the file ends
// before what it held then; every retry would return the same count. It
// fails the request with ErrChanged, except when the FaultInjector made
// the attempt short, which counts as a transient fault.
func (s *slot) stalled(before, res int) (done bool) {
	if s.injected && s.tries < maxTransient {
		s.tries++
		return false
	}
	s.got = before
	f := s.c.File
	s.c.Data = nil
	s.c.DeviceBytes = s.got
	s.c.Err = &Error{Op: "read", Path: f.path, Off: s.c.Off, Err: fmt.Errorf("%w: %d of %d bytes at offset %d, no progress (size at open %d)",
		ErrChanged, res, s.want-before, s.aoff+int64(before), f.size)}
	return true
}

// finish slices Data to the requested bytes that landed.
func (s *slot) finish() {
	end := min(s.got, s.head+s.n)
	if end < s.head {
		end = s.head
	}
	s.c.Data = s.buf[s.head:end:end]
	s.c.DeviceBytes = s.got
	s.c.Err = nil
}

// fail records a read error, naming the alignment for EINVAL on O_DIRECT.
func (s *slot) fail(errno syscall.Errno) {
	f := s.c.File
	var err error = errno
	if errno == unix.EINVAL && f.direct {
		err = fmt.Errorf("%w: offset alignment %d, memory alignment %d: %w", ErrAlignment, f.offAlign, f.memAlign, errno)
	}
	s.failWith(err)
}

// failWith records err as the request's read error.
func (s *slot) failWith(err error) {
	s.c.Data = nil
	s.c.DeviceBytes = s.got
	s.c.Err = &Error{Op: "read", Path: s.c.File.path, Off: s.c.Off, Err: err}
}

// handed marks the read handed to the kernel (Options.Timestamps: the
// worker's stamps): the first time only, so that the rest of a short
// read keeps the start.
func (s *slot) handed() {
	if s.w.stamps && s.c.SubmitNs == 0 {
		s.c.SubmitNs = nanotime()
	}
}

// complete hands the finished slot over: the file's read count drops and
// the slot becomes the receiver's.
func (s *slot) complete() {
	if s.q.e.opts.Timestamps {
		s.c.DoneNs = nanotime()
	}
	s.c.File.readDone()
	s.state.Store(slotHeld)
}

// deliver passes a completed slot to its queue's Handler or channel. It
// runs on the worker goroutine, outside any reap loop, and never blocks:
// the channel holds every slot of the engine.
func (s *slot) deliver() {
	q := s.q
	if q.handler != nil {
		// Marks the one completion Resubmit may act on: this goroutine
		// owns the worker's submission state only during this call.
		s.w.handling.Store(s)
		q.handler(&s.c)
		s.w.handling.Store(nil)
		q.delivered()
		return
	}
	q.ch <- &s.c
	q.delivered()
}

func (s *slot) release() {
	if s == nil {
		panic("engine: Release of a Completion the engine did not deliver")
	}
	if !s.state.CompareAndSwap(slotHeld, slotFree) {
		panic("engine: Completion released twice (slot refcount underflow)")
	}
	q := s.q
	s.q = nil
	s.c.Data = nil
	w := s.w
	if w.e.opts.Scribble {
		for i := range s.buf {
			s.buf[i] = 0xA5
		}
	}
	if !s.lost {
		w.free <- s.idx // capacity holds every slot: never blocks
	}
	q.done()
	e := w.e
	if e.taken.Add(-1) == 0 && e.workersDone.Load() {
		e.unmapAll()
	}
}

func (s *slot) resubmit(req *Request) error {
	if s == nil || s.state.Load() != slotHeld || s.w.handling.Load() != s {
		return ErrResubmit
	}
	e := s.w.e
	if s.w.kind == Pread {
		// Ordered against Close, which closes the pool's channel.
		e.subMu.RLock()
		defer e.subMu.RUnlock()
	}
	if e.closing.Load() {
		return ErrClosed
	}
	if err := e.check(req); err != nil {
		return err
	}
	f := req.File
	f.inflight.Add(1)
	if f.closing.Load() {
		f.readDone()
		return &Error{Op: "submit", Path: f.path, Off: req.Off, Err: os.ErrClosed}
	}
	s.state.Store(slotBusy)
	s.setup(s.q, req)
	s.q.undelivered.Add(1) // before the running Handler call's delivered
	s.w.requeue(s)
	return nil
}
