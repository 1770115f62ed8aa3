//go:build linux

package engine

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pagefeed/pagefeed/ring"
)

// enterFaults fails every io_uring_enter once on is set, passing reads
// through untouched.
type enterFaults struct {
	on      atomic.Bool
	errno   syscall.Errno
	calls   atomic.Int64 // enters seen
	enters  atomic.Int64 // enters failed
	attempt atomic.Int64 // read attempts seen
}

func (f *enterFaults) Fault(_ *File, _ int64, _, res int) int { f.attempt.Add(1); return res }

func (f *enterFaults) FaultEnter(int) syscall.Errno {
	f.calls.Add(1)
	if !f.on.Load() {
		return 0
	}
	f.enters.Add(1)
	return f.errno
}

// TestEnterFailuresFailRequests: an io_uring_enter that keeps failing with
// an errno retrying cannot fix must not leave requests counted in flight.
// Every request completes with a read error wrapping the errno, the worker
// gives up on its ring after a bounded number of enters (no spin), later
// requests fail at once, and Close returns. Where the failures start
// before the reads reach the kernel, the enter's SQEs are taken back;
// where reads are in the kernel (reads of an empty pipe, which never
// complete), they fail when the worker gives up, their slots kept out of
// use.
func TestEnterFailuresFailRequests(t *testing.T) {
	for _, tc := range []struct {
		name     string
		flags    []uint32
		inKernel bool
	}{
		{"before-submit/defer-taskrun", []uint32{ring.SetupSingleIssuer | ring.SetupDeferTaskrun}, false},
		{"before-submit/plain", []uint32{0}, false},
		{"in-kernel/defer-taskrun", []uint32{ring.SetupSingleIssuer | ring.SetupDeferTaskrun}, true},
		{"in-kernel/plain", []uint32{0}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inj := &enterFaults{errno: unix.ENXIO}
			e := newEngine(t, Options{Kind: IOUring, QueueDepth: 8, SlotSize: 64 << 10, RingFlags: tc.flags, Faults: inj, Direct: Off})
			var path string
			if tc.inKernel {
				var p [2]int
				if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { unix.Close(p[0]); unix.Close(p[1]) })
				path = fmt.Sprintf("/proc/self/fd/%d", p[0])
			} else {
				path = writeFile(t, content(1<<20), false)
			}
			f, err := e.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			f.size = 1 << 20 // a pipe's size is 0: let reads of it reach the kernel
			const n = 8
			var got atomic.Int64
			var bad atomic.Value
			q := e.NewQueue(QueueOptions{Handler: func(c *Completion) {
				defer c.Release()
				got.Add(1)
				var ee *Error
				if !errors.As(c.Err, &ee) || ee.Op != "read" || ee.Path != path || ee.Off != c.Off || !errors.Is(c.Err, unix.ENXIO) {
					bad.Store(fmt.Sprintf("tag %d: error %v, want a read error naming %s at %d wrapping ENXIO", c.Tag, c.Err, path, c.Off))
				}
			}})
			reqs := make([]Request, n)
			for i := range reqs {
				reqs[i] = Request{File: f, Off: 0, Len: 100, Tag: uint64(i), Worker: -1}
			}
			if tc.inKernel {
				// The pipe reads block in the kernel. Once the enter that
				// submits the first of them has been made, every later
				// enter fails.
				if err := q.Submit(testCtx(t), reqs[:4]); err != nil {
					t.Fatal(err)
				}
				for inj.calls.Load() < 2 {
					time.Sleep(time.Millisecond)
				}
				inj.on.Store(true)
				if err := q.Submit(testCtx(t), reqs[4:]); err != nil {
					t.Fatal(err)
				}
			} else {
				inj.on.Store(true)
				if err := q.Submit(testCtx(t), reqs); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithTimeout(testCtx(t), 20*time.Second)
			defer cancel()
			if err := q.Settle(ctx); err != nil {
				t.Fatalf("%d of %d requests completed (%d enters failed): %v", got.Load(), n, inj.enters.Load(), err)
			}
			if msg := bad.Load(); msg != nil {
				t.Fatal(msg)
			}
			if k := inj.enters.Load(); k > maxEnterErrors {
				t.Fatalf("%d failed enters, want at most %d", k, maxEnterErrors)
			}
			// Requests on a worker that gave up fail at once.
			if tc.inKernel {
				if err := q.Submit(testCtx(t), reqs[:1]); err != nil {
					t.Fatal(err)
				}
				if err := q.Settle(ctx); err != nil {
					t.Fatal(err)
				}
			}
			closed := make(chan error, 1)
			go func() { closed <- e.Close() }()
			select {
			case err := <-closed:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("Close did not return")
			}
			if msg := bad.Load(); msg != nil {
				t.Fatal(msg)
			}
			if tc.inKernel {
				lost := 0
				for i := range e.workers[0].slots {
					if e.workers[0].slots[i].lost {
						lost++
					}
				}
				if lost == 0 || got.Load() != n+1 {
					t.Fatalf("%d slots kept out of use, %d completions for %d requests", lost, got.Load(), n+1)
				}
			}
		})
	}
}
