package engine

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"testing"
	"time"
)

// TestMappedReads: requests of a mapped file (OpenMapped), on io_uring
// and pread workers, deliver exactly the file's bytes, as a buffered
// read does: random ranges, one at the start, ranges running past the
// end (clamped to the size at open), and empty ones; Stats count them as
// reads; CloseFile and Close remove the mapping.
func TestMappedReads(t *testing.T) {
	data := content(300<<10 + 123)
	for _, kind := range []Kind{IOUring, Pread} {
		t.Run(kind.String(), func(t *testing.T) {
			e := newEngine(t, Options{Kind: kind, QueueDepth: 8, SlotSize: 64 << 10, Direct: Off})
			path := writeFile(t, data, false)
			f, err := e.OpenMapped(path)
			if err != nil {
				t.Fatal(err)
			}
			if !f.Mapped() || f.Direct() {
				t.Fatalf("Mapped %v Direct %v, want a mapped buffered file", f.Mapped(), f.Direct())
			}
			rng := rand.New(rand.NewPCG(1, 2))
			reqs := []Request{{File: f, Off: 0, Len: 4096}, {File: f, Off: int64(len(data)) - 100, Len: 4096}, {File: f, Off: 77, Len: 0},
				{File: f, Off: int64(len(data)) + 10, Len: 50}}
			for len(reqs) < 200 {
				n := 1 + rng.IntN(64<<10-1)
				reqs = append(reqs, Request{File: f, Off: rng.Int64N(int64(len(data))), Len: n})
			}
			q := e.NewQueue(QueueOptions{})
			for i := range reqs {
				reqs[i].Tag, reqs[i].Worker = uint64(i), -1
			}
			go func() {
				if err := q.Submit(testCtx(t), reqs); err != nil {
					t.Error(err)
				}
			}()
			for range reqs {
				c, err := q.Next(testCtx(t))
				if err != nil {
					t.Fatal(err)
				}
				r := reqs[c.Tag]
				lo, hi := min(r.Off, int64(len(data))), min(r.Off+int64(r.Len), int64(len(data)))
				if c.Err != nil || !bytes.Equal(c.Data, data[lo:hi]) {
					t.Fatalf("request %d (%d bytes at %d): err %v, %d bytes, want the file's %d", c.Tag, r.Len, r.Off, c.Err, len(c.Data), hi-lo)
				}
				c.Release()
			}
			if err := e.CloseFile(f); err != nil {
				t.Fatal(err)
			}
			if f.Mapped() {
				t.Fatal("CloseFile left the mapping")
			}
			g, err := e.OpenMapped(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			if g.Mapped() {
				t.Fatal("Close left the mapping")
			}
		})
	}
}

// TestMappedShrunkFile: a mapped file truncated after open does not kill
// the process with SIGBUS: a request past the new end fails with
// ErrChanged naming the file and offset, as a read of a shrunk file does,
// and a request below it still reads the file's bytes.
func TestMappedShrunkFile(t *testing.T) {
	data := content(256 << 10)
	for _, kind := range []Kind{IOUring, Pread} {
		t.Run(kind.String(), func(t *testing.T) {
			e := newEngine(t, Options{Kind: kind, QueueDepth: 4, SlotSize: 64 << 10, Direct: Off})
			path := writeFile(t, data, false)
			f, err := e.OpenMapped(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(path, 64<<10); err != nil {
				t.Fatal(err)
			}
			q := e.NewQueue(QueueOptions{})
			reqs := []Request{{File: f, Off: 128 << 10, Len: 8192, Tag: 0, Worker: -1}, {File: f, Off: 4096, Len: 8192, Tag: 1, Worker: -1}}
			if err := q.Submit(testCtx(t), reqs); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(testCtx(t), 20*time.Second)
			defer cancel()
			for range reqs {
				c, err := q.Next(ctx)
				if err != nil {
					t.Fatal(err)
				}
				switch c.Tag {
				case 0:
					var ee *Error
					if !errors.As(c.Err, &ee) || !errors.Is(c.Err, ErrChanged) || ee.Path != path || ee.Off != 128<<10 || c.Data != nil {
						t.Fatalf("read past the new end: err %v, %d bytes; want ErrChanged naming %s at %d", c.Err, len(c.Data), path, 128<<10)
					}
				case 1:
					if c.Err != nil || !bytes.Equal(c.Data, data[4096:4096+8192]) {
						t.Fatalf("read below the new end: err %v, %d bytes", c.Err, len(c.Data))
					}
				}
				c.Release()
			}
		})
	}
}
