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
//   - pf_next blocks until a batch is ready. Batches hold the loader's
//     fixed memory until pf_batch_release: a caller that keeps them all
//     blocks pf_next (backpressure). Batches stay valid after pf_close.
//   - The Go runtime does not survive fork(): a process that forks after
//     loading the library must use it only in the parent.
package main

// #include <stdlib.h>
// #include "pagefeed.h"
import "C"

import (
	"fmt"
	"runtime/debug"
	"unsafe"
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
			C.pf_set_error(C.CString(fmt.Sprintf("pagefeed: internal error: %v\n%s", r, debug.Stack())))
			rc = statusErr
		}
	}()
	err := fn()
	st := status(err)
	if err == nil || st == statusEOF {
		C.pf_set_error(nil)
	} else {
		C.pf_set_error(C.CString(err.Error()))
	}
	return C.int(st)
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
// in snake_case; unknown keys fail) and stores its handle in *out.
//
//export pf_open
func pf_open(cfg *C.char, n C.size_t, out *C.int64_t) C.int {
	return call(func() error {
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
	return call(func() error {
		_, d, err := nextBatch(int64(h))
		*out = d
		return err
	})
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
	return call(func() error { return exportChunk(int64(b), int(c), int(i), arr, sch) })
}

// pf_state stores the loader's checkpoint, as JSON, in *out (free it with
// pf_free): the state after the last batch pf_next returned.
//
//export pf_state
func pf_state(h C.int64_t, out **C.char) C.int {
	return call(func() error {
		b, err := stateJSON(int64(h))
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
		b, err := reshardJSON([]byte(C.GoString(states)), int(world))
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

// pf_len stores the loader's batches per epoch for its rank in *out
// (known at open; see rinas.Loader.Len for how exact it is).
//
//export pf_len
func pf_len(h C.int64_t, out *C.int64_t) C.int {
	return call(func() error {
		n, err := loaderLen(int64(h))
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
