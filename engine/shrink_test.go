package engine

import (
	"context"
	"errors"
	"os"
	"sync/atomic"
	"testing"
	"time"
)

// TestShrunkFileFailsRead: a file truncated after Open inside a requested
// range makes every further attempt return the same short count (or 0).
// The read must fail at once with ErrChanged naming the file and the
// request's offset, delivered like any other read error, with a bounded
// number of attempts (no spin), and Close must return.
func TestShrunkFileFailsRead(t *testing.T) {
	data := content(64 << 10)
	for _, tc := range []struct {
		name        string
		opts        Options
		trunc       int64 // new size: inside [off, off+n)
		off         int64
		n           int
		maxAttempts int64 // at most one more than the progress the alignment allows
	}{
		{"uring/direct/unaligned", Options{Kind: IOUring}, 5000, 4096, 4096, 2},
		{"uring/direct/unaligned-after-progress", Options{Kind: IOUring}, 5000, 0, 8192, 2},
		{"uring/direct/aligned", Options{Kind: IOUring}, 4096, 0, 8192, 2},
		{"uring/buffered", Options{Kind: IOUring, Direct: Off}, 5000, 4096, 4096, 2},
		{"pread/direct/unaligned", Options{Kind: Pread}, 5000, 4096, 4096, 2},
		{"pread/direct/unaligned-after-progress", Options{Kind: Pread}, 5000, 0, 8192, 2},
		{"pread/buffered", Options{Kind: Pread, Direct: Off}, 5000, 100, 8000, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var attempts atomic.Int64
			o := tc.opts
			o.QueueDepth = 4
			o.SlotSize = 64 << 10
			o.Faults = FaultFunc(func(_ *File, _ int64, _, res int) int {
				attempts.Add(1)
				return res
			})
			e := newEngine(t, o)
			path := writeFile(t, data, false)
			f, err := e.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			if o.Direct != Off && !f.Direct() {
				t.Skip("O_DIRECT refused here")
			}
			if err := os.Truncate(path, tc.trunc); err != nil {
				t.Fatal(err)
			}
			q := e.NewQueue(QueueOptions{})
			if err := q.Submit(testCtx(t), []Request{{File: f, Off: tc.off, Len: tc.n, Tag: 7, Worker: -1}}); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(testCtx(t), 20*time.Second)
			defer cancel()
			c, err := q.Next(ctx)
			if err != nil {
				t.Fatalf("no completion for a read of a shrunk file (%d attempts so far): %v", attempts.Load(), err)
			}
			var ee *Error
			if !errors.As(c.Err, &ee) || !errors.Is(c.Err, ErrChanged) || ee.Op != "read" || ee.Path != path || ee.Off != tc.off || c.Data != nil {
				t.Fatalf("completion: err %v, %d bytes; want a read error wrapping ErrChanged naming %s at %d", c.Err, len(c.Data), path, tc.off)
			}
			c.Release()
			if got := attempts.Load(); got > tc.maxAttempts {
				t.Fatalf("%d read attempts, want at most %d", got, tc.maxAttempts)
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
		})
	}
}
