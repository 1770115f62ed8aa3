package index

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/pagefeed/pagefeed/engine"
)

// engineSlot is the slot size of the engine Build starts for itself: it
// holds a header-walk read, a footer tail and a coalesced offset index
// group; longer ranges are read with pread.
const engineSlot = 256 << 10

// EngineReader is a BatchReader over pagefeed's engine (io_uring, or its
// pread pool where io_uring is refused): every range of a batch is in flight
// at once and fn runs in completion order, on a few consumer goroutines.
// Ranges longer than the engine's slot are read with pread.
//
// Safe for concurrent use. Close it to stop an engine it started.
type EngineReader struct {
	e        *engine.Engine
	own      bool
	slot     int
	par      int
	closed   atomic.Bool
	inflight sync.WaitGroup
}

// NewEngineReader starts an engine with opts (SlotSize default 256 KiB,
// QueueDepth default 64) and returns a reader that owns it.
func NewEngineReader(opts engine.Options) (*EngineReader, error) {
	if opts.SlotSize <= 0 {
		opts.SlotSize = engineSlot
	}
	e, err := engine.New(opts)
	if err != nil {
		return nil, err
	}
	r := OverEngine(e, opts.SlotSize)
	r.own = true
	return r, nil
}

// OverEngine returns a reader over an engine the caller owns and closes
// after the reader's last batch. slotSize is the engine's slot size.
func OverEngine(e *engine.Engine, slotSize int) *EngineReader {
	return &EngineReader{e: e, slot: slotSize, par: max(2, runtime.GOMAXPROCS(0))}
}

// Info reports the engine's backend and fallbacks.
func (r *EngineReader) Info() engine.Info { return r.e.Info() }

// Close waits for batches in progress and closes the engine if the reader
// started it.
func (r *EngineReader) Close() error {
	if r.closed.Swap(true) {
		return nil
	}
	r.inflight.Wait()
	if r.own {
		return r.e.Close()
	}
	return nil
}

var errReaderClosed = errors.New("index: reader closed")

// ReadBatch implements BatchReader.
func (r *EngineReader) ReadBatch(ctx context.Context, rs []Range, fn func(i int, data []byte, err error)) error {
	if len(rs) == 0 {
		return ctx.Err()
	}
	r.inflight.Add(1)
	defer r.inflight.Done()
	if r.closed.Load() {
		for i := range rs {
			fn(i, nil, errReaderClosed)
		}
		return errReaderClosed
	}

	files := map[string]*engine.File{}
	openErr := map[string]error{}
	for _, rg := range rs {
		if _, ok := files[rg.Path]; ok {
			continue
		}
		if _, ok := openErr[rg.Path]; ok {
			continue
		}
		f, err := r.e.Open(rg.Path)
		if err != nil {
			openErr[rg.Path] = &Error{Op: "open", Path: rg.Path, Off: -1, Err: err}
			continue
		}
		files[rg.Path] = f
	}
	defer func() {
		for _, f := range files {
			r.e.CloseFile(f)
		}
	}()

	q := r.e.NewQueue(engine.QueueOptions{})
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
	var req [1]engine.Request
	for i, rg := range rs {
		if err := openErr[rg.Path]; err != nil {
			report(i, nil, err)
			continue
		}
		// The engine reads the aligned superset of a range (O_DIRECT);
		// leave room for alignment of up to 4 KiB at each end.
		if rg.Len > r.slot-8192 {
			big = append(big, i)
			continue
		}
		if err := ctx.Err(); err != nil {
			report(i, nil, err)
			continue
		}
		req[0] = engine.Request{File: files[rg.Path], Off: rg.Off, Len: rg.Len, Tag: uint64(i), Worker: -1}
		if err := q.Submit(ctx, req[:]); err != nil {
			if errors.Is(err, engine.ErrTooLarge) {
				big = append(big, i)
				continue
			}
			report(i, nil, &Error{Op: "read", Path: rg.Path, Off: rg.Off, Err: err})
		}
	}
	var buf []byte
	for _, i := range big {
		rg := rs[i]
		if cap(buf) < rg.Len {
			buf = make([]byte, rg.Len)
		}
		n, err := preadRange(rg.Path, rg.Off, buf[:rg.Len])
		if err != nil {
			report(i, nil, err)
		} else {
			report(i, buf[:n], nil)
		}
	}
	wg.Wait()
	if n := pending.Load(); n != 0 {
		// Next failed (engine closed under us): nothing more will come.
		return fmt.Errorf("index: %d reads lost: %w", n, engine.ErrClosed)
	}
	return ctx.Err()
}

func preadRange(path string, off int64, b []byte) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, &Error{Op: "open", Path: path, Off: -1, Err: err}
	}
	defer f.Close()
	n, err := f.ReadAt(b, off)
	if err == io.EOF {
		err = nil
	}
	if err != nil {
		return 0, &Error{Op: "read", Path: path, Off: off, Err: err}
	}
	return n, nil
}
