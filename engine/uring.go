package engine

import (
	"errors"
	"fmt"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/pagefeed/pagefeed/ring"
)

// The io_uring worker.
//
// Wakeup: each worker keeps one READ of an eventfd in its ring. The worker
// sets waiting=1 before io_uring_enter; Submit from another goroutine
// appends to the mailbox and, if it wins the swap of waiting to 0, writes
// the eventfd, which completes that READ and ends the wait at once. An idle
// worker thus sleeps in the kernel (no spin, no timer) and a busy one pays
// no syscall per submission. The eventfd takes one CQ entry; in-flight reads
// are capped at QueueDepth ≤ SQ entries, so in-flight ≤ CQ entries (2×SQ).

func (w *worker) runUring() {
	defer w.e.wg.Done()
	// The goroutine never unlocks: a thread with a worker's affinity dies
	// with it rather than return to the runtime's pool.
	err := w.lockAndPin()
	if err == nil {
		err = w.setupRing()
	}
	if err != nil {
		w.teardown()
		w.setupErr <- err
		return
	}
	w.setupErr <- nil
	w.loop()
	w.teardown()
}

// teardown closes the ring. The eventfd outlives it: stop may still write
// to it, so it is closed by unmap once every worker goroutine has exited.
func (w *worker) teardown() {
	if w.r != nil {
		w.r.Close()
		w.r = nil
	}
}

func (w *worker) setupRing() error {
	e, o := w.e, w.e.opts
	r, err := newRing(uint32(o.QueueDepth), o.RingFlags)
	if err != nil {
		return &Error{Op: "io_uring setup", Err: err}
	}
	w.r = r
	if int(r.SQEntries()) < o.QueueDepth || int(r.CQEntries()) < o.QueueDepth+1 {
		return &Error{Op: "io_uring setup", Err: fmt.Errorf("ring of %d/%d entries for depth %d", r.SQEntries(), r.CQEntries(), o.QueueDepth)}
	}
	efd, err := newEventfd()
	if err != nil {
		return &Error{Op: "eventfd", Err: err}
	}
	w.efd = efd

	fixed := false
	if o.FixedBuffers != Off {
		iovs := make([]unix.Iovec, len(w.slots))
		for i := range w.slots {
			iovs[i].Base = unsafe.SliceData(w.slots[i].buf)
			iovs[i].SetLen(len(w.slots[i].buf))
		}
		if err := registerBuffers(r, iovs); err != nil {
			if o.FixedBuffers == On {
				return &Error{Op: "register buffers", Err: err}
			}
			e.notice("fixedbuf", "registering %d slot buffers of %d bytes failed (%v; RLIMIT_MEMLOCK?): plain READ instead of READ_FIXED",
				len(w.slots), o.SlotSize, err)
		} else {
			fixed = true
			if w.lazy { // registration pinned the slots; the eventfd's page is left
				populateMem(w.mem[len(w.mem)-slotAlign:])
				w.lazy = false
			}
		}
	}
	w.fixed = fixed
	w.populate()
	regFiles := false
	if o.RegisterFiles {
		fds := make([]int32, maxFixedFiles)
		for i := range fds {
			fds[i] = -1
		}
		if err := r.RegisterFiles(fds); err != nil {
			e.notice("regfiles", "registering a file table failed (%v): plain file descriptors", err)
		} else {
			w.regFiles = make([]*File, maxFixedFiles)
			regFiles = true
		}
	}
	w.holdP = o.WaitHoldsP && r.Features()&ring.FeatExtArg != 0
	n := len(w.slots)
	w.pq = make([]int32, n)
	w.mbox = make([]int32, 0, n)
	w.spare = make([]int32, 0, n)
	w.cqes = make([]ring.CQE, r.CQEntries())
	w.done = make([]*slot, 0, n)

	e.infoMu.Lock()
	if w.id == 0 {
		e.info.SetupFlags = ring.FlagsString(r.Flags())
	}
	everyWorker(w.id, &e.info.FixedBuffers, fixed)
	everyWorker(w.id, &e.info.RegisterFiles, regFiles)
	everyWorker(w.id, &e.info.WaitHoldsP, w.holdP)
	e.infoMu.Unlock()
	return nil
}

