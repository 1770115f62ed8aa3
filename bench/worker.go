package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/pagefeed/pagefeed/engine"
	"golang.org/x/sys/unix"
)

// worker is one job clone: it picks files and offsets, issues reads
// through its engine and records what it measures. All fields but the
// atomics belong to the goroutine that runs the engine (the psync/mmap
// loop, or the io_uring engine's worker that calls handle).
//
// Files are served as the job's file_service_type says (pick), each
// file's reads at a random block (randread) or its next block (read)
// within it. A file leaves the rotation once it had as many reads as it
// has blocks; when all have, a new pass starts with every file, so over a
// pass each file is read in proportion to its size, as fio reads each
// file's io_size. Under sequential and random, a time_based randread
// never finishes a file, as in fio, whose random map then starts over:
// sequential stays on its first file, random chooses among all files.
// Roundrobin keeps its passes there (fio would alternate over every file;
// the two agree when the files are the same size). Clones start on
// different files (pos), where fio's would all start on the first.
type worker struct {
	job     *Job
	clone   int
	align   int // largest O_DIRECT alignment of the files (1 when buffered)
	base    time.Time
	onRead  func(clone int, path string, off int64, p []byte)
	onDepth func(inflight int64)
	stderr  io.Writer

	measureNs int64 // ns after base from which reads count (end of ramp_time)
	endNs     int64 // ns after base at which to stop; 0: no time limit
	limit     int64 // bytes to read after measureNs; 0: no limit
	files     []wfile
	active    []int32 // files with reads left in this pass, in round-robin order
	pos       int     // index in active of the next file in round-robin order
	issued    int64   // measured bytes issued
	rnd       rng

	// File service (pick): the file being served, as an index in files
	// and in active (-1: choose one), the I/Os it has left before the
	// choice is made again, and whether files never leave the rotation.
	service FileService
	serveNr uint64
	cur     int32
	curK    int
	curLeft uint64
	endless bool

	res      *JobResult
	err      error
	lastNs   int64
	stopping bool
	done     chan struct{}

	bytes    atomic.Int64 // measured bytes, read by the sampler
	ios      atomic.Int64
	finished atomic.Bool
	stop     atomic.Bool // set on cancellation

	// Group phases: Done once each, by begin (or finish) and finish.
	begun, ended         *sync.WaitGroup
	begunOnce, endedOnce sync.Once

	// io_uring
	inflight atomic.Int64 // reads submitted and not yet released
	logs     *ioLogs      // fio-format logs; nil when the job writes none
	q        *engine.Queue
	low      int // iodepth_low; IODepth when the queue is kept full
	refills  []engine.Request
}

// wfile is one file of a worker: its span in whole blocks, where it is in
// it, and its handle on the worker's engine.
type wfile struct {
	path    string
	nblocks uint64       // bs blocks in the span; reads stay in [0, nblocks*bs)
	seq     uint64       // next sequential block
	left    uint64       // reads left in this pass
	base    int64        // the clone's offset in the file (offset, offset_increment)
	dist    *sampler     // non-uniform random_distribution; nil: uniform
	rmap    *randomMap   // uniform randread without norandommap; nil: draws repeat
	ef      *engine.File // io_uring
	fd      int          // psync
	m       []byte       // mmap: the span, mapped
}

func newWorker(job *Job, gid, clone int, files []target, align int, base time.Time, cfg *RawConfig) *worker {
	w := &worker{
		job: job, clone: clone, align: align, base: base, onRead: cfg.onRead, onDepth: cfg.onDepth, stderr: cfg.Stderr,
		measureNs: int64(job.RampTime),
		files:     make([]wfile, len(files)),
		active:    make([]int32, 0, len(files)),
		rnd:       rng{s: jobSeed(job) + uint64(clone)*0x9e3779b97f4a7c15},
		service:   job.FileService,
		serveNr:   max(job.FileServiceNr, 1),
		cur:       -1,
		endless:   job.TimeBased && job.RW == RandRead && job.FileService != ServiceRoundRobin,
		res:       newJobResult(job.Name, gid),
		done:      make(chan struct{}),
	}
	if job.Runtime > 0 {
		w.endNs = int64(job.RampTime + job.Runtime)
	}
	var blocks int64
	for i, t := range files {
		f := &w.files[i]
		f.path, f.nblocks, f.fd = t.path, uint64(t.size/int64(job.BS)), -1
		f.base = cloneOffset(job, clone, t.fileSize)
		if job.RW == RandRead && f.nblocks > 0 {
			switch {
			case job.Dist.Kind != DistRandom:
				f.dist = newSampler(job.Dist, f.nblocks, &w.rnd)
			case !job.NoRandomMap:
				f.rmap = newRandomMap(f.nblocks)
			}
		}
		if job.RW == Read && clone > 0 && job.OffsetIncrement == 0 && job.OffsetIncrementPct == 0 {
			// Clones of a sequential job start spread over each file, as
			// separate fio jobs on one file would overlap otherwise anyway;
			// with offset_increment each starts at its own offset, as in fio.
			f.seq = uint64(clone) * f.nblocks / uint64(job.NumJobs)
		}
		blocks += int64(f.nblocks)
	}
	if !job.TimeBased {
		w.limit = blocks * int64(job.BS)
	}
	w.newPass()
	if len(files) > 0 {
		w.pos = clone % len(files) // clones start on different files
	}
	w.res.Direct = job.Direct
	w.res.IODepth = job.IODepth
	w.res.BatchSz = job.BatchSubmit
	return w
}

