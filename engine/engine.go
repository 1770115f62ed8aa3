// Package engine is pagefeed's data plane: workers that each own an io_uring
// ring on a locked OS thread, an aligned slot pool, batched submission and
// completions delivered in the order the device returns them.
//
// A pread worker pool implements the same contract where io_uring cannot be
// set up (ENOSYS, EPERM, ENOMEM) or when asked for; buffered reads replace
// O_DIRECT where a file system refuses it. Both fallbacks are reported once
// through Options.Logf and in Info.
//
// Contract summary:
//   - Submit blocks while every slot is in use (backpressure) and returns
//     when the requests are queued, not when they complete.
//   - Each request completes exactly once, with either the exact requested
//     bytes (fewer only past the file's size at Open) or an error of type
//     *Error; a file that shrank under a read fails it with ErrChanged.
//   - Completion.Data stays valid, and its slot stays taken, until Release.
//   - An io_uring_enter failure retrying cannot fix fails the requests it
//     did not submit; after several in a row the worker gives up on its
//     ring, failing the reads left in the kernel and every later request.
//   - Close waits for every read in flight and every worker goroutine;
//     calls after Close return ErrClosed. Completions not yet released
//     stay valid: the last Release unmaps the slot memory.
//
// Threads and wakeups: each io_uring worker is a goroutine locked to its OS
// thread (pinned to its Options.CPUSets entry), owning a ring set up with
// fio's flag ladder and one mmap'd slot region, registered as fixed buffers
// when RLIMIT_MEMLOCK allows. Its cycle is: take the mailbox, prepare SQEs,
// one io_uring_enter (submit + wait for at least one completion), reap
// every ready CQE and advance the CQ head once, then run Handlers and fill
// queues outside the reap loop. Submissions from other goroutines land in
// a per-worker mailbox; a worker asleep in io_uring_enter is woken by a
// write to an eventfd whose READ it keeps armed in its own ring, and only
// when it is asleep, so an idle worker costs nothing and a busy one no
// extra syscall.
//
// Completion.Resubmit (from a Handler) reuses the slot with no lock, no
// channel and no allocation on io_uring: fio's closed loop.
//
// The engine owns every byte-range read of pagefeed, not only the queued
// ones: File.ReadAt and File.ReadSpan read one range on the caller's
// goroutine under the same alignment rules (OpenFile opens a file for them
// without an engine), and BatchReader (RangeReader over an engine,
// PreadReader without one, OpenBatchReader choosing) reads many ranges at
// once for the index build. Fault injectors for tests live in enginetest.
package engine

import (
	"errors"
	"fmt"
)

// Sentinel errors.
var (
	// ErrClosed is returned by every call made after Close.
	ErrClosed = errors.New("engine: closed")
	// ErrTooLarge is returned for a request longer than a slot can hold.
	ErrTooLarge = errors.New("engine: request larger than slot")
	// ErrAlignment reports an O_DIRECT read the kernel refused (EINVAL).
	ErrAlignment = errors.New("engine: direct I/O alignment")
	// ErrChanged reports a read that stopped making progress before the
	// bytes the file held at Open: the file shrank (or was replaced)
	// since. Retrying cannot help; the request fails like any read error.
	ErrChanged = errors.New("engine: file changed since open")
)

// Error is the structured error of a failed operation, after io/fs.PathError.
type Error struct {
	Op   string // "open", "read", "setup", ...
	Path string
	Off  int64
	Err  error
}

func (e *Error) Error() string {
	if e.Path == "" { // setup and other operations on no file
		return fmt.Sprintf("engine: %s: %v", e.Op, e.Err)
	}
	return fmt.Sprintf("%s %s at offset %d: %v", e.Op, e.Path, e.Off, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }
