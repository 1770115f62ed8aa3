package engine

import (
	"sync"
	"sync/atomic"
	"time"
)

// Kind selects the I/O backend.
type Kind int

const (
	Auto    Kind = iota // io_uring, falling back to Pread when setup is refused
	IOUring             // io_uring only; New fails if it cannot be set up
	Pread               // pread(2) worker pool
)

// Tristate is an option that may be forced on, forced off, or left to probing.
type Tristate int

const (
	TryOn Tristate = iota // use it when possible, fall back and say so
	On                    // require it; fail otherwise
	Off                   // never use it
)

// Options configures an Engine. Zero fields take the defaults of fill.
type Options struct {
	Kind           Kind    // default Auto
	Workers        int     // worker goroutines, each with its own ring; default 1
	CPUSets        [][]int // optional: worker i pins to CPUSets[i%len(CPUSets)]
	QueueDepth     int     // reads in flight per worker; default 64, at most 4096
	SlotSize       int     // bytes per slot; default 1 MiB (rounded up to 4 KiB, the slot alignment)
	SlotsPerWorker int     // default QueueDepth
	// BatchSubmit is the most SQEs one io_uring_enter submits; a worker
	// with more queued enters again at once (fio's iodepth_batch_submit).
	// Zero, the default, lets each worker choose its chunk as it runs:
	// at most two reads per enter while the worker has time to spare,
	// waiting on the device (reads reach the device as soon as they are
	// queued, unplugged, as with fio's default of 1), and a chunk that
	// doubles while the worker is saturated, finding its completions
	// ready whenever it would wait, and halves once it waits again (each
	// enter's reads then share one syscall and one block-layer plug). The
	// chunk follows the worker's measured share of time asleep in the
	// kernel, not constants tuned to one device. A positive value is a
	// fixed chunk (at most QueueDepth).
	BatchSubmit int
	// BatchCompleteMax is the most completions a worker reaps and
	// delivers in one round (fio's iodepth_batch_complete_max); default
	// every completion ready.
	BatchCompleteMax int
	// BatchComplete is how many completions one io_uring_enter waits for,
	// capped at the reads in flight (fio's iodepth_batch_complete_min);
	// default 1. More saves wakeups and CPU; a new submission may then
	// wait for that many completions before its worker picks it up.
	BatchComplete int
	// RingFlags is the io_uring setup-flag ladder, tried first to last,
	// dropping to the next rung on EINVAL; default ring.Ladder (fio's:
	// SINGLE_ISSUER|DEFER_TASKRUN, COOP_TASKRUN, none). Info.SetupFlags
	// says which took. SQPOLL and IOPOLL are refused (New fails with
	// ring.ErrUnsupportedFlags): the workers cannot drive them.
	RingFlags     []uint32
	Direct        Tristate                         // O_DIRECT; default TryOn (buffered fallback per file, said once)
	FixedBuffers  Tristate                         // register slots as fixed buffers (READ_FIXED); default TryOn
	RegisterFiles bool                             // register file descriptors with the ring
	Timestamps    bool                             // fill Completion.SubmitNs and DoneNs (kernel hand-off and completion)
	Logf          func(format string, args ...any) // notices; default: stderr, each once
	// Faults, when set, rewrites every read attempt's result before the
	// engine acts on it: fault injection for tests and soak runs (see
	// FaultInjector). Leave nil in production.
	Faults FaultInjector
	// Scribble fills a slot with 0xA5 bytes when it is released, so data
	// still used after Release reads garbage at once instead of whatever
	// a later read happens to put there: for tests. Leave off in
	// production (it writes every slot once per read).
	Scribble bool
	// HugePages backs slot memory with transparent huge pages
	// (MADV_HUGEPAGE on a 2 MiB-aligned region), so that a read lands in
	// physically contiguous memory: one DMA segment, not one per 4 KiB
	// page. Default TryOn (4 KiB pages, said once, where THP is off).
	HugePages Tristate
	// WaitHoldsP makes an io_uring worker that has reads in the kernel
	// wait for their completions in a raw io_uring_enter
	// (ring.SubmitAndWaitHeld): its goroutine keeps its P, one of
	// GOMAXPROCS, while it sleeps, for at most HeldWait at a time, then
	// waits as usual. That saves the Go scheduler's handoff around each
	// wait (sysmon retaking the P, another thread woken to run it, the
	// worker reacquiring one on return), the context switches that make
	// most of an engine read's CPU cost beyond the kernel's. The price:
	// while a worker waits so, no other goroutine runs on its P, and a
	// stop-the-world (garbage collection) waits for it, up to HeldWait.
	// Turn it on only where the workers' Handlers are the program's work
	// (a closed-loop benchmark) and Workers < GOMAXPROCS; never where
	// other goroutines (decoders, consumers) need the Ps. A worker with
	// nothing in the kernel always waits as usual: only another
	// goroutine's Submit can end that wait. A kernel without
	// IORING_FEAT_EXT_ARG (before 5.11) cannot bound the wait, so there
	// the option is ignored; Info.WaitHoldsP says whether it took.
	// Default off.
	WaitHoldsP bool
}