// loop is the worker's batch cycle: take new requests, prepare up to a
// chunk of SQEs (BatchSubmit, or the chunker's choice when it is 0), one
// io_uring_enter (submit + wait for ≥1, or no wait while more are
// queued), reap the ready CQEs (up to BatchCompleteMax) and advance once,
// submit reads for the room the reaped ones left (non-waiting enters of up
// to a chunk, only when requests are queued), then deliver outside the
// reap loop.
func (w *worker) loop() {
	r := w.r
	depth := w.e.opts.QueueDepth
	batch := w.e.opts.BatchSubmit
	adaptive := batch == 0
	ch := newChunker(depth)
	if adaptive {
		batch = ch.n
	}
	waitFor := w.e.opts.BatchComplete
	cqes := w.cqes[:min(len(w.cqes), w.e.opts.BatchCompleteMax)]
	for {
		if w.broken != nil {
			w.brokenLoop()
			return
		}
		w.loops.Add(1)
		if w.mboxN.Load() > 0 {
			w.takeMailbox()
		}
		stopping := w.stopping.Load()
		if !w.efdArmed && !stopping {
			if sqe := r.GetSQE(); sqe != nil {
				sqe.PrepRead(int32(w.efd), w.mem[len(w.mem)-slotAlign:len(w.mem)-slotAlign+8], 0, efdUserData)
				w.efdArmed = true
			}
		}
		w.fill(depth, batch)
		// A backlog goes out before anything is reaped, a chunk per
		// enter, until the ring is full or nothing is queued (as fio
		// issues what it reaped before it reaps again): reaping and
		// delivering between chunks would put the delivered slots'
		// next reads behind the backlog, so that a standing queue
		// outside the ring takes depth from the device.
		// (Unlike pushOut, it leaves the last chunk prepared for the
		// waiting enter below: one system call fewer a pass.)
		for w.pqLen > 0 && w.inKernel < depth && len(w.done) == 0 && w.broken == nil {
			w.st.enters.Add(1)
			if err := w.enter(0); enterFailed(err) {
				w.enterError(err)
				break
			}
			if w.fill(depth, batch) == 0 {
				break
			}
		}
		if len(w.done) > 0 || w.broken != nil {
			// (Broken: the next pass serves what is left as brokenLoop.)
			w.deliver(depth, batch)
			continue
		}
		if stopping && w.inKernel == 0 && w.pqLen == 0 && w.mboxN.Load() == 0 {
			return
		}
		err := w.enterAndWait(waitFor, depth, stopping, &ch)
		if enterFailed(err) {
			w.enterError(err)
			if w.broken != nil {
				// Reaping now could complete a slot abandon just failed.
				w.deliver(depth, batch)
				continue
			}
		} else if err == nil {
			w.enterErrs = 0
		}
		n := r.Reap(cqes)
		if adaptive {
			batch = ch.reaped(n)
		}
		w.takeCQEs(cqes[:n])
		// Refill the ring before running handlers: they may take a while
		// (decoding), and the device should not idle meanwhile. Chunks of
		// batch reach the device sooner than one long plug.
		if len(w.done) > 0 {
			w.pushOut(depth, batch)
		}
		w.deliver(depth, batch)
		if w.enterErrs > 0 && w.broken == nil {
			// Give whatever failed (memory, a dying device) time to pass
			// before entering again: 2 ms doubling, 254 ms in all before
			// the worker gives up.
			time.Sleep(time.Millisecond << w.enterErrs)
		}
	}
}

// enterAndWait makes the cycle's io_uring_enter: it submits what fill
// prepared and waits for at least one completion (waitFor, or what is in
// the kernel), or does not wait while requests are queued with room in
// the ring, mail is waiting or the worker is stopping with nothing in
// flight. A wait is held first (Options.WaitHoldsP) where the worker has
// reads in the kernel. Waits feed the chunker and the statistics.
func (w *worker) enterAndWait(waitFor, depth int, stopping bool, ch *chunker) error {
	minComplete := uint32(max(1, min(waitFor, w.inKernel)))
	w.waiting.Store(1)
	if w.mboxN.Load() > 0 || (stopping && w.inKernel == 0) || (w.pqLen > 0 && w.inKernel < depth) {
		minComplete = 0
		w.waiting.Store(0)
	}
	var t0 int64
	if minComplete > 0 {
		t0 = nanotime()
	}
	var err error
	if minComplete > 0 && w.holdP && w.inKernel > 0 {
		// Held first; if it ran out with nothing to reap, as usual.
		if err = w.enterHeld(minComplete); err == nil && w.r.Ready() == 0 {
			w.st.expired.Add(1)
			err = w.enter(minComplete)
		}
	} else {
		err = w.enter(minComplete)
	}
	w.waiting.Store(0)
	w.st.enters.Add(1)
	if minComplete > 0 {
		d := nanotime() - t0
		if w.inKernel > 0 {
			// Asleep on reads: the device's time. A worker with none in
			// the kernel sleeps for want of requests (reads the page
			// cache served completed within their enter), which says
			// nothing of the device and must not shrink the chunk.
			ch.waited(d)
		}
		w.st.waitNs.Add(d)
		w.st.waits.Add(1)
		w.st.inKernel.Add(uint64(w.inKernel))
		w.st.queued.Add(uint64(w.pqLen))
	}
	return err
}

