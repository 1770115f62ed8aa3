package main

// #include <stdlib.h>
// #include "pagefeed.h"
import "C"

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/cdata"
	"github.com/pagefeed/pagefeed/rinas"
)

// Go objects never cross the boundary: callers hold int64 handles into
// these tables, and what they read is C memory (the descriptors below) or
// the buffers those point to (the engine's mmap'd slots and token buffers,
// or decoded pages the batch pins; see pinData).
var table = struct {
	sync.Mutex
	next    int64
	loaders map[int64]*loaderEnt
	batches map[int64]*batchEnt
}{loaders: map[int64]*loaderEnt{}, batches: map[int64]*batchEnt{}}

func register[T any](m map[int64]*T, v *T) int64 {
	table.Lock()
	defer table.Unlock()
	table.next++
	m[table.next] = v
	return table.next
}

func lookup[T any](m map[int64]*T, h int64) *T {
	table.Lock()
	defer table.Unlock()
	return m[h]
}

// loaderEnt is one open loader. mu serializes Next, State, EpochLen and
// Close (a rinas.Loader is used by one goroutine); cancel lets Close end a
// Next that is blocked on another thread.
type loaderEnt struct {
	mu     sync.Mutex
	l      *rinas.Loader
	x      extras // what each descriptor carries beyond the tokens
	ctx    context.Context
	cancel context.CancelFunc
	// n is Len of the epoch of the last batch Next returned (of Open's
	// epoch before the first), kept apart so that pf_len never waits for
	// a Next blocked on another thread.
	n atomic.Int64
	// slice is the context of timed waits (pf_next_wait): one deadline
	// serves every call that ends before it, so that a wait in slices
	// costs no allocation per batch.
	slice       context.Context
	sliceCancel context.CancelFunc
	sliceEnd    time.Time
	// last is the handle of the last batch Next returned, while neither
	// released nor exported: the one pf_unread may give back.
	last int64
}

// batchEnt is one batch handed out. refs counts the caller's reference
// (dropped by pf_batch_release) and one per array exported by
// pf_batch_export whose release the consumer has not called; the batch
// goes back to the loader when it reaches zero.
type batchEnt struct {
	b      *rinas.Batch
	loader int64 // the handle of the loader that returned it
	desc   *C.pf_batch
	pin    runtime.Pinner
	refs   atomic.Int64
	mu     sync.Mutex
	gone   bool // the caller released it
}

func openLoader(cfgJSON []byte) (int64, error) {
	cfg, x, err := parseConfig(cfgJSON)
	if err != nil {
		return 0, err
	}
	l, err := rinas.Open(context.Background(), cfg)
	if err != nil {
		return 0, err
	}
	e := &loaderEnt{l: l, x: x}
	e.n.Store(int64(l.Len()))
	e.ctx, e.cancel = context.WithCancel(context.Background())
	return register(table.loaders, e), nil
}

