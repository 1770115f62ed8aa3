package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
)

// Range is one read of a batch: Len bytes at Off of the file at Path.
type Range struct {
	Path string
	Off  int64
	Len  int
}

// BatchReader reads many ranges at once and reports each as it completes,
// in any order.
//
// ReadBatch calls fn exactly once per range i of rs, possibly from several
// goroutines at once, and returns after the last call has returned. data is
// the range's bytes: exactly Len of them, fewer only where the range runs
// past the end of the file. data is valid only during the call; fn must copy
// what it keeps. err, when not nil, is the range's read error (data is then
// nil). ReadBatch returns an error only when it could not attempt the batch
// (ctx done, reader closed); it still calls fn for every range, with that
// error where the range was not read.
//
// Implementations are safe for concurrent use. They keep every file a call
// names open until the call returns (one descriptor per file), so a caller
// bounds its descriptors by the files it names in one call.
type BatchReader interface {
	ReadBatch(ctx context.Context, rs []Range, fn func(i int, data []byte, err error)) error
}

// ReaderSlotSize is the slot size of the engine StartRangeReader starts:
// it holds a header-walk read, a footer tail and a coalesced offset index
// group of the index build; longer ranges are read synchronously.
const ReaderSlotSize = 256 << 10

// RangeReader is a BatchReader over an Engine (io_uring, or its pread pool
// where io_uring is refused): every range of a batch is in flight at once
// and fn runs in completion order, on a few consumer goroutines. Ranges
// longer than the engine's slot are read with File.ReadAt.
//
// Safe for concurrent use. Close it to stop an engine it started.
type RangeReader struct {
	e        *Engine
	own      bool
	par      int
	closed   atomic.Bool
	inflight sync.WaitGroup
}

// StartRangeReader starts an engine with opts (SlotSize default
// ReaderSlotSize, QueueDepth default 64) and returns a reader that owns it.
func StartRangeReader(opts Options) (*RangeReader, error) {
	if opts.SlotSize <= 0 {
		opts.SlotSize = ReaderSlotSize
	}
	e, err := New(opts)
	if err != nil {
		return nil, err
	}
	r := NewRangeReader(e)
	r.own = true
	return r, nil
}

// NewRangeReader returns a reader over an engine the caller owns and closes
// after the reader's last batch.
func NewRangeReader(e *Engine) *RangeReader {
	return &RangeReader{e: e, par: max(2, runtime.GOMAXPROCS(0))}
}

// BatchReadCloser is a BatchReader that holds resources until Close.
type BatchReadCloser interface {
	BatchReader
	Close() error
}

// OpenBatchReader is the reader for a caller without an engine of its own
// (an index build). It starts its engine only when a batch is worth one:
// a batch of fewer than SmallBatch ranges (a few footers, a sidecar's
// checks) is read by a PreadReader, since starting an engine costs
// milliseconds that a few small preads do not. The first larger batch
// starts an engine (Auto, queue depth parallelism clamped to [64, 256],
// ReaderSlotSize slots, notices to logf) and it and every later large
// batch go through a RangeReader over it; where no engine can start, they
// go through the PreadReader, said once through logf. parallelism ≤ 0
// means max(8, 2*GOMAXPROCS); logf nil means stderr. Close the result
// after the last batch: it stops the engine.
func OpenBatchReader(parallelism int, logf func(format string, args ...any)) BatchReadCloser {
	if parallelism <= 0 {
		parallelism = max(8, 2*runtime.GOMAXPROCS(0))
	}
	if logf == nil {
		logf = func(format string, args ...any) {
			fmt.Fprintf(os.Stderr, "pagefeed: engine: "+format+"\n", args...)
		}
	}
	return &lazyReader{par: parallelism, logf: logf, pread: PreadReader{Parallelism: parallelism}}
}

// SmallBatch is the batch size from which OpenBatchReader's reader reads
// through its engine.
const SmallBatch = 64