// takeCQEs takes the reaped CQEs: the eventfd's re-arms its read, a slot
// whose read is done moves to w.done, and a short read queues its rest
// first.
func (w *worker) takeCQEs(cqes []ring.CQE) {
	for _, c := range cqes {
		if c.UserData == efdUserData {
			w.efdArmed = false
			continue
		}
		s := &w.slots[c.UserData]
		s.inRing = false
		w.inKernel--
		w.st.reaped.Add(1)
		if s.advance(w.e.fault(s, int(c.Res))) {
			s.complete()
			w.done = append(w.done, s)
		} else {
			w.pqPushFront(s.idx) // short read: the rest goes first
		}
	}
}

// fill prepares SQEs for queued requests, at most batch of them and while
// fewer than depth reads are in the kernel, and returns how many. Requests
// with nothing to read complete at once onto w.done.
func (w *worker) fill(depth, batch int) int {
	prepped := 0
	for w.pqLen > 0 && w.inKernel < depth && prepped < batch {
		s := &w.slots[w.pq[w.pqHead]]
		if s.want == 0 { // nothing to read: empty request or past EOF
			w.pqPop()
			s.finish()
			s.complete()
			w.done = append(w.done, s)
			continue
		}
		sqe := w.r.GetSQE()
		if sqe == nil {
			break
		}
		w.pqPop()
		w.prep(sqe, s)
		prepped++
	}
	return prepped
}

// pushOut submits queued reads, a chunk per non-waiting enter, while the
// ring has room; it reports false when an enter failed (enterError took
// it). The loop's refill before handlers and deliver's submissions
// between handlers share it.
func (w *worker) pushOut(depth, batch int) bool {
	for w.pqLen > 0 && w.inKernel < depth && w.broken == nil {
		if w.fill(depth, batch) == 0 {
			return true
		}
		w.st.enters.Add(1)
		if err := w.enter(0); enterFailed(err) {
			w.enterError(err)
			return false
		}
	}
	return true
}

// deliver runs handlers and fills queues for the slots reaped this round,
// submitting reads between handlers into a ring of depth with chunks of
// batch (depth 0: none, as a broken worker has no ring).
// A read a handler resubmits goes into the ring before the next handler
// runs (a chunk per enter, while the ring has room), as fio issues a read
// for each completion it takes in: waiting for the rest of the round's
// handlers would keep it out of the device for all of them.
func (w *worker) deliver(depth, batch int) {
	if len(w.done) == 0 {
		return
	}
	t0 := nanotime()
	flush := depth > 0
	// fill may append to w.done (reads with nothing to read complete at
	// once): those stay for the next round, after the n taken here.
	n := len(w.done)
	for i := 0; i < n; i++ {
		s := w.done[i]
		w.done[i] = nil
		s.deliver()
		if flush && i+1 < n {
			flush = w.pushOut(depth, batch)
		}
	}
	w.done = append(w.done[:0], w.done[n:]...)
	w.st.deliverNs.Add(nanotime() - t0)
}

// enter submits the prepared SQEs and waits for minComplete completions,
// unless the fault injector fails the call first.
func (w *worker) enter(minComplete uint32) error {
	if w.enterFaults != nil {
		if errno := w.enterFaults.FaultEnter(w.id); errno != 0 {
			return &ring.Error{Op: "enter", Err: errno}
		}
	}
	_, err := w.r.SubmitAndWait(minComplete)
	return err
}

// enterHeld is enter as a held wait (Options.WaitHoldsP) of at most
// HeldWait.
func (w *worker) enterHeld(minComplete uint32) error {
	if w.enterFaults != nil {
		if errno := w.enterFaults.FaultEnter(w.id); errno != 0 {
			return &ring.Error{Op: "enter", Err: errno}
		}
	}
	w.st.held.Add(1)
	_, err := w.r.SubmitAndWaitHeld(minComplete, int64(HeldWait))
	return err
}