// withLoader runs fn on loader h under its lock.
func withLoader(h int64, fn func(e *loaderEnt) error) error {
	e := lookup(table.loaders, h)
	if e == nil {
		return fmt.Errorf("%w: loader %d", errClosed, h)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.l == nil {
		return fmt.Errorf("%w: loader %d", errClosed, h)
	}
	return fn(e)
}

// errTimeout is what a timed wait returns when no batch came in time
// (PF_TIMEOUT): nothing was taken, and the next call waits again.
var errTimeout = errors.New("pagefeed: no batch within the wait's timeout")

// waitCtx returns the context for a Next that waits at most d (d < 0: until
// Close). A deadline set by an earlier call is reused while it falls
// within d, so that the waits of a loader that keeps up cost no timer.
func (e *loaderEnt) waitCtx(d time.Duration) context.Context {
	if d < 0 {
		return e.ctx
	}
	now := time.Now()
	if e.slice != nil && e.sliceEnd.After(now) && !e.sliceEnd.After(now.Add(d)) {
		return e.slice
	}
	if e.sliceCancel != nil {
		e.sliceCancel()
	}
	e.sliceEnd = now.Add(d)
	e.slice, e.sliceCancel = context.WithDeadline(e.ctx, e.sliceEnd)
	return e.slice
}

// nextBatch returns the next batch's handle and C descriptor, waiting at
// most timeout (< 0: until one comes or Close); errTimeout when none came.
func nextBatch(h int64, timeout time.Duration) (int64, *C.pf_batch, error) {
	var b *rinas.Batch
	var x extras
	var bh int64
	var desc *C.pf_batch
	err := withLoader(h, func(e *loaderEnt) error {
		// A Next cut short keeps what it waited for (rinas assembles
		// transactionally): the next call goes on from there.
		ctx := e.waitCtx(timeout)
		var err error
		b, err = e.l.Next(ctx)
		if err != nil {
			if e.ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
				// Close ended the wait: whichever of its cancel and the
				// slice's deadline the loader saw first, it is closed.
				return fmt.Errorf("%w: loader %d closed while next waited", errClosed, h)
			}
			if ctx != e.ctx && errors.Is(err, context.DeadlineExceeded) {
				return errTimeout
			}
			return err
		}
		e.n.Store(int64(e.l.Len()))
		x = e.x
		be := &batchEnt{b: b, loader: h}
		be.refs.Store(1)
		bh = register(table.batches, be)
		desc, err = describeBatch(bh, b, x, &be.pin)
		if err != nil {
			// The batch never reached the caller: its rows go back
			// to the loader rather than being lost.
			table.Lock()
			delete(table.batches, bh)
			table.Unlock()
			be.pin.Unpin()
			if uerr := unread(e.l, b); uerr != nil {
				b.Release()
				return fmt.Errorf("%w (and giving the batch back: %v)", err, uerr)
			}
			return err
		}
		be.desc = desc
		e.last = bh
		return nil
	})
	if err != nil {
		return 0, nil, err
	}
	return bh, desc, nil
}

// unreadBatch gives batch bh, the last that loader h's Next returned and
// neither released nor exported, back to the loader: its rows are
// delivered again by the next Next, and the loader's state counts them
// as not delivered. Its descriptor is freed.
func unreadBatch(h, bh int64) error {
	return withLoader(h, func(e *loaderEnt) error {
		be := lookup(table.batches, bh)
		if be == nil || be.loader != h || bh != e.last {
			return fmt.Errorf("%w: batch %d is not the last batch loader %d returned", rinas.ErrConfig, bh, h)
		}
		be.mu.Lock()
		defer be.mu.Unlock()
		if be.gone || be.refs.Load() != 1 {
			return fmt.Errorf("%w: batch %d was released or exported", rinas.ErrConfig, bh)
		}
		if err := unread(e.l, be.b); err != nil {
			return err
		}
		be.gone = true
		e.last = 0
		table.Lock()
		delete(table.batches, bh)
		table.Unlock()
		freeDesc(be.desc)
		be.desc = nil
		be.pin.Unpin()
		return nil
	})
}

// unread gives b back to l (rinas.Loader.Unread); a batch l cannot take
// back is the caller's mistake, a config error.
func unread(l *rinas.Loader, b *rinas.Batch) error {
	err := l.Unread(b)
	if errors.Is(err, rinas.ErrUnread) {
		return fmt.Errorf("%w: %v", rinas.ErrConfig, err)
	}
	return err
}

// describeBatch is describe, but where a test makes it fail
// (failDescribe).
var describeBatch = describe

// failDescribe makes describeBatch fail with err until restore is called
// (for tests, which cannot name cgo's types).
func failDescribe(err error) (restore func()) {
	describeBatch = func(int64, *rinas.Batch, extras, *runtime.Pinner) (*C.pf_batch, error) { return nil, err }
	return func() { describeBatch = describe }
}

