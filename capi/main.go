// Command capi is pagefeed's C ABI, built as a shared library:
//
//	go build -buildmode=c-shared -o python/pagefeed/libpagefeed.so ./capi
//
// It is what the Python package calls through ctypes; pagefeed.h declares
// the structs and status codes, the generated libpagefeed.h the functions.
//
// Contract:
//   - Loaders and batches are int64 handles into tables on the Go side;
//     no Go pointer is handed out. What callers read is C memory
//     (pf_batch descriptors, Arrow C Data structs, JSON strings) and the
//     buffers those point to: token matrices (and their position ids,
//     loss masks and cu_seqlens) in the loader's mmap'd buffers, Arrow
//     buffers that are the engine's read slots or decoded pages, pinned
//     (runtime.Pinner) until the batch goes back.
//   - Every call returns a status (PF_OK, PF_EOF from pf_next, or a
//     negative PF_ERR_* code) and leaves a message for pf_last_error on
//     the calling thread, like errno. No Go panic escapes a call.
//   - A loader is used by one thread at a time (the calls on one handle
//     are serialized), except that pf_close may be called while pf_next
//     blocks on another thread: that pf_next returns PF_ERR_CLOSED.
//   - pf_next blocks until a batch is ready; pf_next_wait waits at most a
//     timeout and returns PF_TIMEOUT with nothing taken, so that a caller
//     can run its signal handlers between waits and call again. Batches
//     hold the loader's fixed memory until pf_batch_release: a caller that
//     keeps them all blocks pf_next (backpressure). Batches stay valid
//     after pf_close.
//   - Every pointer argument is checked: NULL is PF_ERR_CONFIG, as is an
//     integer argument out of its range (the message names it).
//   - The Go runtime does not survive fork(): a process that forks after
//     loading the library must use it only in the parent.
package main

// #include <stdlib.h>
// #include "pagefeed.h"
import "C"

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"runtime/debug"
	"time"
	"unsafe"

	"github.com/pagefeed/pagefeed/rinas"
)

// abiVersion is pagefeed.h's PF_ABI_VERSION, defined there only, next to
// the structs it versions; the Python package checks it at load.
const abiVersion = C.PF_ABI_VERSION

var versionStr = C.CString(fmt.Sprintf("pagefeed capi %d", abiVersion)) // static, never freed

func main() {}

// call runs fn, maps its error to a status and leaves its message for
// pf_last_error; a panic becomes PF_ERR with the panic's message.
func call(fn func() error) (rc C.int) {
	defer func() {
		if r := recover(); r != nil {
			C.pf_set_error(C.CString(fmt.Sprintf("pagefeed: internal error: %v\n%s", r, debug.Stack())), 0)
			rc = statusErr
		}
	}()
	err := fn()
	st := status(err)
	if st >= 0 {
		C.pf_set_error(nil, 0)
	} else {
		C.pf_set_error(C.CString(err.Error()), C.int(errnoOf(err)))
	}
	return C.int(st)
}

// nonNil returns a config error naming the pointer argument that is NULL.
func nonNil(args ...any) error {
	for i := 0; i+1 < len(args); i += 2 {
		if reflect.ValueOf(args[i+1]).IsNil() {
			return fmt.Errorf("%w: argument %s is NULL", rinas.ErrConfig, args[i])
		}
	}
	return nil
}

// pf_version returns a static string naming the library and its ABI.
//
//export pf_version
func pf_version() *C.char { return versionStr }

// pf_abi_version returns the ABI version pagefeed.h describes.
//
//export pf_abi_version
func pf_abi_version() C.int { return abiVersion }

// pf_open opens a loader from a JSON config (see jsonConfig: rinas.Config
// in snake_case; unknown keys fail) and stores its handle in *out (0 when
// it fails): a caller that keeps *out where it closes from (pf_close_at)
// holds the loader from the moment it opens, with no step of its own in
// between that a signal could cut short.
//
//export pf_open
func pf_open(cfg *C.char, n C.size_t, out *C.int64_t) C.int {
	return call(func() error {
		if err := nonNil("cfg", cfg, "out", out); err != nil {
			return err
		}
		if n > 1<<30 {
			return fmt.Errorf("%w: config of %d bytes: want at most 1 GiB", rinas.ErrConfig, uint64(n))
		}
		h, err := openLoader(C.GoBytes(unsafe.Pointer(cfg), C.int(n)))
		*out = C.int64_t(h)
		return err
	})
}

// pf_next blocks for the next batch and stores its descriptor in *out
// (C memory, valid until pf_batch_release of out->handle); PF_EOF after
// the last epoch.
//
//export pf_next
func pf_next(h C.int64_t, out **C.pf_batch) C.int {
	return pf_next_wait(h, -1, out)
}

// pf_next_wait is pf_next waiting at most timeout_ms milliseconds (-1:
// for ever): PF_TIMEOUT when no batch came in time, with nothing taken
// (*out is NULL, and the next call waits again).
//
//export pf_next_wait
func pf_next_wait(h C.int64_t, timeoutMs C.int64_t, out **C.pf_batch) C.int {
	return call(func() error {
		// The per-batch call: its checks are plain comparisons.
		if out == nil {
			return nonNil("out", out)
		}
		*out = nil
		if timeoutMs < -1 || int64(timeoutMs) > math.MaxInt64/int64(time.Millisecond) {
			return checkRange("timeout_ms", int64(timeoutMs), -1, math.MaxInt64/int64(time.Millisecond), " (-1: no timeout)")
		}
		_, d, err := nextBatch(int64(h), time.Duration(timeoutMs)*time.Millisecond)
		*out = d
		return err
	})
}