// enterFailed reports whether io_uring_enter's err is one retrying will
// not fix: EAGAIN and EBUSY only ask the caller to reap first.
func enterFailed(err error) bool {
	return err != nil && !errors.Is(err, unix.EAGAIN) && !errors.Is(err, unix.EBUSY)
}

// enterError handles an io_uring_enter that failed with err, which
// retrying will not fix: the SQEs it did not submit are taken back from
// the ring and their requests fail with err, as do the requests still
// queued. After maxEnterErrors failures in a row the worker gives up on
// its ring (abandon); until then the loop backs off and enters again to
// reap the reads already in the kernel.
func (w *worker) enterError(err error) {
	w.e.notice("enter", "worker %d: io_uring_enter: %v", w.id, err)
	w.r.Withdraw(func(userData uint64) {
		if userData == efdUserData {
			w.efdArmed = false
			return
		}
		s := &w.slots[userData]
		s.inRing = false
		w.inKernel--
		w.failSlot(s, err)
	})
	w.failQueued(err)
	w.enterErrs++
	if w.enterErrs >= maxEnterErrors {
		w.abandon(err)
	}
}

// abandon gives up on the ring after io_uring_enter kept failing. The
// reads still in the kernel fail with the error: their completions may
// never become visible (a DEFER_TASKRUN ring posts them only inside
// io_uring_enter), and Close waits for every read. Their slots are marked
// lost, never to be reused, since the kernel may still write into them.
// From here on brokenLoop fails every request at once.
func (w *worker) abandon(err error) {
	w.broken = fmt.Errorf("worker %d stopped reading after %d failed io_uring_enter calls in a row: %w", w.id, w.enterErrs, err)
	w.dead.Store(true) // wake signals wakeCh from here on
	for i := range w.slots {
		if s := &w.slots[i]; s.inRing {
			s.inRing = false
			s.lost = true
			w.inKernel--
			w.failSlot(s, w.broken)
		}
	}
	w.e.notice("broken", "%v: its requests fail", w.broken)
}

// brokenLoop serves a worker that gave up on its ring: every request
// fails at once with w.broken. Between requests it sleeps on wakeCh,
// which post and stop signal once w.dead is set, so Submit never waits on
// a worker that cannot read and Close returns.
func (w *worker) brokenLoop() {
	for {
		w.loops.Add(1)
		if w.mboxN.Load() > 0 {
			w.takeMailbox()
		}
		w.failQueued(w.broken)
		w.deliver(0, 0)
		if w.pqLen > 0 { // a Handler resubmitted
			continue
		}
		w.waiting.Store(1)
		if w.mboxN.Load() == 0 {
			if w.stopping.Load() {
				return
			}
			<-w.wakeCh
		}
		w.waiting.Store(0)
	}
}

// failQueued completes every request still waiting for an SQE with err.
func (w *worker) failQueued(err error) {
	for w.pqLen > 0 {
		w.failSlot(&w.slots[w.pqPop()], err)
	}
}

// failSlot completes s's request with err and queues it for delivery.
func (w *worker) failSlot(s *slot, err error) {
	s.failWith(err)
	s.complete()
	w.done = append(w.done, s)
}

func (w *worker) takeMailbox() {
	w.mu.Lock()
	got := w.mbox
	w.mbox = w.spare[:0]
	w.spare = got
	w.mboxN.Store(0)
	w.mu.Unlock()
	for _, idx := range got {
		w.pqPush(idx)
	}
}

// prep fills sqe with the read of s's remaining bytes.
func (w *worker) prep(sqe *ring.SQE, s *slot) {
	f := s.c.File
	buf := s.buf[s.got:s.want]
	off := uint64(s.aoff + int64(s.got))
	fd := int32(f.fd)
	var flags uint8
	if w.regFiles != nil && f.regIdx >= 0 {
		if w.regFiles[f.regIdx] != f {
			w.fdBuf[0] = int32(f.fd)
			if w.r.UpdateFiles(uint32(f.regIdx), w.fdBuf[:]) == nil {
				w.regFiles[f.regIdx] = f
			}
		}
		if w.regFiles[f.regIdx] == f {
			fd, flags = f.regIdx, ring.SQEFixedFile
		}
	}
	if w.fixed {
		sqe.PrepReadFixed(fd, buf, off, uint16(s.idx), uint64(s.idx))
	} else {
		sqe.PrepRead(fd, buf, off, uint64(s.idx))
	}
	sqe.Flags |= flags
	s.inRing = true
	s.handed()
	w.inKernel++
}
