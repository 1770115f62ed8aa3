package engine

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// The pread worker: a pool of min(QueueDepth, slots) goroutines per worker
// taking busy slots from a channel, each doing pread(2) until its slot is
// full, at EOF or failed, then delivering on its own goroutine, holding the
// worker's delivery lock so that a worker's Handler calls never overlap.
// Completions are unordered across the pool, as with io_uring. Resubmit sends the slot back to the channel,
// which holds every slot and so never blocks.

func (w *worker) startPread() error {
	o := w.e.opts
	w.jobs = make(chan int32, len(w.slots))
	n := min(o.QueueDepth, len(w.slots))
	setup := make(chan error, n)
	w.e.wg.Add(n)
	for i := 0; i < n; i++ {
		go w.runPread(setup)
	}
	var first error
	for i := 0; i < n; i++ {
		if err := <-setup; err != nil && first == nil {
			first = err
		}
	}
	if first != nil {
		w.stop()
	}
	return first
}

func (w *worker) runPread(setup chan<- error) {
	defer w.e.wg.Done()
	if len(w.e.opts.CPUSets) > 0 {
		// Pinned threads die with their goroutine (no UnlockOSThread).
		if err := w.lockAndPin(); err != nil {
			setup <- err
			return
		}
	}
	setup <- nil
	for idx := range w.jobs {
		s := &w.slots[idx]
		w.preadSlot(s)
		s.complete()
		// One delivery at a time per worker, as on an io_uring worker:
		// Handlers may keep per-Completion.Worker state unlocked.
		w.hmu.Lock()
		s.deliver() // s belongs to its receiver from here on
		w.hmu.Unlock()
	}
}

// preadSlot reads s's remaining bytes, resuming short reads.
func (w *worker) preadSlot(s *slot) {
	if s.want == 0 {
		s.finish()
		return
	}
	fd := s.c.File.fd
	s.handed()
	for {
		n, err := unix.Pread(fd, s.buf[s.got:s.want], s.aoff+int64(s.got))
		res := n
		if err != nil {
			errno, ok := err.(syscall.Errno)
			if !ok {
				errno = syscall.EIO
			}
			res = -int(errno)
		}
		if s.advance(w.e.fault(s, res)) {
			return
		}
	}
}