// HeldWait bounds one held wait of Options.WaitHoldsP: long enough to
// cover a typical read's completion, short against a garbage
// collector's pause target.
const HeldWait = 4 * time.Millisecond

// Info reports what the engine actually set up.
type Info struct {
	Kind          Kind   // IOUring or Pread
	SetupFlags    string // e.g. "SINGLE_ISSUER|DEFER_TASKRUN"
	FixedBuffers  bool
	RegisterFiles bool
	HugePages     bool     // every worker's slots advised onto transparent huge pages
	WaitHoldsP    bool     // every worker makes held waits (Options.WaitHoldsP; needs IORING_FEAT_EXT_ARG)
	Notices       []string // every fallback taken, with its reason
}

// File is a file opened for reads through the engine (Engine.Open) or for
// synchronous reads only (OpenFile). Safe for concurrent use. It belongs
// to the engine that opened it: requests for it on another engine's queue,
// or for a file from OpenFile on any queue, fail with ErrInvalid.
type File struct {
	path   string
	size   int64
	direct bool
	fd     int
	// alignment for O_DIRECT: offsets and memory
	offAlign, memAlign int

	e        *Engine      // the engine that opened it; requests go only there
	regIdx   int32        // index in the engine's registered-file tables, or -1
	inflight atomic.Int64 // reads submitted and not yet completed
	closing  atomic.Bool
	mu       sync.Mutex
	cond     *sync.Cond // signalled when inflight drops to 0 while closing
}

// Path returns the path the file was opened with.
func (f *File) Path() string { return f.path }

// Size returns the file's size at open.
func (f *File) Size() int64 { return f.size }

// Direct reports whether reads bypass the page cache.
func (f *File) Direct() bool { return f.direct }

// Request asks for Len bytes at Off of File. Tag is the caller's and comes
// back in the Completion. Worker, when ≥ 0, names the worker that must serve
// it; -1 lets the engine choose.
type Request struct {
	File   *File
	Off    int64
	Len    int
	Tag    uint64
	Worker int
}

// Completion is one finished request. It is owned by the receiver until
// Release (or Resubmit); Data aliases the slot and is invalid afterwards.
type Completion struct {
	Tag  uint64
	File *File
	Off  int64
	// Data is exactly the requested bytes, shorter only where the request
	// runs past the file's size at Open. A file that shrank since Open
	// fails the read with ErrChanged rather than deliver fewer bytes.
	Data []byte
	// DeviceBytes is what the read moved from the file: Data rounded out
	// to the O_DIRECT alignment on both ends (equal to len(Data) when
	// buffered), the bytes a disk-bandwidth figure should count.
	DeviceBytes int
	Err         error // nil or *Error
	Worker      int
	// SubmitNs and DoneNs (Options.Timestamps; ns since the engine's
	// epoch) are when the read was handed to the kernel (its SQE filled
	// for the io_uring_enter that submits it, or its pread begun; the
	// first part of a short read) and when its last part completed: time
	// queued in the engine before SubmitNs is not in DoneNs-SubmitNs, as
	// fio's slat and clat split it.
	SubmitNs int64
	DoneNs   int64

	s *slot // the slot this completion lives in; set once
}

// Release returns the completion's slot to its worker. Calling it twice (or
// after Resubmit) panics: the slot's refcount would underflow.
func (c *Completion) Release() { c.s.release() }

// Resubmit reuses the completion's slot for req on the same worker without
// blocking or allocating: the closed loop of a benchmark. It may be called
// only inside the Queue Handler call that was handed c (else ErrResubmit).
// req.Worker is ignored; the request stays on the completion's queue. On
// error (ErrResubmit, ErrClosed once Close began, ErrTooLarge, ...) the
// completion is unchanged and still owned by the caller, who must Release it.
func (c *Completion) Resubmit(req Request) error { return c.s.resubmit(&req) }

// Engine is the data plane. Its methods are safe for concurrent use.
// Create it with New; stop it with Close.
type Engine struct {
	opts Options

	infoMu  sync.Mutex
	info    Info
	noticed map[string]bool

	workers []*worker
	rr      atomic.Uint32
	wg      sync.WaitGroup

	// subMu orders Submit against Close: Submit holds it shared while it
	// posts, Close takes it exclusively once closing is set, so no request
	// is posted to a worker after the worker was told to stop.
	subMu     sync.RWMutex
	closing   atomic.Bool
	closedCh  chan struct{} // closed when Close begins: unblocks Submit
	doneCh    chan struct{} // closed when every worker has exited: unblocks Next
	closeOnce sync.Once

	taken       atomic.Int64 // slots not free: submitted or held by a consumer
	workersDone atomic.Bool
	unmapOnce   sync.Once

	filesMu sync.Mutex
	files   map[*File]struct{}
	regFree []int32 // free registered-file indices
}