// noticeMu serializes notices from engine goroutines.
var noticeMu sync.Mutex

// notice is the engine's Logf: one line on stderr, naming the job.
func (w *worker) notice(format string, args ...any) {
	noticeMu.Lock()
	defer noticeMu.Unlock()
	fmt.Fprintf(w.stderr, "pagebench: %s: %s\n", w.job.Name, fmt.Sprintf(format, args...))
}

func (w *worker) now() int64 { return int64(time.Since(w.base)) }

// next returns the file (an index in w.files) and offset of the next
// read, or false when the job is done.
func (w *worker) next(now int64) (int, int64, bool) {
	if w.stopping || w.stop.Load() || w.endNs > 0 && now >= w.endNs {
		return 0, 0, false
	}
	if now >= w.measureNs {
		if w.limit > 0 && w.issued >= w.limit {
			return 0, 0, false
		}
		w.issued += int64(w.job.BS)
	}
	i := w.pick()
	f := &w.files[i]
	var blk uint64
	if w.job.RW == RandRead {
		switch {
		case f.dist != nil:
			blk = f.dist.next(&w.rnd)
		case f.rmap != nil:
			blk = f.rmap.take(w.rnd.below(f.nblocks))
		default:
			blk = w.rnd.below(f.nblocks)
		}
	} else {
		blk = f.seq
		if f.seq++; f.seq >= f.nblocks {
			f.seq = 0
		}
	}
	return i, f.base + int64(blk)*int64(w.job.BS), true
}

// jobSeed is the seed of job's generators: Seed (randseed), or with
// randrepeat=0 a new one each run, from the clock.
func jobSeed(job *Job) uint64 {
	if job.RandRepeat {
		return job.Seed
	}
	return job.Seed ^ uint64(time.Now().UnixNano())
}

// pick returns the file of the next read, as fio's get_next_file: the
// file being served while it has reads left in this pass and, but for
// sequential, fewer than serveNr I/Os in a row; else a new one among those
// with reads left, the next in round-robin order (roundrobin, sequential)
// or a uniform choice from the job's generator (random). A new pass
// starts when no file has reads left. It does not allocate.
func (w *worker) pick() int {
	if w.cur >= 0 && (w.service == ServiceSequential || w.curLeft > 0) {
		if w.service != ServiceSequential {
			w.curLeft--
		}
	} else {
		if len(w.active) == 0 {
			w.newPass()
		}
		var k int
		if w.service == ServiceRandom {
			k = int(w.rnd.below(uint64(len(w.active))))
		} else {
			if w.pos >= len(w.active) {
				w.pos = 0
			}
			k = w.pos
		}
		w.cur, w.curK, w.curLeft = w.active[k], k, w.serveNr-1
		w.pos = k + 1
	}
	i := int(w.cur)
	if w.endless {
		return i
	}
	f := &w.files[i]
	if f.left--; f.left == 0 {
		// Out of the rotation; the files after it slide down one.
		w.active = append(w.active[:w.curK], w.active[w.curK+1:]...)
		if w.pos > w.curK {
			w.pos--
		}
		w.cur = -1
	}
	return i
}

// newPass puts every file back in the rotation with its blocks to read.
func (w *worker) newPass() {
	w.active = w.active[:0]
	for i := range w.files {
		if w.files[i].left = w.files[i].nblocks; w.files[i].left > 0 {
			w.active = append(w.active, int32(i))
		}
	}
	w.pos = 0
}