// pf_unread gives batch b back to loader h unread: b must be the last
// batch pf_next returned, neither released nor exported. Its rows are
// delivered again by the next pf_next, pf_state counts them as not
// delivered, and b's descriptor is freed (do not release it). A caller
// whose hand-off of a batch was interrupted (a signal) calls it so that
// nothing is lost.
//
//export pf_unread
func pf_unread(h, b C.int64_t) C.int {
	return call(func() error { return unreadBatch(int64(h), int64(b)) })
}

// pf_batch_release gives a batch back; a second release of the same
// handle, or of an unknown one, does nothing.
//
//export pf_batch_release
func pf_batch_release(b C.int64_t) C.int {
	return call(func() error { releaseBatch(int64(b)); return nil })
}

// pf_batch_export exports chunk i of column c of batch b into zeroed
// structs the caller owns (Arrow C Data Interface, ownership moves to the
// consumer). The batch's memory stays valid until the array's release is
// called, even after pf_batch_release.
//
//export pf_batch_export
func pf_batch_export(b C.int64_t, c, i C.int64_t, arr *C.struct_ArrowArray, sch *C.struct_ArrowSchema) C.int {
	return call(func() error {
		if err := nonNil("arr", arr, "sch", sch); err != nil {
			return err
		}
		return exportChunk(int64(b), int64(c), int64(i), arr, sch)
	})
}

// pf_state stores the loader's checkpoint, as JSON, in *out (free it with
// pf_free): the state after the last batch pf_next returned. flags
// PF_STATE_COMPACT leaves out the fields that name the loader (dataset,
// files, columns, lead, shuffle, output: the same in every state of one
// open loader); add them back from a full state of the same loader.
//
//export pf_state
func pf_state(h C.int64_t, flags C.int, out **C.char) C.int {
	return call(func() error {
		if err := nonNil("out", out); err != nil {
			return err
		}
		if flags&^C.PF_STATE_COMPACT != 0 {
			return fmt.Errorf("%w: flags %#x: want 0 or PF_STATE_COMPACT", rinas.ErrConfig, int(flags))
		}
		b, err := stateJSON(int64(h), flags&C.PF_STATE_COMPACT != 0)
		if err == nil {
			*out = C.CString(string(b))
		}
		return err
	})
}

// pf_reshard turns a JSON array of every rank's state into one for a
// world of world ranks (JSON array in *out; free it with pf_free).
//
//export pf_reshard
func pf_reshard(states *C.char, world C.int64_t, out **C.char) C.int {
	return call(func() error {
		if err := nonNil("states", states, "out", out); err != nil {
			return err
		}
		b, err := reshardJSON([]byte(C.GoString(states)), int64(world))
		if err == nil {
			*out = C.CString(string(b))
		}
		return err
	})
}

// pf_free frees a string returned by pf_state or pf_reshard.
//
//export pf_free
func pf_free(p unsafe.Pointer) { C.free(p) }

// pf_len stores in *out the loader's batches for its rank in the epoch of
// the last batch pf_next returned (before the first: the epoch it opened
// at, a resumed epoch counted whole); it never waits for a pf_next
// blocked on another thread. See rinas.Loader.Len for how exact it is.
//
//export pf_len
func pf_len(h C.int64_t, out *C.int64_t) C.int {
	return call(func() error {
		if err := nonNil("out", out); err != nil {
			return err
		}
		n, err := loaderLen(int64(h))
		*out = C.int64_t(n)
		return err
	})
}

// pf_epoch_len stores in *out the loader's batches for its rank in epoch
// (0 or more): the epoch being read as it runs (resumed or resharded), any
// other as a fresh start of it plans it (rinas.Loader.EpochLen). It waits
// for a pf_next in progress on another thread.
//
//export pf_epoch_len
func pf_epoch_len(h C.int64_t, epoch C.int64_t, out *C.int64_t) C.int {
	return call(func() error {
		if err := nonNil("out", out); err != nil {
			return err
		}
		n, err := epochLen(int64(h), int64(epoch))
		*out = C.int64_t(n)
		return err
	})
}

// pf_close closes a loader, ending a pf_next blocked on another thread.
// Batches not yet released stay valid until released.
//
//export pf_close
func pf_close(h C.int64_t) C.int {
	return call(func() error { return closeLoader(int64(h)) })
}

// pf_close_at closes the loader whose handle is in *h and stores 0 there,
// in one call, so that a caller whose own code can be interrupted between
// any two steps (a signal handler that raises) never holds a handle it
// closed nor loses one it did not: *h is 0 exactly when the loader is no
// longer open. A *h of 0 or of a loader already closed is PF_OK.
//
//export pf_close_at
func pf_close_at(h *C.int64_t) C.int {
	return call(func() error {
		if err := nonNil("h", h); err != nil {
			return err
		}
		if *h == 0 {
			return nil
		}
		err := closeLoader(int64(*h))
		*h = 0 // closeLoader forgets the handle whatever Close returns
		if errors.Is(err, errClosed) {
			return nil
		}
		return err
	})
}

// pf_stats stores in *out the loader's counters as a JSON object
// (rinas.Stats' field names; a mixture's per-source counters under
// "Sources"), C-allocated: free it with pf_free.
//
//export pf_stats
func pf_stats(h C.int64_t, out **C.char) C.int {
	return call(func() error {
		if err := nonNil("out", out); err != nil {
			return err
		}
		b, err := statsJSON(int64(h))
		if err == nil {
			*out = C.CString(string(b))
		}
		return err
	})
}