// describe builds the C descriptor of b: its token matrix (and the
// per-token arrays x asks for), or its column chunks exported through the
// Arrow C Data Interface.
func describe(bh int64, b *rinas.Batch, x extras, pin *runtime.Pinner) (*C.pf_batch, error) {
	d := (*C.pf_batch)(C.calloc(1, C.sizeof_pf_batch))
	d.handle = C.int64_t(bh)
	d.rows = C.int64_t(b.Rows)
	d.epoch = C.uint64_t(b.Epoch)
	if err := describeTokens(d, b, x); err != nil {
		freeDesc(d)
		return nil, err
	}
	ncols := len(b.Columns)
	if ncols == 0 {
		return d, nil
	}
	nchunks := len(b.Columns[0].Arrays)
	for _, c := range b.Columns {
		if len(c.Arrays) != nchunks {
			freeDesc(d)
			return nil, fmt.Errorf("pagefeed: column %s has %d chunks, %s has %d", c.Name, len(c.Arrays), b.Columns[0].Name, nchunks)
		}
	}
	d.ncols, d.nchunks = C.int64_t(ncols), C.int64_t(nchunks)
	d.names = (**C.char)(C.calloc(C.size_t(ncols), C.size_t(unsafe.Sizeof((*C.char)(nil)))))
	d.schemas = (*C.struct_ArrowSchema)(C.calloc(C.size_t(ncols), C.sizeof_struct_ArrowSchema))
	if nchunks > 0 {
		d.arrays = (*C.struct_ArrowArray)(C.calloc(C.size_t(ncols*nchunks), C.sizeof_struct_ArrowArray))
	}
	names := unsafe.Slice(d.names, ncols)
	schemas := unsafe.Slice(d.schemas, ncols)
	arrays := unsafe.Slice(d.arrays, ncols*nchunks)
	for c, col := range b.Columns {
		names[c] = C.CString(col.Name)
		for i, a := range col.Arrays {
			pinData(pin, a.Data())
			var sch *cdata.CArrowSchema
			if i == 0 {
				sch = cdata.SchemaFromPtr(uintptr(unsafe.Pointer(&schemas[c])))
			}
			cdata.ExportArrowArray(a, cdata.ArrayFromPtr(uintptr(unsafe.Pointer(&arrays[c*nchunks+i]))), sch)
		}
	}
	return d, nil
}

// describeTokens fills d's token fields. Every pointer it stores is into
// the batch's token buffer, which rinas maps outside the Go heap, so C
// memory may hold it (cgo's pointer rules) without pinning; the lengths
// are checked against the matrix's so that a caller never reads past what
// the batch holds.
func describeTokens(d *C.pf_batch, b *rinas.Batch, x extras) error {
	n := max(len(b.Tokens), len(b.Tokens64))
	if n == 0 || b.SeqLen <= 0 {
		return nil
	}
	if n%b.SeqLen != 0 || (len(b.Tokens) > 0 && len(b.Tokens64) > 0) {
		return fmt.Errorf("pagefeed: token matrix of %d int32 and %d int64 values, seq_len %d", len(b.Tokens), len(b.Tokens64), b.SeqLen)
	}
	d.tok_rows = C.int64_t(n / b.SeqLen)
	d.seq_len = C.int64_t(b.SeqLen)
	if len(b.Tokens) > 0 {
		d.tokens = (*C.int32_t)(unsafe.Pointer(&b.Tokens[0]))
	} else {
		d.tokens64 = (*C.int64_t)(unsafe.Pointer(&b.Tokens64[0]))
	}
	if x.positionIDs {
		if len(b.PositionIDs) != n {
			return fmt.Errorf("pagefeed: %d position ids for %d tokens", len(b.PositionIDs), n)
		}
		d.position_ids = (*C.int32_t)(unsafe.Pointer(&b.PositionIDs[0]))
	}
	if x.lossMask {
		if len(b.LossMask) != n {
			return fmt.Errorf("pagefeed: loss mask of %d for %d tokens", len(b.LossMask), n)
		}
		d.loss_mask = (*C.uint8_t)(unsafe.Pointer(&b.LossMask[0]))
	}
	if x.cuSeqlens {
		cu := b.CuSeqlens
		if len(cu) < 2 || cu[0] != 0 || int(cu[len(cu)-1]) != n {
			return fmt.Errorf("pagefeed: cu_seqlens %v… (%d values) for %d tokens", cu[:min(len(cu), 4)], len(cu), n)
		}
		d.cu_seqlens = (*C.int32_t)(unsafe.Pointer(&cu[0]))
		d.n_cu = C.int64_t(len(cu))
	}
	return nil
}

