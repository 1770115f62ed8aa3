package engine

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/pagefeed/pagefeed/pin"
	"github.com/pagefeed/pagefeed/ring"
)

// worker owns one slot region and one backend: an io_uring ring on a locked
// OS thread, or a pool of pread goroutines.
type worker struct {
	e    *Engine
	id   int
	kind Kind

	mem   []byte // slots, then one page for the eventfd counter
	whole []byte // the mapping that holds mem, to unmap
	// lazy is set while mem is mapped but not yet faulted in: the buffer
	// registration pins (and so faults in) it, or populate does.
	lazy  bool
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
	holdP    bool    // held waits (Options.WaitHoldsP, where the kernel can bound them)
	stamps   bool    // Options.Timestamps
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

	enterFaults EnterFaulter // Options.Faults, where it implements it
	enterErrs   int          // io_uring_enter failures in a row
	// broken is set when the worker gave up on its ring: every request
	// it gets from then on fails with it (worker goroutine only). dead
	// says so to other goroutines: wake then signals wakeCh, on which
	// brokenLoop sleeps, instead of the eventfd.
	broken error
	dead   atomic.Bool
	wakeCh chan struct{}

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
	// Slots on 4 KiB pages that io_uring will register are left for the
	// registration to fault in (see mapSlots); populate covers the
	// workers whose registration fails or that never register.
	lazy := k == IOUring && o.FixedBuffers != Off && o.HugePages == Off
	whole, mem, huge, err := mapSlots(size, o.HugePages != Off, !lazy)
	if err != nil {
		return nil, &Error{Op: "mmap slots", Err: err}
	}
	switch {
	case huge:
	case o.HugePages == On:
		unix.Munmap(whole)
		return nil, &Error{Op: "mmap slots", Err: fmt.Errorf("%w: transparent huge pages unavailable (MADV_HUGEPAGE refused, or THP %q)", ErrInvalid, thpMode())}
	case o.HugePages == TryOn:
		e.notice("hugepages", "slot memory on 4 KiB pages: transparent huge pages unavailable (MADV_HUGEPAGE refused, or THP %q)", thpMode())
	}
	e.infoMu.Lock()
	everyWorker(id, &e.info.HugePages, huge)
	e.infoMu.Unlock()
	w := &worker{
		e: e, id: id, kind: k, mem: mem, whole: whole, efd: -1, lazy: lazy, stamps: o.Timestamps,
		slots:    make([]slot, o.SlotsPerWorker),
		free:     make(chan int32, o.SlotsPerWorker),
		setupErr: make(chan error, 1),
		wakeCh:   make(chan struct{}, 1),
	}
	w.enterFaults, _ = o.Faults.(EnterFaulter)
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
	i := w.id % len(sets)
	if err := pin.Apply(sets[i]); err != nil {
		return &Error{Op: "setaffinity", Err: fmt.Errorf("worker %d, CPUSets[%d]: %w", w.id, i, err)}
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

// everyWorker folds worker id's v into an Info flag that holds only when
// it holds for every worker: worker 0 sets it, the others can only clear
// it. The caller holds infoMu.
func everyWorker(id int, flag *bool, v bool) { *flag = v && (id == 0 || *flag) }

// unmap frees the slot memory.
func (w *worker) unmap() {
	if w.whole != nil {
		unix.Munmap(w.whole)
		w.whole, w.mem = nil, nil
	}
}

// hugePage is a transparent huge page (a PMD mapping with 4 KiB pages).
const hugePage = 2 << 20

// mapSlots maps n bytes of zeroed memory for slots, populated unless
// populate is false (which applies only without huge). With huge, the memory starts on a
// huge-page boundary and is advised MADV_HUGEPAGE, so that transparent
// huge pages back it where the kernel can: a slot is then physically
// contiguous, and its read one DMA segment instead of one per 4 KiB page,
// which matters where a read's cost is its DMA segments (virtio disks).
// It returns the mapping to unmap, the memory within it, and whether huge
// pages were advised with THP enabled.
//
// Without huge, populate false leaves the pages to be faulted in later
// (populate): where the slots are registered as fixed buffers, by the
// registration's pinning, as fio's buffers are. On 4 KiB pages a read's
// DMA segments are the runs of physically contiguous pages in its slot,
// and which runs a fault hands out depends on the page allocator's free
// lists at that moment, in either case; faulting at registration only
// does what the tool we compare with does.
func mapSlots(n int, huge, populate bool) (whole, mem []byte, advised bool, err error) {
	const prot, flags = unix.PROT_READ | unix.PROT_WRITE, unix.MAP_PRIVATE | unix.MAP_ANONYMOUS
	if !huge {
		f := flags
		if populate {
			f |= mapPopulate
		}
		mem, err = unix.Mmap(-1, 0, n, prot, f)
		return mem, mem, false, err
	}
	whole, err = unix.Mmap(-1, 0, n+hugePage, prot, flags)
	if err != nil {
		return nil, nil, false, err
	}
	off := int((hugePage - uintptr(unsafe.Pointer(unsafe.SliceData(whole)))%hugePage) % hugePage)
	mem = whole[off : off+n : off+n]
	advised = unix.Madvise(mem, madvHugepage) == nil && thpMode() != "never"
	populateMem(mem) // as MAP_POPULATE does, so that reads never fault
	return whole, mem, advised, nil
}

// populate faults in slot memory mapped lazily whose registration did not
// happen (FixedBuffers refused or a pread worker), so that reads never
// fault.
func (w *worker) populate() {
	if w.lazy {
		populateMem(w.mem)
		w.lazy = false
	}
}

// populateMem faults in every page of mem for writing.
func populateMem(mem []byte) {
	if unix.Madvise(mem, madvPopulateWrite) != nil { // before Linux 5.14
		for i := 0; i < len(mem); i += slotAlign {
			mem[i] = 0
		}
	}
}

// thpMode is the kernel's transparent huge page mode (always, madvise or
// never), "unavailable" when the kernel has none.
func thpMode() string {
	b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil {
		return "unavailable"
	}
	s := string(b)
	if i := strings.IndexByte(s, '['); i >= 0 {
		if j := strings.IndexByte(s[i:], ']'); j > 0 {
			return s[i+1 : i+j]
		}
	}
	return strings.TrimSpace(s)
}

// post hands a busy slot to the worker from any goroutine. It returns
// true where the worker may be asleep: the caller must then wake it
// before it blocks or returns (Submit wakes each worker once a call).
func (w *worker) post(idx int32) bool {
	if w.kind == Pread {
		w.jobs <- idx // capacity holds every slot: never blocks
		return false
	}
	w.mu.Lock()
	w.mbox = append(w.mbox, idx) // capacity holds every slot: never grows
	w.mboxN.Add(1)
	w.mu.Unlock()
	return w.waiting.Swap(0) == 1
}

var one = [8]byte{1}

// wake interrupts the worker's wait in io_uring_enter through its eventfd
// (or, once it gave up on its ring, its wait on wakeCh).
func (w *worker) wake() {
	if w.dead.Load() {
		select {
		case w.wakeCh <- struct{}{}:
		default: // a wakeup is pending already
		}
		return
	}
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
	enters, waits, reaped, inKernel, queued, held, expired atomic.Uint64
	waitNs, deliverNs                                      atomic.Int64
}
