package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Red-team tests of Submit's deferred wakeups: a sleeping io_uring worker
// posted to by a Submit call is woken once, after the call's last request
// or before it blocks for a slot. Every wait here has a deadline, so that
// a worker left asleep on a request fails the test instead of hanging it.

// rt4Deadline bounds every wait of these tests.
const rt4Deadline = 20 * time.Second

func rt4Ctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), rt4Deadline)
	t.Cleanup(cancel)
	return ctx
}

// rt4Kinds are the engines the tests run on.
var rt4Kinds = []Kind{IOUring, Pread}

// rt4Check returns a Handler that checks each completion against data
// and releases it, counting them; errors go to t.
func rt4Check(t *testing.T, data []byte, n *atomic.Int64) func(*Completion) {
	return func(c *Completion) {
		if c.Err != nil {
			t.Errorf("read at %d: %v", c.Off, c.Err)
		} else if !bytes.Equal(c.Data, data[c.Off:c.Off+int64(len(c.Data))]) || len(c.Data) != int(c.Tag) {
			t.Errorf("read at %d: %d bytes, want %d of the file's", c.Off, len(c.Data), c.Tag)
		}
		n.Add(1)
		c.Release()
	}
}

// TestRedteam4ConcurrentSubmitters: goroutines submitting calls of 1 to 40
// requests at once, to any worker or pinned ones, on engines of 1, 3 and
// 20 workers (more than the 16 wakeups a call keeps; the rest are woken
// at once) with 2 slots each, so that calls block for slots while other
// calls' posts wait on sleeping workers. Every request completes with the
// file's bytes, and Settle returns before the deadline.
func TestRedteam4ConcurrentSubmitters(t *testing.T) {
	const size = 256 << 10
	data := content(size)
	path := writeFile(t, data, false)
	for _, kind := range rt4Kinds {
		for _, workers := range []int{1, 3, 20} {
			t.Run(fmt.Sprintf("%s/workers%d", kind, workers), func(t *testing.T) {
				e := newEngine(t, Options{Kind: kind, Workers: workers, QueueDepth: 2, SlotsPerWorker: 2, SlotSize: 8 << 10, Direct: Off})
				f, err := e.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				var got atomic.Int64
				q := e.NewQueue(QueueOptions{Handler: rt4Check(t, data, &got)})
				ctx := rt4Ctx(t)
				const goroutines, calls = 6, 30
				var sent atomic.Int64
				var wg sync.WaitGroup
				for g := range goroutines {
					wg.Add(1)
					go func() {
						defer wg.Done()
						r := rand.New(rand.NewPCG(uint64(g), uint64(workers)))
						for range calls {
							reqs := make([]Request, 1+r.IntN(40))
							for i := range reqs {
								n := 1 + r.IntN(8<<10)
								off := r.Int64N(size - int64(n))
								w := -1
								if r.IntN(2) == 0 {
									w = r.IntN(workers)
								}
								reqs[i] = Request{File: f, Off: off, Len: n, Tag: uint64(n), Worker: w}
							}
							if err := q.Submit(ctx, reqs); err != nil {
								t.Errorf("Submit: %v", err)
								return
							}
							sent.Add(int64(len(reqs)))
						}
					}()
				}
				wg.Wait()
				if err := q.Settle(ctx); err != nil {
					t.Fatalf("Settle: %v (%d of %d delivered: a worker sleeps on posted requests)", err, got.Load(), sent.Load())
				}
				if got.Load() != sent.Load() {
					t.Fatalf("%d completions of %d requests", got.Load(), sent.Load())
				}
			})
		}
	}
}