// Workers returns the number of workers; Completion.Worker and
// Request.Worker range over [0, Workers()).
func (e *Engine) Workers() int { return len(e.workers) }

// Info reports the backend and the fallbacks taken.
func (e *Engine) Info() Info {
	e.infoMu.Lock()
	defer e.infoMu.Unlock()
	in := e.info
	in.Notices = append([]string(nil), e.info.Notices...)
	return in
}

// Stats counts, summed over an engine's io_uring workers since New, where
// their loops spent the time: enough to tell a device-bound run (workers
// asleep with full rings and requests queued behind them) from a
// CPU-bound one (workers in handlers, or asleep with room in the ring and
// nothing queued). The pread backend leaves them zero.
type Stats struct {
	Enters uint64 // io_uring_enter calls
	// Waits counts the enters that could sleep: nothing queued could be
	// submitted and nothing was left to deliver. WaitTime is the time
	// spent in them, sleeping or not.
	Waits    uint64
	WaitTime time.Duration
	// InKernelAtWaits and QueuedAtWaits sum, over Waits, the reads in the
	// kernel and the requests queued for room in the ring: divided by
	// Waits, the depth the workers waited at and the backlog behind it.
	InKernelAtWaits uint64
	QueuedAtWaits   uint64
	Reaped          uint64        // read attempts completed (a short read's rest counts again)
	HandlerTime     time.Duration // time delivering completions: Handlers and sends to Next
	// HeldWaits counts the waits made holding the P (Options.WaitHoldsP),
	// of them HeldExpired those that ran out (HeldWait) with nothing to
	// reap and were followed by an ordinary wait.
	HeldWaits   uint64
	HeldExpired uint64
}

// Sub returns the counts from o to s, for an interval between two calls
// of Engine.Stats.
func (s Stats) Sub(o Stats) Stats {
	return Stats{
		Enters: s.Enters - o.Enters, Waits: s.Waits - o.Waits, WaitTime: s.WaitTime - o.WaitTime,
		InKernelAtWaits: s.InKernelAtWaits - o.InKernelAtWaits, QueuedAtWaits: s.QueuedAtWaits - o.QueuedAtWaits,
		Reaped: s.Reaped - o.Reaped, HandlerTime: s.HandlerTime - o.HandlerTime,
		HeldWaits: s.HeldWaits - o.HeldWaits, HeldExpired: s.HeldExpired - o.HeldExpired,
	}
}

// Stats returns the io_uring workers' counters. Safe for concurrent use;
// the counters are read one by one, so a running engine's may be a few
// events apart.
func (e *Engine) Stats() Stats {
	var st Stats
	for _, w := range e.workers {
		st.Enters += w.st.enters.Load()
		st.Waits += w.st.waits.Load()
		st.WaitTime += time.Duration(w.st.waitNs.Load())
		st.InKernelAtWaits += w.st.inKernel.Load()
		st.QueuedAtWaits += w.st.queued.Load()
		st.Reaped += w.st.reaped.Load()
		st.HandlerTime += time.Duration(w.st.deliverNs.Load())
		st.HeldWaits += w.st.held.Load()
		st.HeldExpired += w.st.expired.Load()
	}
	return st
}

// QueueOptions configures a Queue.
type QueueOptions struct {
	// Handler, when set, receives every completion of the queue on the
	// worker goroutine that reaped it, in arrival order, outside the reap
	// loop. It owns the completion until it calls Release or Resubmit and
	// must not block. Completions then never reach Next. Calls for one
	// Completion.Worker never overlap (also with the pread pool), so
	// per-worker state needs no lock; calls for different workers run
	// concurrently.
	Handler func(c *Completion)
}

// Queue is one consumer's stream of requests and completions; several
// queues share an engine's workers. Safe for concurrent use.
type Queue struct {
	e        *Engine
	handler  func(c *Completion)
	ch       chan *Completion // capacity: every slot of the engine, so delivery never blocks
	inflight atomic.Int64
	// undelivered counts requests submitted and not yet handed over
	// (Handler returned, or queued for Next): Settle waits for 0.
	undelivered atomic.Int64

	mu      sync.Mutex
	idle    chan struct{} // closed when inflight reaches 0; nil when nobody waits
	settled chan struct{} // closed when undelivered reaches 0; nil when nobody waits
}

// NewQueue creates a completion queue on e. On a closed engine the queue's
// Submit returns ErrClosed.
func (e *Engine) NewQueue(opts QueueOptions) *Queue {
	n := 0
	for _, w := range e.workers {
		n += len(w.slots)
	}
	return &Queue{e: e, handler: opts.Handler, ch: make(chan *Completion, n)}
}