// lazyReader is OpenBatchReader's reader.
type lazyReader struct {
	par   int
	logf  func(format string, args ...any)
	pread PreadReader

	mu     sync.Mutex
	big    BatchReader // nil until the first large batch
	rr     *RangeReader
	closed bool
}

// ReadBatch implements BatchReader.
func (l *lazyReader) ReadBatch(ctx context.Context, rs []Range, fn func(i int, data []byte, err error)) error {
	r, err := l.reader(len(rs))
	if err != nil {
		for i := range rs {
			fn(i, nil, err)
		}
		return err
	}
	return r.ReadBatch(ctx, rs, fn)
}

// reader picks the reader for a batch of n ranges, starting the engine at
// the first large one.
func (l *lazyReader) reader(n int) (BatchReader, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, ErrReaderClosed
	}
	if n < SmallBatch {
		return &l.pread, nil
	}
	if l.big == nil {
		r, err := StartRangeReader(Options{
			Kind:       Auto,
			QueueDepth: min(max(64, l.par), 256),
			SlotSize:   ReaderSlotSize,
			Logf:       l.logf,
		})
		if err != nil {
			l.logf("engine unavailable (%v): reading with pread", err)
			l.big = &l.pread
		} else {
			l.big, l.rr = r, r
		}
	}
	return l.big, nil
}

// Close stops the engine, if one started, after the batches in progress.
func (l *lazyReader) Close() error {
	l.mu.Lock()
	l.closed = true
	rr := l.rr
	l.mu.Unlock()
	if rr != nil {
		return rr.Close()
	}
	return nil
}

// Info reports the engine's backend and fallbacks.
func (r *RangeReader) Info() Info { return r.e.Info() }

// Close waits for batches in progress and closes the engine if the reader
// started it.
func (r *RangeReader) Close() error {
	if r.closed.Swap(true) {
		return nil
	}
	r.inflight.Wait()
	if r.own {
		return r.e.Close()
	}
	return nil
}

// ErrReaderClosed is reported for every range of a batch that a closed
// RangeReader was handed.
var ErrReaderClosed = errors.New("engine: reader closed")

// ReadBatch implements BatchReader.
func (r *RangeReader) ReadBatch(ctx context.Context, rs []Range, fn func(i int, data []byte, err error)) error {
	if len(rs) == 0 {
		return ctx.Err()
	}
	r.inflight.Add(1)
	defer r.inflight.Done()
	if r.closed.Load() {
		for i := range rs {
			fn(i, nil, ErrReaderClosed)
		}
		return ErrReaderClosed
	}

	files, openErr := r.openFiles(rs)
	defer func() {
		for _, f := range files {
			r.e.CloseFile(f)
		}
	}()

	q := r.e.NewQueue(QueueOptions{})
	nctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var pending atomic.Int64
	pending.Store(int64(len(rs)))
	report := func(i int, data []byte, err error) {
		fn(i, data, err)
		if pending.Add(-1) == 0 {
			cancel() // every range reported: consumers stop
		}
	}

	var wg sync.WaitGroup
	for w := 0; w < r.par; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				c, err := q.Next(nctx)
				if err != nil {
					return
				}
				i := int(c.Tag)
				if c.Err != nil {
					report(i, nil, c.Err)
				} else {
					report(i, c.Data, nil)
				}
				c.Release()
			}
		}()
	}

	// Submit one request at a time so that a failure (ctx done) leaves no
	// doubt about which ranges are in flight.
	var big []int
	var req [1]Request
	for i, rg := range rs {
		if err := openErr[rg.Path]; err != nil {
			report(i, nil, err)
			continue
		}
		if err := ctx.Err(); err != nil {
			report(i, nil, err)
			continue
		}
		req[0] = Request{File: files[rg.Path], Off: rg.Off, Len: rg.Len, Tag: uint64(i), Worker: -1}
		if err := q.Submit(ctx, req[:]); err != nil {
			if errors.Is(err, ErrTooLarge) {
				big = append(big, i) // longer than a slot holds with its alignment
				continue
			}
			report(i, nil, err)
		}
	}
	readAtEach(rs, big, files, report)
	wg.Wait()
	if n := pending.Load(); n != 0 {
		// Next failed (engine closed under us): nothing more will come.
		return fmt.Errorf("engine: %d reads lost: %w", n, ErrClosed)
	}
	return ctx.Err()
}