// complete records one read that finished at now. It reports whether the
// job should stop issuing.
func (w *worker) complete(now int64, path string, off int64, p []byte, clat, slat, lat int64) bool {
	if now < w.measureNs {
		return w.stop.Load()
	}
	if w.onRead != nil {
		w.onRead(w.clone, path, off, p)
	}
	r := w.res
	r.IOs++
	r.IOBytes += int64(len(p))
	if len(p) < w.job.BS {
		r.ShortIOs++
	}
	r.Clat.Record(clat)
	if slat >= 0 {
		r.Slat.Record(slat)
	}
	r.Lat.Record(lat)
	r.buckets.add(clat)
	r.plat.add(clat)
	if w.logs != nil {
		w.logs.add(now-w.measureNs, int64(len(p)), clat, slat, lat)
	}
	w.bytes.Store(r.IOBytes)
	w.ios.Store(r.IOs)
	w.lastNs = now
	return w.stop.Load() || w.endNs > 0 && now >= w.endNs || w.limit > 0 && r.IOBytes >= w.limit
}

// begin rebases the ramp and run deadlines on the first read, so engine
// setup (mapping and registering slots, opening) is not in the runtime.
// Call it once, just before the first read is issued.
func (w *worker) begin() {
	w.markBegun()
	now := w.now()
	w.measureNs += now
	if w.endNs > 0 {
		w.endNs += now
	}
}

// finish marks the worker done at its last counted completion.
func (w *worker) finish() {
	if w.stopping {
		return
	}
	w.stopping = true
	w.finished.Store(true)
	w.res.Runtime = time.Duration(max(w.lastNs-w.measureNs, 0))
	close(w.done)
	w.markBegun()
	if w.ended != nil {
		w.endedOnce.Do(w.ended.Done)
	}
}

func (w *worker) markBegun() {
	if w.begun != nil {
		w.begunOnce.Do(w.begun.Done)
	}
}

// fail records the worker's first error, naming the file (the job's
// filename option where no one file is at fault) and the offset (-1: none).
func (w *worker) fail(op, path string, off int64, err error) {
	if w.err == nil {
		w.err = &Error{Op: op, Path: path, Off: off, Err: err}
	}
}

// run runs the job on its engine until it is done.
func (w *worker) run() {
	switch w.job.IOEngine {
	case EngineIOUring:
		w.runUring()
	case EngineMmap:
		w.runMmap()
	default:
		w.runPsync()
	}
	w.finish()
}

// alignedBuf maps an anonymous, page-aligned buffer: O_DIRECT-safe memory.
func alignedBuf(n int) ([]byte, error) {
	pg := unix.Getpagesize()
	b, err := unix.Mmap(-1, 0, (n+pg-1)/pg*pg, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, err
	}
	return b[:n], nil
}

// runPsync is fio's psync: one pread at a time on a locked OS thread.
func (w *worker) runPsync() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	flags := unix.O_RDONLY | unix.O_CLOEXEC
	if w.job.Direct {
		flags |= oDirect
	}
	defer func() {
		for i := range w.files {
			if f := &w.files[i]; f.fd >= 0 {
				unix.Close(f.fd)
				f.fd = -1
			}
		}
	}()
	for i := range w.files {
		f := &w.files[i]
		fd, err := unix.Open(f.path, flags, 0)
		if err != nil {
			if w.job.Direct && errors.Is(err, unix.EINVAL) {
				err = fmt.Errorf("%w: O_DIRECT refused by the file system; use --direct=0", ErrAlignment)
			}
			w.fail("open", f.path, -1, err)
			return
		}
		f.fd = fd
	}
	buf, err := alignedBuf(w.job.BS)
	if err != nil {
		w.fail("mmap", w.job.Filename, -1, err)
		return
	}
	defer unix.Munmap(buf[:cap(buf)])
	w.begin()
	for {
		t0 := w.now()
		i, off, ok := w.next(t0)
		if !ok {
			return
		}
		f := &w.files[i]
		n, err := preadFull(f.fd, buf, off)
		t1 := w.now()
		if err != nil {
			if w.job.Direct && errors.Is(err, unix.EINVAL) {
				err = fmt.Errorf("%w: %v", ErrAlignment, err)
			}
			w.fail("read", f.path, off, err)
			return
		}
		if n == 0 {
			w.fail("read", f.path, off, errors.New("unexpected end of file (did it shrink?)"))
			return
		}
		if w.complete(t1, f.path, off, buf[:n], t1-t0, -1, t1-t0) {
			return
		}
	}
}

