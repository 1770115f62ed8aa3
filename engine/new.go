package engine

import (
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// epoch is the origin of Completion.SubmitNs and DoneNs.
var epoch = time.Now()

// nanotime returns monotonic nanoseconds since epoch without allocating.
func nanotime() int64 { return int64(time.Since(epoch)) }

// Now returns the clock of Completion.SubmitNs and DoneNs: monotonic
// nanoseconds since a fixed point in this process, so that a handler can
// time a completion against them.
func Now() int64 { return nanotime() }

// New starts an engine's workers. With Kind Auto it sets up io_uring and
// falls back to the pread pool when the kernel refuses io_uring (ENOSYS,
// EPERM, ENOMEM); the fallback is logged and listed in Info.Notices.
func New(opts Options) (*Engine, error) {
	o, err := opts.fill()
	if err != nil {
		return nil, err
	}
	e := &Engine{
		opts:     o,
		noticed:  make(map[string]bool),
		closedCh: make(chan struct{}),
		doneCh:   make(chan struct{}),
		files:    make(map[*File]struct{}),
	}
	if o.RegisterFiles && o.Kind != Pread {
		e.regFree = make([]int32, maxFixedFiles)
		for i := range e.regFree {
			e.regFree[i] = int32(maxFixedFiles - 1 - i)
		}
	}
	if o.FixedBuffers != Off && o.Kind != Pread {
		raiseMemlock()
	}
	if o.Kind != Pread {
		err = e.startWorkers(IOUring)
		if err == nil {
			return e, nil
		}
		if o.Kind == IOUring || !fallbackErr(err) {
			return nil, err
		}
		e.notice("pread", "io_uring unavailable (%v): using the pread worker pool", err)
	}
	if err := e.startWorkers(Pread); err != nil {
		return nil, err
	}
	return e, nil
}

// fallbackErr reports whether an io_uring setup error means "no io_uring
// here" (seccomp, io_uring_disabled, container limits) rather than a bug.
func fallbackErr(err error) bool {
	return errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOMEM)
}

// raiseMemlock lifts RLIMIT_MEMLOCK's soft limit to the hard limit so
// registered buffers can be pinned; failure only means fewer fixed buffers.
func raiseMemlock() {
	var rl unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_MEMLOCK, &rl) == nil && rl.Cur < rl.Max {
		rl.Cur = rl.Max
		_ = unix.Setrlimit(unix.RLIMIT_MEMLOCK, &rl)
	}
}

// startWorkers creates every worker of kind k, waiting for each to set up.
// On failure it stops the ones already running and frees their memory.
func (e *Engine) startWorkers(k Kind) error {
	o := e.opts
	e.workers = make([]*worker, 0, o.Workers)
	var err error
	var failed *worker // the worker whose setup failed: stopped already
	for i := 0; i < o.Workers; i++ {
		var w *worker
		w, err = newWorker(e, i, k)
		if err != nil {
			break
		}
		e.workers = append(e.workers, w)
		if err = w.start(); err != nil {
			e.workers = e.workers[:len(e.workers)-1]
			failed = w
			break
		}
	}
	if err != nil {
		// Stop the workers running before waiting: e.wg counts them too.
		for _, w := range e.workers {
			w.stop()
		}
		e.wg.Wait()
		if failed != nil {
			e.workers = append(e.workers, failed)
		}
		for _, w := range e.workers {
			w.closeEfd()
			w.unmap()
		}
		e.workers = nil
		return err
	}
	e.infoMu.Lock()
	e.info.Kind = k
	e.infoMu.Unlock()
	return nil
}

// notice reports a fallback once per key through Logf and Info.Notices.
func (e *Engine) notice(key, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	e.infoMu.Lock()
	if e.noticed[key] {
		e.infoMu.Unlock()
		return
	}
	e.noticed[key] = true
	e.info.Notices = append(e.info.Notices, msg)
	e.infoMu.Unlock()
	e.opts.Logf("%s", msg)
}

// Close stops the workers after every read in flight completes, closes the
// files still open and waits for every goroutine. Completions not yet
// released stay valid: the slot memory is unmapped by the last Release.
// Calls after the first return ErrClosed. Handlers still resubmitting get
// ErrClosed from Resubmit and must Release. Close must not be called from a
// Handler: it waits for the worker running it.
func (e *Engine) Close() error {
	err := ErrClosed
	e.closeOnce.Do(func() {
		err = nil
		e.closing.Store(true)
		close(e.closedCh)
		// Every Submit that got past its closing check has posted by now.
		e.subMu.Lock()
		e.subMu.Unlock() // an empty critical section: the barrier is the point
		for _, w := range e.workers {
			w.stop()
		}
		e.wg.Wait()
		for _, w := range e.workers {
			w.closeEfd()
		}
		e.filesMu.Lock()
		for f := range e.files {
			if cerr := unix.Close(f.fd); cerr != nil && err == nil {
				err = &Error{Op: "close", Path: f.path, Err: cerr}
			}
			delete(e.files, f)
		}
		e.filesMu.Unlock()
		e.workersDone.Store(true)
		if e.taken.Load() == 0 {
			e.unmapAll()
		}
		close(e.doneCh)
	})
	return err
}

// unmapAll frees every worker's slot memory, once, after the workers exited
// and every slot was released.
func (e *Engine) unmapAll() {
	e.unmapOnce.Do(func() {
		for _, w := range e.workers {
			w.unmap()
		}
	})
}