// pinData pins the Go memory behind an exported array so that C may keep
// pointers to it (cgo's rule for C memory holding Go pointers); buffers in
// the engine's mmap'd memory are not Go pointers and Pin ignores them.
// The batch unpins when it goes back to the loader.
func pinData(pin *runtime.Pinner, d arrow.ArrayData) {
	for _, b := range d.Buffers() {
		if b != nil && b.Len() > 0 {
			pin.Pin(&b.Bytes()[0])
		}
	}
	for _, c := range d.Children() {
		pinData(pin, c)
	}
	if d.DataType().ID() == arrow.DICTIONARY {
		pinData(pin, d.Dictionary())
	}
}

// freeDesc releases the exported arrays and schemas and frees d.
func freeDesc(d *C.pf_batch) {
	ncols, nchunks := int(d.ncols), int(d.nchunks)
	if ncols > 0 {
		arrays := unsafe.Slice(d.arrays, ncols*nchunks)
		for i := range arrays {
			if arrays[i].release != nil {
				cdata.ReleaseCArrowArray(cdata.ArrayFromPtr(uintptr(unsafe.Pointer(&arrays[i]))))
			}
		}
		schemas := unsafe.Slice(d.schemas, ncols)
		for i := range schemas {
			if schemas[i].release != nil {
				cdata.ReleaseCArrowSchema(cdata.SchemaFromPtr(uintptr(unsafe.Pointer(&schemas[i]))))
			}
		}
		for _, n := range unsafe.Slice(d.names, ncols) {
			C.free(unsafe.Pointer(n))
		}
	}
	C.free(unsafe.Pointer(d.arrays))
	C.free(unsafe.Pointer(d.schemas))
	C.free(unsafe.Pointer(d.names))
	C.free(unsafe.Pointer(d))
}

// releaseBatch drops the caller's reference to batch bh. Releasing a
// batch twice, or an unknown handle, does nothing.
func releaseBatch(bh int64) {
	be := lookup(table.batches, bh)
	if be == nil {
		return
	}
	be.mu.Lock()
	if be.gone {
		be.mu.Unlock()
		return
	}
	be.gone = true
	d := be.desc
	be.desc = nil
	be.mu.Unlock()
	if d != nil {
		freeDesc(d)
	}
	unrefBatch(bh)
}

// unrefBatch drops one reference; the last gives the batch back.
//
//export pfBatchUnref
func pfBatchUnref(bh C.int64_t) { unrefBatch(int64(bh)) }

func unrefBatch(bh int64) {
	be := lookup(table.batches, bh)
	if be == nil || be.refs.Add(-1) != 0 {
		return
	}
	table.Lock()
	delete(table.batches, bh)
	table.Unlock()
	be.pin.Unpin()
	be.b.Release()
}

// exportChunk exports chunk i of column c of batch bh into the caller's
// zeroed structs, for a consumer such as pyarrow that takes ownership:
// the batch stays out of the loader until that consumer calls the
// array's release, as well as until pf_batch_release.
func exportChunk(bh int64, c, i int64, arr *C.struct_ArrowArray, sch *C.struct_ArrowSchema) error {
	be := lookup(table.batches, bh)
	if be == nil {
		return fmt.Errorf("%w: batch %d", errClosed, bh)
	}
	be.mu.Lock()
	defer be.mu.Unlock()
	if be.gone {
		return fmt.Errorf("%w: batch %d released", errClosed, bh)
	}
	b := be.b
	if c < 0 || c >= int64(len(b.Columns)) || i < 0 || i >= int64(len(b.Columns[c].Arrays)) {
		return fmt.Errorf("%w: no chunk %d of column %d", rinas.ErrConfig, i, c)
	}
	a := b.Columns[c].Arrays[i]
	pinData(&be.pin, a.Data()) // already pinned by describe; cheap
	cdata.ExportArrowArray(a, cdata.ArrayFromPtr(uintptr(unsafe.Pointer(arr))), cdata.SchemaFromPtr(uintptr(unsafe.Pointer(sch))))
	be.refs.Add(1)
	if C.pf_wrap_release(arr, C.int64_t(bh)) != 0 {
		cdata.ReleaseCArrowArray(cdata.ArrayFromPtr(uintptr(unsafe.Pointer(arr))))
		cdata.ReleaseCArrowSchema(cdata.SchemaFromPtr(uintptr(unsafe.Pointer(sch))))
		be.refs.Add(-1)
		return fmt.Errorf("pagefeed: out of C memory")
	}
	return nil
}

