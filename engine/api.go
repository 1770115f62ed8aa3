package engine

import (
	"context"
	"errors"
)

// errTODO marks bodies the engine owner has not written yet.
// The engine owner replaces every use of it; nothing ships with it.
var errTODO = errors.New("engine: not implemented yet")

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
	Kind           Kind                             // default Auto
	Workers        int                              // worker goroutines, each with its own ring; default 1
	CPUSets        [][]int                          // optional: worker i pins to CPUSets[i%len(CPUSets)]
	QueueDepth     int                              // reads in flight per worker; default 64, at most 4096
	SlotSize       int                              // bytes per slot; default 1 MiB (rounded up to the memory alignment)
	SlotsPerWorker int                              // default QueueDepth
	BatchSubmit    int                              // SQEs per io_uring_enter; default QueueDepth
	Direct         Tristate                         // O_DIRECT; default TryOn (buffered fallback per file, said once)
	FixedBuffers   Tristate                         // register slots as fixed buffers (READ_FIXED); default TryOn
	RegisterFiles  bool                             // register file descriptors with the ring
	Timestamps     bool                             // fill Completion.SubmitNs and DoneNs (monotonic ns)
	Logf           func(format string, args ...any) // notices; default: stderr, each once
}

// Info reports what the engine actually set up.
type Info struct {
	Kind          Kind   // IOUring or Pread
	SetupFlags    string // e.g. "SINGLE_ISSUER|DEFER_TASKRUN"
	FixedBuffers  bool
	RegisterFiles bool
	Notices       []string // every fallback taken, with its reason
}

// File is a file opened for reads through the engine. Safe for concurrent use.
type File struct {
	path   string
	size   int64
	direct bool
	fd     int
	// alignment for O_DIRECT: offsets and memory
	offAlign, memAlign int
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
	Tag      uint64
	File     *File
	Off      int64
	Data     []byte // exactly the requested bytes; shorter only at end of file
	Err      error  // nil or *Error
	Worker   int
	SubmitNs int64 // with Options.Timestamps
	DoneNs   int64
}

// Release returns the completion's slot to its worker. Calling it twice panics.
func (c *Completion) Release() {}

// Resubmit reuses the completion's slot for req on the same worker without
// blocking: the closed loop of a benchmark. It may be called only from a
// Queue Handler. req.Worker is ignored.
func (c *Completion) Resubmit(req Request) error { return errTODO }

// New starts an engine's workers.
func New(opts Options) (*Engine, error) { return nil, errTODO }

// Engine is the data plane. Its methods are safe for concurrent use.
type Engine struct{}

// Open opens path for reads, with O_DIRECT when Options.Direct allows and
// the file system accepts it.
func (e *Engine) Open(path string) (*File, error) { return nil, errTODO }

// CloseFile closes f. Reads of f still in flight finish first.
func (e *Engine) CloseFile(f *File) error { return errTODO }

// Info reports the backend and the fallbacks taken.
func (e *Engine) Info() Info { return Info{} }

// Close stops the workers after every read in flight completes.
func (e *Engine) Close() error { return errTODO }

// QueueOptions configures a Queue.
type QueueOptions struct {
	// Handler, when set, receives every completion of the queue on the
	// worker goroutine that reaped it, in arrival order, outside the reap
	// loop. It owns the completion until it calls Release or Resubmit and
	// must not block. Completions then never reach Next.
	Handler func(c *Completion)
}

// Queue is one consumer's stream of requests and completions; several
// queues share an engine's workers. Safe for concurrent use.
type Queue struct{}

// NewQueue creates a completion queue on e.
func (e *Engine) NewQueue(opts QueueOptions) *Queue { return nil }

// Submit queues reqs. It blocks while no slot is free and returns ctx.Err()
// if ctx ends first (requests already queued still complete).
func (q *Queue) Submit(ctx context.Context, reqs []Request) error { return errTODO }

// Next returns the next completion in arrival order, blocking until one
// lands or ctx ends.
func (q *Queue) Next(ctx context.Context) (*Completion, error) { return nil, errTODO }

// InFlight returns the number of requests submitted and not yet released.
func (q *Queue) InFlight() int { return 0 }

// Drain waits until every request of the queue is completed and released.
func (q *Queue) Drain(ctx context.Context) error { return errTODO }
