package engine

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/pagefeed/pagefeed/ring"
)

// worker owns one slot region and one backend: an io_uring ring on a locked
// OS thread, or a pool of pread goroutines.
type worker struct {
	e    *Engine
	id   int
	kind Kind

	mem   []byte // mmap'd: slots, then one page for the eventfd counter
	slots []slot
	free  chan int32 // free slot indices; capacity len(slots)

	stopping atomic.Bool
	setupErr chan error

	// io_uring mailbox: Submit appends under mu, the worker swaps it out.
	mu      sync.Mutex
	mbox    []int32
	spare   []int32
	mboxN   atomic.Int32
	waiting atomic.Int32 // 1 while the worker may sleep in io_uring_enter
	efd     int          // eventfd that wakes the worker; -1 if none

	// Worker-goroutine state (io_uring).
	r        *ring.Ring
	fixed    bool
	regFiles []*File // registered-file table of this ring, by File.regIdx
	fdBuf    [1]int32
	pq       []int32 // FIFO of slots waiting for an SQE (ring buffer)
	pqHead   int
	pqLen    int
	inKernel int
	efdArmed bool
	cqes     []ring.CQE
	done     []*slot

	// pread: slot indices for the goroutine pool, and the lock that makes
	// the pool's deliveries one at a time.
	jobs chan int32
	hmu  sync.Mutex

	loops atomic.Uint64 // io_uring loop iterations, for the no-spin test
	st    workerStats   // for Engine.Stats
	// handling is the slot whose Handler call is running, the only one
	// Resubmit accepts.
	handling atomic.Pointer[slot]
}

const efdUserData = ^uint64(0)

// Hooks for io_uring setup and buffer registration; tests replace them to
// force the fallbacks.
var (
	newRing         = ring.NewLadder
	registerBuffers = (*ring.Ring).RegisterBuffers
)

func newWorker(e *Engine, id int, k Kind) (*worker, error) {
	o := e.opts
	size := o.SlotsPerWorker*o.SlotSize + slotAlign
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
	if err != nil {
		return nil, &Error{Op: "mmap slots", Err: err}
	}
	w := &worker{
		e: e, id: id, kind: k, mem: mem, efd: -1,
		slots:    make([]slot, o.SlotsPerWorker),
		free:     make(chan int32, o.SlotsPerWorker),
		setupErr: make(chan error, 1),
	}
	for i := range w.slots {
		s := &w.slots[i]
		s.w, s.idx = w, int32(i)
		s.buf = mem[i*o.SlotSize : (i+1)*o.SlotSize : (i+1)*o.SlotSize]
		s.c.s = s
		w.free <- int32(i)
	}
	return w, nil
}

// start launches the worker's goroutines and waits for their setup.
func (w *worker) start() error {
	if w.kind == Pread {
		return w.startPread()
	}
	w.e.wg.Add(1)
	go w.runUring()
	return <-w.setupErr
}

// lockAndPin locks the goroutine to its thread and applies the worker's
// CPU set, if any.
func (w *worker) lockAndPin() error {
	runtime.LockOSThread()
	sets := w.e.opts.CPUSets
	if len(sets) == 0 {
		return nil
	}
	var cs unix.CPUSet
	for _, c := range sets[w.id%len(sets)] {
		cs.Set(c)
	}
	if err := unix.SchedSetaffinity(0, &cs); err != nil {
		return &Error{Op: "setaffinity", Err: fmt.Errorf("worker %d cpus %v: %w", w.id, sets[w.id%len(sets)], err)}
	}
	return nil
}

// stop tells the worker to exit once its reads are done.
func (w *worker) stop() {
	w.stopping.Store(true)
	if w.kind == Pread {
		close(w.jobs)
		return
	}
	w.wake()
}

// closeEfd closes the wakeup eventfd once the worker's goroutine has exited
// and nothing can wake it any more.
func (w *worker) closeEfd() {
	if w.efd >= 0 {
		unix.Close(w.efd)
		w.efd = -1
	}
}

// unmap frees the slot memory.
func (w *worker) unmap() {
	if w.mem != nil {
		unix.Munmap(w.mem)
		w.mem = nil
	}
}

// post hands a busy slot to the worker from any goroutine.
func (w *worker) post(idx int32) {
	if w.kind == Pread {
		w.jobs <- idx // capacity holds every slot: never blocks
		return
	}
	w.mu.Lock()
	w.mbox = append(w.mbox, idx) // capacity holds every slot: never grows
	w.mboxN.Add(1)
	w.mu.Unlock()
	if w.waiting.Swap(0) == 1 {
		w.wake()
	}
}

var one = [8]byte{1}

// wake interrupts the worker's wait in io_uring_enter through its eventfd.
func (w *worker) wake() {
	if w.efd >= 0 {
		for {
			if _, err := unix.Write(w.efd, one[:]); err != unix.EINTR {
				return
			}
		}
	}
}

// requeue takes a Resubmit on the worker's own goroutine.
func (w *worker) requeue(s *slot) {
	if w.kind == Pread {
		w.jobs <- s.idx // capacity holds every slot: never blocks
		return
	}
	w.pqPush(s.idx)
}

func (w *worker) pqPush(idx int32) {
	w.pq[(w.pqHead+w.pqLen)%len(w.pq)] = idx
	w.pqLen++
}

func (w *worker) pqPushFront(idx int32) {
	w.pqHead = (w.pqHead - 1 + len(w.pq)) % len(w.pq)
	w.pq[w.pqHead] = idx
	w.pqLen++
}

func (w *worker) pqPop() int32 {
	idx := w.pq[w.pqHead]
	w.pqHead = (w.pqHead + 1) % len(w.pq)
	w.pqLen--
	return idx
}

// workerStats are an io_uring worker's counters behind Engine.Stats,
// written by the worker goroutine only.
type workerStats struct {
	enters, waits, reaped, inKernel, queued atomic.Uint64
	waitNs, deliverNs                       atomic.Int64
}