// preadFull reads len(p) bytes at off, retrying EINTR and short reads; it
// returns fewer only at end of file.
func preadFull(fd int, p []byte, off int64) (int, error) {
	n := 0
	for n < len(p) {
		// A raw syscall keeps the P across the read, as fio's thread keeps
		// its CPU: no entersyscall/exitsyscall, no P handoff by sysmon
		// after 20 us, which would add a scheduler wakeup to every read.
		// The thread is locked and the loop does not allocate, so the only
		// cost is a GC stop-the-world waiting for one read.
		q := p[n:]
		r, _, errno := unix.RawSyscall6(sysPread, uintptr(fd), uintptr(unsafe.Pointer(&q[0])), uintptr(len(q)), uintptr(off+int64(n)), 0, 0)
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 {
			return n, errno
		}
		m := int(r)
		if m == 0 {
			break
		}
		n += m
	}
	return n, nil
}

// runMmap maps each file's span and copies bs bytes from each offset,
// touching every page, like fio's mmap engine.
func (w *worker) runMmap() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer func() {
		for i := range w.files {
			if f := &w.files[i]; f.m != nil {
				unix.Munmap(f.m)
				f.m = nil
			}
		}
	}()
	bs := int64(w.job.BS)
	for i := range w.files {
		f := &w.files[i]
		fd, err := unix.Open(f.path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			w.fail("open", f.path, -1, err)
			return
		}
		// The mapping outlives the descriptor.
		f.m, err = unix.Mmap(fd, 0, int(int64(f.nblocks)*bs), unix.PROT_READ, unix.MAP_SHARED)
		unix.Close(fd)
		if err != nil {
			f.m = nil
			w.fail("mmap", f.path, -1, err)
			return
		}
	}
	buf := make([]byte, w.job.BS)
	w.begin()
	for {
		t0 := w.now()
		i, off, ok := w.next(t0)
		if !ok {
			return
		}
		f := &w.files[i]
		n := copy(buf, f.m[off:off+bs])
		t1 := w.now()
		if w.complete(t1, f.path, off, buf[:n], t1-t0, -1, t1-t0) {
			return
		}
	}
}

func tristate(on bool) engine.Tristate {
	if on {
		return engine.On
	}
	return engine.Off
}

// holdsP reports whether a job of clones io_uring workers, one each, waits
// holding its P: only while they leave at least one of procs free.
func holdsP(clones, procs int) bool { return clones < procs }

// drainTimeout bounds the wait for reads still in flight after the end.
const drainTimeout = 30 * time.Second

// runUring runs a closed loop on one io_uring engine: iodepth reads in
// flight; each completion's handler records it and resubmits the next read
// on the same slot.
func (w *worker) runUring() {
	fixed := engine.Off
	if w.job.FixedBufs {
		fixed = engine.TryOn
	}
	huge := engine.Off // fio's default iomem=malloc: 4 KiB pages
	if w.job.HugeMem {
		huge = engine.On
	}
	// Held waits (engine.Options.WaitHoldsP): the closed loop's Handler is
	// all the work there is, and the job's clones leave at least one P
	// to the rest of the program (status line, timers, other clones'
	// setup). fio's thread simply sleeps in io_uring_enter; this is the
	// nearest a Go worker gets to it.
	holdP := holdsP(w.job.NumJobs, runtime.GOMAXPROCS(0))
	eng, err := engine.New(engine.Options{
		Kind:             engine.IOUring,
		Workers:          1,
		QueueDepth:       w.job.IODepth,
		SlotSize:         w.job.BS + max(w.align, 4096), // room to read an aligned superset
		BatchSubmit:      w.job.BatchSubmit,
		BatchComplete:    w.job.BatchCompleteMin,
		BatchCompleteMax: w.job.BatchCompleteMax,
		Direct:           tristate(w.job.Direct),
		FixedBuffers:     fixed,
		HugePages:        huge,
		WaitHoldsP:       holdP,
		RegisterFiles:    w.job.RegisterFiles,
		Timestamps:       true,
		Logf:             w.notice,
	})
	if err != nil {
		w.fail("setup", w.job.Filename, -1, fmt.Errorf("%w: io_uring: %v", ErrEngine, err))
		return
	}
	defer func() {
		if err := eng.Close(); err != nil {
			w.fail("close", w.job.Filename, -1, err)
		}
	}()
	w.res.EngineInfo = engineInfo(eng.Info())
	if eng.Info().WaitHoldsP {
		w.res.EngineInfo += " waitholdsp"
	}
	// Deferred after eng.Close, so it runs first: files close before the engine.
	defer func() {
		for i := range w.files {
			if f := &w.files[i]; f.ef != nil {
				eng.CloseFile(f.ef)
			}
		}
	}()
	for i := range w.files {
		wf := &w.files[i]
		f, err := eng.Open(wf.path)
		if err != nil {
			w.fail("open", wf.path, -1, err)
			return
		}
		wf.ef = f
		if w.job.Direct && !f.Direct() {
			w.fail("open", wf.path, -1, fmt.Errorf("%w: O_DIRECT refused by the file system; use --direct=0", ErrAlignment))
			return
		}
	}
	q := eng.NewQueue(engine.QueueOptions{Handler: w.handle})
	w.q = q
	w.low = w.job.IODepth
	if l := w.job.IODepthLow; l > 0 && l < w.job.IODepth {
		w.low = l
	}
	reqs := make([]engine.Request, 0, w.job.IODepth)
	w.refills = make([]engine.Request, 0, w.job.IODepth)
	w.begin()
	for range w.job.IODepth {
		now := w.now()
		i, off, ok := w.next(now)
		if !ok {
			break
		}
		reqs = append(reqs, engine.Request{File: w.files[i].ef, Off: off, Len: w.job.BS, Tag: uint64(now), Worker: -1})
	}
	if len(reqs) == 0 {
		return
	}
	// Handlers may run before Submit returns; done is closed by finish,
	// which from here on only the handler calls.
	w.inflight.Store(int64(len(reqs)))
	if err := q.Submit(context.Background(), reqs); err != nil {
		w.fail("submit", w.job.Filename, -1, err)
		return // the engine completes what it queued; Close waits for it
	}
	<-w.done
	ctx, cancel := context.WithTimeout(context.Background(), drainTimeout)
	defer cancel()
	if err := q.Drain(ctx); err != nil {
		w.fail("drain", w.job.Filename, -1, err)
	}
}