// stateJSON returns the loader's state as JSON; compact leaves out the
// fields that name the loader (dataset, files, columns, lead, shuffle,
// output), which are the same in every state one loader takes, so that a
// caller that records a state per batch copies only what changes.
func statsJSON(h int64) ([]byte, error) {
	var out []byte
	err := withLoader(h, func(e *loaderEnt) error {
		var err error
		out, err = json.Marshal(e.l.Stats())
		return err
	})
	return out, err
}

func stateJSON(h int64, compact bool) ([]byte, error) {
	var out []byte
	err := withLoader(h, func(e *loaderEnt) error {
		var err error
		if compact {
			out, err = json.Marshal(compactState{State: e.l.State()})
		} else {
			out, err = rinas.MarshalState(e.l.State())
		}
		return err
	})
	return out, err
}

// compactState marshals a State without the fields that name the loader:
// each of these shadows the embedded State's field of the same JSON name
// and, nil, is left out.
type compactState struct {
	*rinas.State
	Dataset *struct{} `json:"dataset,omitempty"`
	Files   *struct{} `json:"files,omitempty"`
	Columns *struct{} `json:"columns,omitempty"`
	Lead    *struct{} `json:"lead,omitempty"`
	Shuffle *struct{} `json:"shuffle,omitempty"`
	Output  *struct{} `json:"output,omitempty"`
}

// loaderLen returns the loader's batches for this rank in the epoch of
// the last batch Next returned (Open's epoch before the first one:
// rinas.Loader.Len), recorded after each Next so that it never waits for
// a pf_next blocked on another thread.
func loaderLen(h int64) (int64, error) {
	e := lookup(table.loaders, h)
	if e == nil {
		return 0, fmt.Errorf("%w: loader %d", errClosed, h)
	}
	return e.n.Load(), nil
}

// epochLen returns the loader's batches for this rank in epoch
// (rinas.Loader.EpochLen).
func epochLen(h int64, epoch int64) (int64, error) {
	if epoch < 0 {
		return 0, fmt.Errorf("%w: epoch %d: want 0..%d", rinas.ErrConfig, epoch, int64(math.MaxInt64))
	}
	var n int
	err := withLoader(h, func(e *loaderEnt) error {
		var err error
		n, err = e.l.EpochLen(uint64(epoch))
		return err
	})
	return int64(n), err
}

// closeLoader ends a Next blocked on another thread, then closes. Batches
// not yet released stay valid until released.
func closeLoader(h int64) error {
	e := lookup(table.loaders, h)
	if e == nil {
		return fmt.Errorf("%w: loader %d", errClosed, h)
	}
	e.cancel()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.sliceCancel != nil {
		e.sliceCancel()
	}
	table.Lock()
	delete(table.loaders, h)
	table.Unlock()
	if e.l == nil {
		return nil
	}
	err := e.l.Close()
	e.l = nil
	return err
}

// reshardJSON reshards a JSON array of states to world ranks.
func reshardJSON(in []byte, world int64) ([]byte, error) {
	if err := checkRange("world", world, 1, maxWorld, ""); err != nil {
		return nil, err
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(in, &raw); err != nil {
		return nil, fmt.Errorf("%w: states: %v", rinas.ErrState, err)
	}
	states := make([]*rinas.State, len(raw))
	for i, r := range raw {
		s, err := rinas.UnmarshalState(r)
		if err != nil {
			return nil, err
		}
		states[i] = s
	}
	out, err := rinas.Reshard(states, int(world))
	if err != nil {
		return nil, err
	}
	return json.Marshal(out)
}

// goString copies a C string into Go (for tests, which cannot use cgo).
func goString(p unsafe.Pointer) string { return C.GoString((*C.char)(p)) }

// lastError is pf_last_error in Go (for tests, which cannot use cgo).
func lastError() string { return C.GoString(C.pf_last_error()) }