// openFiles opens each distinct path of rs once; a path that fails to
// open is in openErr instead.
func (r *RangeReader) openFiles(rs []Range) (files map[string]*File, openErr map[string]error) {
	files, openErr = map[string]*File{}, map[string]error{}
	for _, rg := range rs {
		if _, ok := files[rg.Path]; ok {
			continue
		}
		if _, ok := openErr[rg.Path]; ok {
			continue
		}
		f, err := r.e.Open(rg.Path)
		if err != nil {
			openErr[rg.Path] = err
			continue
		}
		files[rg.Path] = f
	}
	return files, openErr
}

// readAtEach reads the ranges rs[i] for i in idx (longer than a slot
// holds) with File.ReadAt, one at a time into one buffer, and reports
// each.
func readAtEach(rs []Range, idx []int, files map[string]*File, report func(int, []byte, error)) {
	var buf []byte
	for _, i := range idx {
		rg := rs[i]
		if cap(buf) < rg.Len {
			buf = make([]byte, rg.Len)
		}
		n, err := files[rg.Path].ReadAt(buf[:rg.Len], rg.Off)
		if err == io.EOF {
			err = nil
		}
		if err != nil {
			report(i, nil, err)
		} else {
			report(i, buf[:n], nil)
		}
	}
}

// PreadReader is a BatchReader over synchronous buffered reads
// (File.ReadAt on files from OpenFile) on a bounded pool of goroutines,
// for callers that need no engine. It opens each path once per batch. The
// zero value uses 8 goroutines.
type PreadReader struct {
	// Parallelism bounds the reads in flight; default 8.
	Parallelism int
}

// Close implements BatchReadCloser; a PreadReader holds nothing between
// batches.
func (p *PreadReader) Close() error { return nil }

// ReadBatch implements BatchReader.
func (p *PreadReader) ReadBatch(ctx context.Context, rs []Range, fn func(i int, data []byte, err error)) error {
	if len(rs) == 0 {
		return ctx.Err()
	}
	par := p.Parallelism
	if par <= 0 {
		par = 8
	}
	par = min(par, len(rs))

	// Open each distinct path once; ranges of one path are usually adjacent.
	files := make(map[string]*openOnce)
	for _, r := range rs {
		if _, ok := files[r.Path]; !ok {
			files[r.Path] = &openOnce{}
		}
	}
	defer func() {
		for _, f := range files {
			if f.f != nil {
				f.f.Close()
			}
		}
	}()

	var (
		mu   sync.Mutex
		next int
		wg   sync.WaitGroup
	)
	for w := 0; w < par; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf []byte
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= len(rs) {
					return
				}
				r := rs[i]
				if err := ctx.Err(); err != nil {
					fn(i, nil, err)
					continue
				}
				f, err := files[r.Path].open(r.Path)
				if err != nil {
					fn(i, nil, err)
					continue
				}
				if r.Len < 0 || r.Off < 0 {
					fn(i, nil, &Error{Op: "read", Path: r.Path, Off: r.Off, Err: errors.New("negative range")})
					continue
				}
				if cap(buf) < r.Len {
					buf = make([]byte, r.Len)
				}
				n, err := f.ReadAt(buf[:r.Len], r.Off)
				if err == io.EOF {
					err = nil
				}
				if err != nil {
					fn(i, nil, err)
					continue
				}
				fn(i, buf[:n], nil)
			}
		}()
	}
	wg.Wait()
	return ctx.Err()
}

type openOnce struct {
	once sync.Once
	f    *File
	err  error
}

func (o *openOnce) open(path string) (*File, error) {
	o.once.Do(func() { o.f, o.err = OpenFile(path, Off) })
	return o.f, o.err
}
