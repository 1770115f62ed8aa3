package engine

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// TestFaultsTransientBounded: a device that answers EAGAIN (or EINTR,
// ECANCELED) forever must fail the request after maxTransient retries, not
// hang the consumer.
func TestFaultsTransientBounded(t *testing.T) {
	data := content(64 << 10)
	path := writeFile(t, data, false)
	for _, kind := range []Kind{IOUring, Pread} {
		for _, errno := range []unix.Errno{unix.EAGAIN, unix.EINTR, unix.ECANCELED} {
			t.Run(fmt.Sprintf("%v/%v", kind, errno), func(t *testing.T) {
				var attempts atomic.Int64
				e := newEngine(t, Options{Kind: kind, QueueDepth: 4, SlotSize: 64 << 10, Faults: FaultFunc(func(_ *File, _ int64, _, _ int) int {
					attempts.Add(1)
					return -int(errno)
				})})
				f, err := e.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				q := e.NewQueue(QueueOptions{})
				if err := q.Submit(context.Background(), []Request{{File: f, Off: 100, Len: 1000, Worker: -1}}); err != nil {
					t.Fatal(err)
				}
				c, err := q.Next(testCtx(t))
				if err != nil {
					t.Fatal(err)
				}
				defer c.Release()
				var ee *Error
				if !errors.As(c.Err, &ee) || !errors.Is(c.Err, errno) || ee.Off != 100 || ee.Path != path {
					t.Fatalf("completion error %v, want read %v at 100 of %s", c.Err, errno, path)
				}
				if got := attempts.Load(); got != maxTransient+1 {
					t.Fatalf("%d attempts, want %d", got, maxTransient+1)
				}
			})
		}
	}
}

// TestClampFault: an injector may fail or shorten an attempt, never invent
// bytes or fake an end of file.
func TestClampFault(t *testing.T) {
	for _, tc := range []struct{ res, got, want int }{
		{100, 100, 100},
		{100, 50, 50},
		{100, 0, 1},     // not an EOF
		{100, 200, 100}, // no invented bytes
		{100, -5, -5},
		{0, 7, 0},   // EOF stays EOF
		{-5, 7, -5}, // an error stays an error unless replaced by another
		{-5, -4, -4},
	} {
		if got := clampFault(tc.res, tc.got); got != tc.want {
			t.Errorf("clampFault(%d, %d) = %d, want %d", tc.res, tc.got, got, tc.want)
		}
	}
}

// BenchmarkFaultHookOff is Engine.fault without an injector: the cost the
// hook adds to every production read attempt.
func BenchmarkFaultHookOff(b *testing.B) {
	e := &Engine{}
	s := &slot{}
	b.ReportAllocs()
	sum := 0
	for i := 0; i < b.N; i++ {
		sum += e.fault(s, 4096)
	}
	b.ReportMetric(float64(sum)/float64(b.N), "res")
}
