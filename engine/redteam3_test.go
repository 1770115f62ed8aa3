package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"testing"
	"time"
)

// readAll submits reqs on q and returns each request's completion error
// and data (copied), by tag.
func readAll(t *testing.T, e *Engine, reqs []Request) ([][]byte, []error) {
	t.Helper()
	q := e.NewQueue(QueueOptions{})
	for i := range reqs {
		reqs[i].Tag, reqs[i].Worker = uint64(i), -1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- q.Submit(ctx, reqs) }()
	data, errs := make([][]byte, len(reqs)), make([]error, len(reqs))
	for range reqs {
		c, err := q.Next(ctx)
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		data[c.Tag], errs[c.Tag] = bytes.Clone(c.Data), c.Err
		c.Release()
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	return data, errs
}

// TestRedteam3ShrunkInsideRequest: a file truncated to a size inside a
// request's range (the request starts below the new end and runs past
// it) fails the request with ErrChanged naming the file and offset (a
// short read, then no progress), not with EIO and not with fewer bytes.
// Page-aligned and unaligned new ends, io_uring and pread workers,
// buffered and O_DIRECT files.
func TestRedteam3ShrunkInsideRequest(t *testing.T) {
	data := content(256 << 10)
	for _, kind := range []Kind{IOUring, Pread} {
		for _, direct := range []Tristate{Off, TryOn} {
			for _, cut := range []int64{12288, 10000} {
				name := fmt.Sprintf("%s/%s/cut%d", kind, map[Tristate]string{Off: "buffered", TryOn: "direct"}[direct], cut)
				t.Run(name, func(t *testing.T) {
					e := newEngine(t, Options{Kind: kind, QueueDepth: 4, SlotSize: 64 << 10, Direct: direct})
					path := writeFile(t, data, false)
					f, err := e.OpenMode(path, direct)
					if err != nil {
						t.Fatal(err)
					}
					if err := os.Truncate(path, cut); err != nil {
						t.Fatal(err)
					}
					_, errs := readAll(t, e, []Request{{File: f, Off: 8192, Len: 16384}})
					var ee *Error
					if !errors.Is(errs[0], ErrChanged) || !errors.As(errs[0], &ee) || ee.Path != path || ee.Off != 8192 {
						t.Fatalf("a request from 8192 to 24576 of a file cut to %d: %v; want ErrChanged naming %s at 8192", cut, errs[0], path)
					}
				})
			}
		}
	}
}

// TestRedteam3FileFlapping: requests of a file while another goroutine
// truncates, extends, rewrites and restores it, again and again, opened
// and closed forty times: nothing crashes or hangs; every request either
// fails with an *Error naming the file or delivers bytes that are the
// file's at some moment (the original, the rewrite, or zeros where it was
// cut and extended). Buffered reads, io_uring and pread workers.
func TestRedteam3FileFlapping(t *testing.T) {
	const size = 192 << 10
	orig := content(size)
	alt := bytes.Repeat([]byte{0x5a}, size)
	for _, kind := range []Kind{IOUring, Pread} {
		t.Run(kind.String(), func(t *testing.T) {
			e := newEngine(t, Options{Kind: kind, QueueDepth: 8, SlotSize: 32 << 10, Direct: Off, Workers: 2})
			path := writeFile(t, orig, false)
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(5, 6))
				for {
					select {
					case <-stop:
						return
					default:
					}
					switch rng.IntN(4) {
					case 0:
						os.Truncate(path, rng.Int64N(size))
					case 1:
						os.Truncate(path, size+rng.Int64N(size))
					case 2:
						if fw, err := os.OpenFile(path, os.O_WRONLY, 0); err == nil {
							fw.WriteAt(alt[:rng.IntN(size)], 0)
							fw.Close()
						}
					case 3:
						os.WriteFile(path, orig, 0o644)
					}
					time.Sleep(time.Duration(rng.IntN(200)) * time.Microsecond)
				}
			}()
			rng := rand.New(rand.NewPCG(7, 8))
			fails := 0
			for round := 0; round < 40; round++ {
				f, err := e.OpenMode(path, Off)
				if err != nil {
					t.Fatal(err)
				}
				fsize := f.Size()
				var reqs []Request
				for len(reqs) < 32 {
					reqs = append(reqs, Request{File: f, Off: rng.Int64N(max(fsize, 1)), Len: 1 + rng.IntN(32<<10-1)})
				}
				got, errs := readAll(t, e, reqs)
				for i, r := range reqs {
					if errs[i] != nil {
						var ee *Error
						if !errors.As(errs[i], &ee) || ee.Path != path {
							t.Fatalf("request %d: %v: want an *Error naming %s", i, errs[i], path)
						}
						fails++
						continue
					}
					for j, c := range got[i] {
						at := r.Off + int64(j)
						if at < size && (c == orig[at] || c == alt[at] || c == 0) {
							continue
						}
						if at >= size && c == 0 {
							continue
						}
						t.Fatalf("request %d: byte %d at offset %d is %#x: none of the file's bytes there", i, j, at, c)
					}
				}
				if err := e.CloseFile(f); err != nil {
					t.Fatal(err)
				}
			}
			close(stop)
			wg.Wait()
			t.Logf("%d requests failed", fails)
		})
	}
}