// handle is the queue's completion handler, on the engine worker's
// goroutine: record, then resubmit the slot for the next read. The job is
// finished when a completion ends it (time, size, error) or, when the
// issuing side ran out first, when the last read in flight lands.
func (w *worker) handle(c *engine.Completion) {
	now := w.now()
	if !w.stopping {
		path := w.job.Filename
		if c.File != nil {
			path = c.File.Path()
		}
		if c.Err != nil {
			w.fail("read", path, c.Off, c.Err)
			w.lastNs = now
			w.finish()
		} else {
			// As fio splits it: slat from the read's creation to its
			// hand-off to the kernel (time queued in the engine
			// included), clat from there to now, when the completion is
			// taken in; lat the sum.
			lat := now - int64(c.Tag)
			clat := lat
			if c.SubmitNs > 0 {
				if d := engine.Now() - c.SubmitNs; d >= 0 && d <= lat {
					clat = d
				}
			}
			if w.complete(now, path, c.Off, c.Data, clat, max(lat-clat, 0), lat) {
				w.finish()
			}
		}
	}
	if w.onDepth != nil {
		w.onDepth(w.inflight.Load())
	}
	if !w.stopping && w.low < w.job.IODepth {
		// iodepth_low: let the queue drain to low reads in flight (this
		// one counted until it is released), then fill it up again.
		if w.inflight.Load() > int64(w.low)+1 {
			c.Release()
			w.inflight.Add(-1)
			return
		}
		w.refill(c, w.job.IODepth-int(w.inflight.Load()))
	}
	if !w.stopping {
		t := w.now()
		if i, off, ok := w.next(t); ok {
			f := w.files[i].ef
			err := c.Resubmit(engine.Request{File: f, Off: off, Len: w.job.BS, Tag: uint64(t), Worker: -1})
			if err == nil {
				return
			}
			w.fail("resubmit", f.Path(), off, err)
			w.finish()
		}
	}
	c.Release()
	if w.inflight.Add(-1) == 0 {
		w.lastNs = max(w.lastNs, now)
		w.finish()
	}
}

// refill submits up to n new reads besides the one c's slot will take,
// from the handler (iodepth_low): their slots were released, so Submit
// finds them free and does not block.
func (w *worker) refill(c *engine.Completion, n int) {
	reqs := w.refills[:0]
	for range n {
		t := w.now()
		i, off, ok := w.next(t)
		if !ok {
			break
		}
		reqs = append(reqs, engine.Request{File: w.files[i].ef, Off: off, Len: w.job.BS, Tag: uint64(t), Worker: -1})
	}
	w.refills = reqs
	if len(reqs) == 0 {
		return
	}
	w.inflight.Add(int64(len(reqs)))
	if err := w.q.Submit(context.Background(), reqs); err != nil {
		path := w.job.Filename
		if c.File != nil {
			path = c.File.Path()
		}
		w.fail("submit", path, -1, err)
		w.finish()
	}
}