// TestRedteam4BlockedSubmitWakesItsWorker: one worker, one slot's worth of
// room, and a Submit of many requests pinned to it: the call blocks for a
// slot after every request, and only the worker it posted to (asleep) can
// free one. Completions must reach Next while the call is still blocked,
// and the call must finish.
func TestRedteam4BlockedSubmitWakesItsWorker(t *testing.T) {
	const size = 64 << 10
	data := content(size)
	path := writeFile(t, data, false)
	for _, kind := range rt4Kinds {
		for _, slots := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s/slots%d", kind, slots), func(t *testing.T) {
				e := newEngine(t, Options{Kind: kind, Workers: 1, QueueDepth: slots, SlotsPerWorker: slots, SlotSize: 4 << 10, Direct: Off})
				f, err := e.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				q := e.NewQueue(QueueOptions{})
				ctx := rt4Ctx(t)
				reqs := make([]Request, 64)
				for i := range reqs {
					reqs[i] = Request{File: f, Off: int64(i) * 900, Len: 4 << 10, Tag: uint64(i), Worker: i % 2 * -1}
				}
				errc := make(chan error, 1)
				go func() { errc <- q.Submit(ctx, reqs) }()
				for i := range reqs {
					c, err := q.Next(ctx)
					if err != nil {
						t.Fatalf("Next %d: %v (the worker sleeps on the blocked call's requests)", i, err)
					}
					if c.Err != nil || !bytes.Equal(c.Data, data[c.Off:c.Off+4<<10]) {
						t.Fatalf("read at %d: %v or wrong bytes", c.Off, c.Err)
					}
					c.Release()
				}
				if err := <-errc; err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// TestRedteam4CancelWhileBlocked: a Submit blocked for a slot, with the
// requests it posted held (not released), returns ctx.Err() once ctx is
// cancelled; the requests it posted were delivered while it was blocked
// (before the cancel), and nothing beyond them was queued.
func TestRedteam4CancelWhileBlocked(t *testing.T) {
	const size = 64 << 10
	data := content(size)
	path := writeFile(t, data, false)
	for _, kind := range rt4Kinds {
		t.Run(kind.String(), func(t *testing.T) {
			const slots = 3
			e := newEngine(t, Options{Kind: kind, Workers: 1, QueueDepth: slots, SlotsPerWorker: slots, SlotSize: 4 << 10, Direct: Off})
			f, err := e.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			q := e.NewQueue(QueueOptions{})
			reqs := make([]Request, slots+5)
			for i := range reqs {
				reqs[i] = Request{File: f, Off: int64(i) * 4096, Len: 4096, Tag: uint64(i), Worker: -1}
			}
			ctx, cancel := context.WithCancel(rt4Ctx(t))
			errc := make(chan error, 1)
			go func() { errc <- q.Submit(ctx, reqs) }()
			var held []*Completion
			for range slots {
				c, err := q.Next(rt4Ctx(t))
				if err != nil {
					t.Fatalf("Next while Submit blocks: %v (the worker sleeps on its requests)", err)
				}
				if c.Err != nil || !bytes.Equal(c.Data, data[c.Off:c.Off+4096]) {
					t.Fatalf("read at %d: %v or wrong bytes", c.Off, c.Err)
				}
				held = append(held, c)
			}
			select {
			case err := <-errc:
				t.Fatalf("Submit returned %v with every slot held", err)
			default:
			}
			cancel()
			select {
			case err := <-errc:
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("Submit after cancel: %v, want context.Canceled", err)
				}
			case <-time.After(rt4Deadline):
				t.Fatal("Submit still blocked after its ctx was cancelled")
			}
			if n := q.InFlight(); n != slots {
				t.Fatalf("%d in flight, want the %d held", n, slots)
			}
			for _, c := range held {
				c.Release()
			}
			if err := q.Drain(rt4Ctx(t)); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestRedteam4FailedRequestAfterPosts: a call that fails on a request (an
// invalid one, a worker out of range, a closed file) after posting others
// to sleeping workers returns the error, and the requests before it are
// still read: the call's deferred wakeups happen on its error return too.
func TestRedteam4FailedRequestAfterPosts(t *testing.T) {
	const size = 64 << 10
	data := content(size)
	path := writeFile(t, data, false)
	for _, kind := range rt4Kinds {
		for _, bad := range []string{"negative", "worker", "closed", "nilfile"} {
			t.Run(fmt.Sprintf("%s/%s", kind, bad), func(t *testing.T) {
				e := newEngine(t, Options{Kind: kind, Workers: 3, QueueDepth: 8, SlotsPerWorker: 8, SlotSize: 4 << 10, Direct: Off})
				f, err := e.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				g, err := e.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				if err := e.CloseFile(g); err != nil {
					t.Fatal(err)
				}
				var got atomic.Int64
				q := e.NewQueue(QueueOptions{Handler: rt4Check(t, data, &got)})
				var reqs []Request
				for i := range 5 {
					reqs = append(reqs, Request{File: f, Off: int64(i) * 4096, Len: 4096, Tag: 4096, Worker: i % 3})
				}
				last := Request{File: f, Off: 0, Len: 4096, Tag: 4096, Worker: 0}
				want := ErrInvalid
				switch bad {
				case "negative":
					last.Off = -1
				case "worker":
					last.Worker = 3
				case "closed":
					last.File, want = g, os.ErrClosed
				case "nilfile":
					last.File = nil
				}
				reqs = append(reqs, last)
				ctx := rt4Ctx(t)
				if err := q.Submit(ctx, reqs); !errors.Is(err, want) {
					t.Fatalf("Submit: %v, want %v", err, want)
				}
				if err := q.Settle(ctx); err != nil {
					t.Fatalf("Settle: %v (%d of 5 delivered: a worker sleeps on the failed call's requests)", err, got.Load())
				}
				if got.Load() != 5 {
					t.Fatalf("%d completions, want 5", got.Load())
				}
			})
		}
	}
}

// TestRedteam4CloseRacingSubmit: Close while several goroutines submit
// (their calls posting to sleeping workers, some blocked for slots) ends
// every call with nil or ErrClosed, delivers every request a call queued,
// and wakes no worker after its eventfd is closed (the race detector and
// the kernel would say so: a write to a closed or reused descriptor).
func TestRedteam4CloseRacingSubmit(t *testing.T) {
	const size = 64 << 10
	data := content(size)
	path := writeFile(t, data, false)
	for _, kind := range rt4Kinds {
		for _, workers := range []int{2, 18} {
			t.Run(fmt.Sprintf("%s/workers%d", kind, workers), func(t *testing.T) {
				for round := range 8 {
					e := newEngine(t, Options{Kind: kind, Workers: workers, QueueDepth: 2, SlotsPerWorker: 2, SlotSize: 4 << 10, Direct: Off})
					f, err := e.Open(path)
					if err != nil {
						t.Fatal(err)
					}
					var got atomic.Int64
					q := e.NewQueue(QueueOptions{Handler: func(c *Completion) {
						if c.Err != nil {
							t.Errorf("read at %d: %v", c.Off, c.Err)
						}
						got.Add(1)
						c.Release()
					}})
					ctx := rt4Ctx(t)
					var wg sync.WaitGroup
					for g := range 4 {
						wg.Add(1)
						go func() {
							defer wg.Done()
							for i := 0; ; i++ {
								reqs := make([]Request, 1+(g+i)%25)
								for k := range reqs {
									reqs[k] = Request{File: f, Off: int64(k) * 512, Len: 4096, Worker: -1}
								}
								err := q.Submit(ctx, reqs)
								if errors.Is(err, ErrClosed) {
									return
								}
								if err != nil {
									t.Errorf("Submit: %v", err)
									return
								}
							}
						}()
					}
					time.Sleep(time.Duration(round) * time.Millisecond)
					closed := make(chan error, 1)
					go func() { closed <- e.Close() }()
					select {
					case err := <-closed:
						if err != nil {
							t.Fatal(err)
						}
					case <-time.After(rt4Deadline):
						t.Fatal("Close hangs while Submit races it")
					}
					wg.Wait()
				}
			})
		}
	}
}

// TestRedteam4DirectTrickle: O_DIRECT reads submitted one per call, each
// awaited before the next (the worker sleeps with nothing in the kernel
// between them, which the chunker no longer counts), all complete with
// the file's bytes; then a burst of single-request calls from several
// goroutines does too.
func TestRedteam4DirectTrickle(t *testing.T) {
	const size = 1 << 20
	data := content(size)
	path := writeFile(t, data, false)
	e := newEngine(t, Options{Kind: IOUring, Workers: 2, QueueDepth: 16, SlotSize: 16 << 10, Direct: TryOn})
	f, err := e.OpenMode(path, TryOn)
	if err != nil {
		t.Fatal(err)
	}
	q := e.NewQueue(QueueOptions{})
	ctx := rt4Ctx(t)
	for i := range 300 {
		off := int64(i*7919) % (size - 16<<10)
		if err := q.Submit(ctx, []Request{{File: f, Off: off, Len: 5000, Worker: -1}}); err != nil {
			t.Fatal(err)
		}
		c, err := q.Next(ctx)
		if err != nil {
			t.Fatalf("read %d: %v (a single request left asleep)", i, err)
		}
		if c.Err != nil || !bytes.Equal(c.Data, data[off:off+5000]) {
			t.Fatalf("read %d at %d: %v or wrong bytes", i, off, c.Err)
		}
		c.Release()
	}
	var got atomic.Int64
	hq := e.NewQueue(QueueOptions{Handler: rt4Check(t, data, &got)})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				off := int64((g*100+i)*4099) % (size - 16<<10)
				if err := hq.Submit(ctx, []Request{{File: f, Off: off, Len: 3000, Tag: 3000, Worker: -1}}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := hq.Settle(ctx); err != nil {
		t.Fatalf("Settle: %v (%d of 400 delivered)", err, got.Load())
	}
	if got.Load() != 400 {
		t.Fatalf("%d of 400 delivered", got.Load())
	}
}

// TestRedteam4MoreSleepersThanWakes: one call posting to each of 20
// sleeping workers, more than the 16 wakeups a call keeps: the workers
// past them are woken at once, and every request is read.
func TestRedteam4MoreSleepersThanWakes(t *testing.T) {
	const size, workers = 64 << 10, 20
	data := content(size)
	path := writeFile(t, data, false)
	e := newEngine(t, Options{Kind: IOUring, Workers: workers, QueueDepth: 2, SlotsPerWorker: 2, SlotSize: 4 << 10, Direct: Off})
	f, err := e.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var got atomic.Int64
	q := e.NewQueue(QueueOptions{Handler: rt4Check(t, data, &got)})
	ctx := rt4Ctx(t)
	for round := range 20 {
		// Every worker asleep (waiting to be woken) before the call, so
		// that each of its posts owes a wakeup.
		for _, w := range e.workers {
			for w.waiting.Load() != 1 {
				if ctx.Err() != nil {
					t.Fatalf("worker %d never went to sleep", w.id)
				}
				time.Sleep(100 * time.Microsecond)
			}
		}
		reqs := make([]Request, workers)
		for i := range reqs {
			reqs[i] = Request{File: f, Off: int64(i) * 1024, Len: 4096, Tag: 4096, Worker: (i + round) % workers}
		}
		if err := q.Submit(ctx, reqs); err != nil {
			t.Fatal(err)
		}
		if err := q.Settle(ctx); err != nil {
			t.Fatalf("round %d: Settle: %v (%d of %d delivered: a worker past the 16 wakeups sleeps)", round, err, got.Load(), (round+1)*workers)
		}
	}
}
