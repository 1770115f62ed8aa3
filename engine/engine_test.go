package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"go.uber.org/goleak"
	"golang.org/x/sys/unix"

	"github.com/pagefeed/pagefeed/pin"
	"github.com/pagefeed/pagefeed/ring"
)

func TestMain(m *testing.M) {
	var cancel context.CancelFunc
	waitCtx, cancel = context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		benchCleanup()
		os.Exit(code)
	}))
}

// backend is one engine configuration the shared test table runs against.
type backend struct {
	name   string
	opts   Options
	shm    bool // file on /dev/shm (tmpfs takes O_DIRECT only on newer kernels)
	direct int  // expected File.Direct: 1 true, 0 false, -1 either
	refuse bool // open refuses O_DIRECT with EINVAL, as older tmpfs and FUSE do
}

func backends() []backend {
	return []backend{
		{name: "uring/direct", opts: Options{Kind: IOUring}, direct: 1},
		{name: "uring/direct/regfiles/2workers", opts: Options{Kind: IOUring, Workers: 2, RegisterFiles: true, QueueDepth: 16}, direct: 1},
		{name: "uring/direct/nofixed", opts: Options{Kind: IOUring, FixedBuffers: Off}, direct: 1},
		{name: "uring/direct/batchcomplete8", opts: Options{Kind: IOUring, BatchComplete: 8, BatchSubmit: 4}, direct: 1},
		{name: "uring/shm", opts: Options{Kind: IOUring}, shm: true, direct: -1},
		{name: "uring/buffered-refused", opts: Options{Kind: IOUring}, shm: true, refuse: true},
		{name: "uring/buffered-off", opts: Options{Kind: IOUring, Direct: Off}},
		{name: "pread/direct", opts: Options{Kind: Pread, QueueDepth: 8}, direct: 1},
		{name: "pread/shm", opts: Options{Kind: Pread}, shm: true, direct: -1},
		{name: "pread/buffered-refused", opts: Options{Kind: Pread}, refuse: true},
	}
}

// newEngine starts an engine that the test closes; it skips when io_uring
// is refused by this kernel.
func newEngine(t testing.TB, o Options) *Engine {
	t.Helper()
	if o.Logf == nil {
		o.Logf = t.Logf
	}
	e, err := New(o)
	if err != nil {
		if o.Kind == IOUring && fallbackErr(err) {
			t.Skipf("io_uring unavailable: %v", err)
		}
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// content returns size deterministic bytes.
func content(size int) []byte {
	b := make([]byte, size)
	r := rand.New(rand.NewPCG(uint64(size), 7))
	for i := 0; i+8 <= len(b); i += 8 {
		v := r.Uint64()
		for k := 0; k < 8; k++ {
			b[i+k] = byte(v >> (8 * k))
		}
	}
	for i := len(b) &^ 7; i < len(b); i++ {
		b[i] = byte(i)
	}
	return b
}

// writeFile lays out data in a temp dir (on /dev/shm when shm) and returns
// its path.
func writeFile(t testing.TB, data []byte, shm bool) string {
	t.Helper()
	dir := t.TempDir()
	if shm {
		if _, err := os.Stat("/dev/shm"); err != nil {
			t.Skip("no /dev/shm")
		}
		d, err := os.MkdirTemp("/dev/shm", "pagefeed-engine-test-")
		if err != nil {
			t.Skip(err)
		}
		t.Cleanup(func() { os.RemoveAll(d) })
		dir = d
	}
	p := filepath.Join(dir, "data.bin")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// expect returns the bytes a read of [off, off+n) must yield.
func expect(data []byte, off int64, n int) []byte {
	if off >= int64(len(data)) {
		return nil
	}
	end := min(off+int64(n), int64(len(data)))
	return data[off:end]
}

// checkCompletion asserts c carries exactly the expected bytes.
// readOne reads [off, off+n) of a new file holding data through e, on
// worker w (-1: any), and returns the completion, checked against data;
// the caller releases it.
func readOne(t *testing.T, e *Engine, data []byte, off int64, n, w int) *Completion {
	t.Helper()
	f, err := e.Open(writeFile(t, data, false))
	if err != nil {
		t.Fatal(err)
	}
	q := e.NewQueue(QueueOptions{})
	if err := q.Submit(testCtx(t), []Request{{File: f, Off: off, Len: n, Tag: 1, Worker: w}}); err != nil {
		t.Fatal(err)
	}
	c, err := q.Next(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	checkCompletion(t, c, data, map[uint64]int{1: n})
	return c
}

func checkCompletion(t testing.TB, c *Completion, data []byte, lens map[uint64]int) {
	t.Helper()
	if c.Err != nil {
		t.Fatalf("tag %d off %d: %v", c.Tag, c.Off, c.Err)
	}
	n, ok := lens[c.Tag]
	if !ok {
		t.Fatalf("unknown tag %d", c.Tag)
	}
	want := expect(data, c.Off, n)
	if len(c.Data) != len(want) || string(c.Data) != string(want) {
		t.Fatalf("tag %d off %d len %d: got %d bytes, want %d (content equal: %v)",
			c.Tag, c.Off, n, len(c.Data), len(want), string(c.Data) == string(want))
	}
}

// deviceBytes is what a read of [off, off+n) of f moves: the range
// clamped to the file, rounded out to the O_DIRECT alignment, the end
// clamped again (the read stops at end of file).
func deviceBytes(f *File, off int64, n int) int {
	end := min(off+int64(n), f.size)
	if off >= end {
		return 0
	}
	if !f.direct {
		return int(end - off)
	}
	a := int64(max(f.offAlign, f.memAlign))
	lo, hi := off-off%a, min((end+a-1)/a*a, f.size)
	return int(hi - lo)
}

// refuseDirect makes open(2) refuse O_DIRECT with EINVAL for the test.
func refuseDirect(t *testing.T) {
	t.Helper()
	saved := openFile
	openFile = func(path string, flags int) (int, error) {
		if flags&oDirect != 0 {
			return -1, unix.EINVAL
		}
		return saved(path, flags)
	}
	t.Cleanup(func() { openFile = saved })
}

func TestDirectOnRequired(t *testing.T) {
	refuseDirect(t)
	e := newEngine(t, Options{Kind: Pread, Direct: On})
	if _, err := e.Open(writeFile(t, []byte("x"), false)); !errors.Is(err, unix.EINVAL) {
		t.Fatalf("Direct On with O_DIRECT refused: %v", err)
	}
}

func TestReadsExactBytes(t *testing.T) {
	const size = 3<<20 + 777 // not a multiple of any alignment
	data := content(size)
	for _, be := range backends() {
		t.Run(be.name, func(t *testing.T) {
			path := writeFile(t, data, be.shm)
			if be.refuse {
				refuseDirect(t)
			}
			e := newEngine(t, be.opts)
			f, err := e.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			if be.direct >= 0 && f.Direct() != (be.direct == 1) {
				t.Fatalf("Direct() = %v, want %v", f.Direct(), be.direct == 1)
			}
			if f.Size() != size || f.Path() != path {
				t.Fatalf("Size %d Path %q", f.Size(), f.Path())
			}
			if be.refuse {
				// Said once per device, however many files.
				g, err := e.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				e.CloseFile(g)
				if n := len(e.Info().Notices); n != 1 {
					t.Fatalf("buffered fallback noticed %d times: %q", n, e.Info().Notices)
				}
			}
			q := e.NewQueue(QueueOptions{})
			rng := rand.New(rand.NewPCG(11, 12))
			var reqs []Request
			lens := map[uint64]int{}
			add := func(off int64, n int) {
				tag := uint64(len(reqs)) + 1<<40
				reqs = append(reqs, Request{File: f, Off: off, Len: n, Tag: tag, Worker: -1})
				lens[tag] = n
			}
			for i := 0; i < 200; i++ {
				n := 1 + rng.IntN(200_000)
				add(rng.Int64N(size-int64(n)), n)
			}
			// Edges: start, tiny, EOF clamping, exactly at and past EOF, empty.
			add(0, 1)
			add(4095, 2)
			add(size-10, 100)
			add(size-1, 1)
			add(size, 10)
			add(size+5000, 10)
			add(12345, 0)
			add(size-(1<<20)+3, 1<<20-8192) // near the slot's limit
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() {
				if err := q.Submit(ctx, reqs); err != nil {
					t.Errorf("Submit: %v", err)
					cancel()
				}
			}()
			seen := map[uint64]bool{}
			for range reqs {
				c, err := q.Next(ctx)
				if err != nil {
					t.Fatal(err)
				}
				checkCompletion(t, c, data, lens)
				if want := deviceBytes(f, c.Off, lens[c.Tag]); c.DeviceBytes != want {
					t.Fatalf("off %d len %d: DeviceBytes %d, want %d (direct %v)", c.Off, lens[c.Tag], c.DeviceBytes, want, f.Direct())
				}
				if seen[c.Tag] {
					t.Fatalf("tag %d delivered twice", c.Tag)
				}
				seen[c.Tag] = true
				if c.File != f || c.Worker < 0 || c.Worker >= max(be.opts.Workers, 1) {
					t.Fatalf("File %p Worker %d", c.File, c.Worker)
				}
				c.Release()
			}
			if err := q.Drain(ctx); err != nil || q.InFlight() != 0 {
				t.Fatalf("Drain %v InFlight %d", err, q.InFlight())
			}
			if err := e.CloseFile(f); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestManyQueuesConcurrently(t *testing.T) {
	for _, kind := range []Kind{IOUring, Pread} {
		t.Run(kind.String(), func(t *testing.T) {
			data := content(1 << 20)
			path := writeFile(t, data, false)
			e := newEngine(t, Options{Kind: kind, Workers: 2, QueueDepth: 8, SlotSize: 64 << 10})
			f, err := e.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			for g := 0; g < 8; g++ {
				wg.Add(1)
				go func(g int) {
					defer wg.Done()
					q := e.NewQueue(QueueOptions{})
					rng := rand.New(rand.NewPCG(uint64(g), 1))
					lens := map[uint64]int{}
					for i := 0; i < 50; i++ {
						n := 1 + rng.IntN(30000)
						req := Request{File: f, Off: rng.Int64N(int64(len(data))), Len: n, Tag: uint64(g<<20 | i), Worker: i % 3 % 2}
						if i%3 == 2 {
							req.Worker = -1
						}
						lens[req.Tag] = n
						if err := q.Submit(context.Background(), []Request{req}); err != nil {
							t.Error(err)
							return
						}
						c, err := q.Next(testCtx(t))
						if err != nil {
							t.Error(err)
							return
						}
						if c.Tag != req.Tag {
							t.Errorf("queue %d got tag %d, want %d", g, c.Tag, req.Tag)
						}
						checkCompletion(t, c, data, lens)
						c.Release()
					}
				}(g)
			}
			wg.Wait()
		})
	}
}

func TestBackpressure(t *testing.T) {
	for _, kind := range []Kind{IOUring, Pread} {
		t.Run(kind.String(), func(t *testing.T) {
			data := content(256 << 10)
			path := writeFile(t, data, false)
			const slots = 4
			e := newEngine(t, Options{Kind: kind, QueueDepth: slots, SlotSize: 16 << 10})
			f, err := e.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			q := e.NewQueue(QueueOptions{})
			var reqs []Request
			lens := map[uint64]int{}
			for i := 0; i < 64; i++ {
				reqs = append(reqs, Request{File: f, Off: int64(i) * 4000, Len: 5000, Tag: uint64(i), Worker: -1})
				lens[uint64(i)] = 5000
			}
			done := make(chan error, 1)
			go func() { done <- q.Submit(context.Background(), reqs) }()
			for i := 0; i < len(reqs); i++ {
				c, err := q.Next(testCtx(t))
				if err != nil {
					t.Fatal(err)
				}
				if n := q.InFlight(); n > slots {
					t.Fatalf("InFlight %d exceeds %d slots", n, slots)
				}
				checkCompletion(t, c, data, lens)
				c.Release()
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestSubmitBlockedHonoursContext(t *testing.T) {
	data := content(64 << 10)
	path := writeFile(t, data, false)
	e := newEngine(t, Options{Kind: Auto, QueueDepth: 2, SlotSize: 8192})
	f, err := e.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	q := e.NewQueue(QueueOptions{})
	req := Request{File: f, Len: 100, Worker: -1}
	if err := q.Submit(context.Background(), []Request{req, req}); err != nil {
		t.Fatal(err)
	}
	// Every slot is taken and nobody releases: Submit must give up with ctx.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := q.Submit(ctx, []Request{req}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Submit with no free slot and a cancelled ctx: %v", err)
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	res := make(chan error, 1)
	go func() { res <- q.Submit(ctx2, []Request{req}) }()
	cancel2()
	if err := <-res; !errors.Is(err, context.Canceled) {
		t.Fatalf("blocked Submit after cancel: %v", err)
	}
	if _, err := q.Next(ctx); !errors.Is(err, context.Canceled) && err != nil {
		t.Fatalf("Next: %v", err)
	}
	for i := 0; i < 2; i++ {
		c, err := q.Next(testCtx(t))
		if err != nil {
			t.Fatal(err)
		}
		c.Release()
	}
	if q.InFlight() != 0 {
		t.Fatalf("InFlight %d", q.InFlight())
	}
	// With slots free again, a cancelled Drain on an idle queue still succeeds.
	if err := q.Drain(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestHandlerResubmitClosedLoop(t *testing.T) {
	for _, kind := range []Kind{IOUring, Pread} {
		t.Run(kind.String(), func(t *testing.T) {
			data := content(2 << 20)
			path := writeFile(t, data, false)
			e := newEngine(t, Options{Kind: kind, QueueDepth: 16, SlotSize: 64 << 10, Timestamps: true})
			f, err := e.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			const total = 2000
			var issued, done atomic.Int64
			var bad atomic.Value
			finished := make(chan struct{})
			var seq atomic.Uint64
			next := func() Request {
				k := seq.Add(1)
				h := k * 0x9E3779B97F4A7C15
				return Request{File: f, Off: int64(h>>20) % int64(len(data)), Len: 1 + int(h>>8)%9000, Tag: h}
			}
			q := e.NewQueue(QueueOptions{Handler: func(c *Completion) {
				n := int(c.Tag>>8)%9000 + 1
				want := expect(data, c.Off, n)
				if c.Err != nil || string(c.Data) != string(want) {
					bad.Store(c.Off)
				}
				if c.DoneNs < c.SubmitNs || c.SubmitNs == 0 {
					bad.Store(int64(-1))
				}
				if issued.Add(1) <= total-16 {
					if err := c.Resubmit(next()); err != nil {
						bad.Store(err.Error())
						c.Release()
					}
				} else {
					c.Release()
				}
				if done.Add(1) == total {
					close(finished)
				}
			}})
			for i := 0; i < 16; i++ {
				if err := q.Submit(context.Background(), []Request{next()}); err != nil {
					t.Fatal(err)
				}
			}
			<-finished
			if v := bad.Load(); v != nil {
				t.Fatalf("bad completion: %v", v)
			}
			if err := q.Drain(testCtx(t)); err != nil {
				t.Fatal(err)
			}
			if _, err := q.Next(testCtx(t)); !errors.Is(err, ErrHandler) {
				t.Fatalf("Next on a Handler queue: %v", err)
			}
		})
	}
}

func TestCloseWithReadsInFlight(t *testing.T) {
	for _, kind := range []Kind{IOUring, Pread} {
		t.Run(kind.String(), func(t *testing.T) {
			data := content(4 << 20)
			path := writeFile(t, data, false)
			e := newEngine(t, Options{Kind: kind, QueueDepth: 32, SlotSize: 128 << 10})
			f, err := e.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			q := e.NewQueue(QueueOptions{})
			var reqs []Request
			lens := map[uint64]int{}
			for i := 0; i < 32; i++ {
				reqs = append(reqs, Request{File: f, Off: int64(i) * 100_003, Len: 100_000, Tag: uint64(i), Worker: -1})
				lens[uint64(i)] = 100_000
			}
			if err := q.Submit(context.Background(), reqs); err != nil {
				t.Fatal(err)
			}
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			// Every read finished before Close returned; data stays valid
			// until released.
			for range reqs {
				c, err := q.Next(testCtx(t))
				if err != nil {
					t.Fatal(err)
				}
				checkCompletion(t, c, data, lens)
				c.Release()
			}
			if _, err := q.Next(testCtx(t)); !errors.Is(err, ErrClosed) {
				t.Fatalf("Next after Close and drain: %v", err)
			}
			if err := q.Submit(context.Background(), reqs[:1]); !errors.Is(err, ErrClosed) {
				t.Fatalf("Submit after Close: %v", err)
			}
			if _, err := e.Open(path); !errors.Is(err, ErrClosed) {
				t.Fatalf("Open after Close: %v", err)
			}
			if err := e.Close(); !errors.Is(err, ErrClosed) {
				t.Fatalf("second Close: %v", err)
			}
		})
	}
}

func TestCloseStopsClosedLoop(t *testing.T) {
	data := content(1 << 20)
	path := writeFile(t, data, false)
	for _, kind := range []Kind{IOUring, Pread} {
		e := newEngine(t, Options{Kind: kind, QueueDepth: 8, SlotSize: 16 << 10})
		f, err := e.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		var closedSeen atomic.Bool
		started := make(chan struct{})
		var once sync.Once
		q := e.NewQueue(QueueOptions{Handler: func(c *Completion) {
			once.Do(func() { close(started) })
			if err := c.Resubmit(Request{File: f, Off: c.Off, Len: 4096}); err != nil {
				if errors.Is(err, ErrClosed) {
					closedSeen.Store(true)
				}
				c.Release()
			}
		}})
		if err := q.Submit(context.Background(), []Request{{File: f, Len: 4096, Worker: -1}}); err != nil {
			t.Fatal(err)
		}
		<-started
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
		if !closedSeen.Load() || q.InFlight() != 0 {
			t.Fatalf("%v: Resubmit never saw ErrClosed (%v) or InFlight %d", kind, closedSeen.Load(), q.InFlight())
		}
	}
}

func TestErrors(t *testing.T) {
	data := content(64 << 10)
	path := writeFile(t, data, false)
	for _, kind := range []Kind{IOUring, Pread} {
		t.Run(kind.String(), func(t *testing.T) {
			e := newEngine(t, Options{Kind: kind, QueueDepth: 4, SlotSize: 16 << 10})
			f, err := e.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			q := e.NewQueue(QueueOptions{})
			ctx := context.Background()
			for _, tc := range []struct {
				name string
				req  Request
				want error
			}{
				{"too large", Request{File: f, Len: 16 << 10, Worker: -1}, ErrTooLarge},
				{"negative offset", Request{File: f, Off: -1, Len: 1, Worker: -1}, ErrInvalid},
				{"nil file", Request{Len: 1, Worker: -1}, ErrInvalid},
				{"worker out of range", Request{File: f, Len: 1, Worker: 7}, ErrInvalid},
				{"file of another engine", Request{File: &File{path: "other"}, Len: 1, Worker: -1}, ErrInvalid},
			} {
				err := q.Submit(ctx, []Request{tc.req})
				var ee *Error
				if !errors.Is(err, tc.want) || !errors.As(err, &ee) {
					t.Errorf("%s: err %v, want *Error wrapping %v", tc.name, err, tc.want)
				}
			}
			if q.InFlight() != 0 {
				t.Fatalf("rejected requests left InFlight %d", q.InFlight())
			}
			if _, err := e.Open(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("Open missing: %v", err)
			}
			// A descriptor the kernel rejects surfaces as *Error{Op: "read"}.
			g, err := e.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			realFd := g.fd
			g.fd = 1 << 20
			if err := q.Submit(ctx, []Request{{File: g, Off: 8192, Len: 10, Worker: -1}}); err != nil {
				t.Fatal(err)
			}
			c, err := q.Next(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var ee *Error
			if !errors.Is(c.Err, unix.EBADF) || !errors.As(c.Err, &ee) || ee.Op != "read" || ee.Path != path || ee.Off != 8192 || c.Data != nil {
				t.Fatalf("bad fd completion: %v (Data %d bytes)", c.Err, len(c.Data))
			}
			c.Release()
			g.fd = realFd
			func() {
				defer func() {
					if recover() == nil {
						t.Error("second Release did not panic")
					}
				}()
				c.Release()
			}()
			if err := e.CloseFile(f); err != nil {
				t.Fatal(err)
			}
			if err := q.Submit(ctx, []Request{{File: f, Len: 1, Worker: -1}}); !errors.Is(err, os.ErrClosed) {
				t.Fatalf("Submit on closed file: %v", err)
			}
			if err := e.CloseFile(f); !errors.Is(err, os.ErrClosed) {
				t.Fatalf("CloseFile twice: %v", err)
			}
		})
	}
}

func TestDirectAlignmentErrorNamed(t *testing.T) {
	data := content(64 << 10)
	path := writeFile(t, data, false)
	for _, kind := range []Kind{IOUring, Pread} {
		e := newEngine(t, Options{Kind: kind, QueueDepth: 4, SlotSize: 16 << 10})
		f, err := e.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		if !f.Direct() || f.offAlign < 512 {
			t.Skipf("direct I/O with alignment %d not available here", f.offAlign)
		}
		// Pretend the file needs no alignment: the kernel refuses the read.
		f.offAlign, f.memAlign = 1, 1
		q := e.NewQueue(QueueOptions{})
		if err := q.Submit(context.Background(), []Request{{File: f, Off: 3, Len: 5, Worker: -1}}); err != nil {
			t.Fatal(err)
		}
		c, err := q.Next(testCtx(t))
		if err != nil {
			t.Fatal(err)
		}
		if !errors.Is(c.Err, ErrAlignment) || !errors.Is(c.Err, unix.EINVAL) {
			t.Fatalf("%v: misaligned direct read: %v", kind, c.Err)
		}
		c.Release()
	}
}

func TestAutoFallsBackToPread(t *testing.T) {
	saved := newRing
	defer func() { newRing = saved }()
	for _, errno := range []unix.Errno{unix.ENOSYS, unix.EPERM, unix.ENOMEM} {
		newRing = func(uint32, []uint32) (*ring.Ring, error) { return nil, &ring.Error{Op: "setup", Err: errno} }
		var logged []string
		e := newEngine(t, Options{Kind: Auto, Workers: 2, Logf: func(f string, a ...any) { logged = append(logged, f) }})
		in := e.Info()
		if in.Kind != Pread || len(in.Notices) != 1 || len(logged) != 1 {
			t.Fatalf("%v: Info %+v logged %q", errno, in, logged)
		}
		// The fallback serves reads.
		readOne(t, e, content(10000), 100, 9999, -1).Release()
		e.Close()

		if _, err := New(Options{Kind: IOUring}); !errors.Is(err, errno) {
			t.Fatalf("Kind IOUring with %v: %v", errno, err)
		}
	}
	newRing = func(uint32, []uint32) (*ring.Ring, error) { return nil, &ring.Error{Op: "setup", Err: unix.EFAULT} }
	if _, err := New(Options{Kind: Auto}); !errors.Is(err, unix.EFAULT) {
		t.Fatalf("Auto must not hide a non-fallback error: %v", err)
	}
}

func TestInfoIOUring(t *testing.T) {
	e := newEngine(t, Options{Kind: IOUring, RegisterFiles: true, CPUSets: [][]int{{0}}})
	in := e.Info()
	if in.Kind != IOUring || in.SetupFlags == "" {
		t.Fatalf("Info %+v", in)
	}
	if !in.RegisterFiles {
		t.Errorf("RegisterFiles not set up: %+v", in)
	}
	t.Logf("Info: %+v", in)
}

func TestOptionsValidation(t *testing.T) {
	for _, o := range []Options{
		{Kind: Kind(9)},
		{QueueDepth: MaxQueueDepth + 1},
		{CPUSets: [][]int{{}}},
	} {
		if _, err := New(o); err == nil {
			t.Errorf("New(%+v) accepted", o)
		}
	}
	// CPU numbers affinity cannot express fail New with a clear error,
	// not a panic on the worker thread (-65) or a silent CPU 63 (-1); a
	// CPU the kernel refuses (offline) fails the second worker's setup,
	// and New returns instead of waiting for the first worker.
	for _, kind := range []Kind{IOUring, Pread} {
		for _, set := range [][]int{{-1}, {0, -65}, {1 << 10}, {1<<10 - 1}} {
			var err error
			done := make(chan struct{})
			go func() {
				defer close(done)
				var e *Engine
				if e, err = New(Options{Kind: kind, CPUSets: [][]int{{0}, set}, Workers: 2}); err == nil {
					e.Close()
				}
			}()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				t.Fatalf("New(%v, CPUSets [[0] %v]) did not return", kind, set)
			}
			want := pin.ErrBadCPUSet
			if set[0] == 1<<10-1 {
				want = unix.EINVAL // offline: no test machine has 1024 CPUs
			}
			if !errors.Is(err, want) || !strings.Contains(err.Error(), "CPUSets[1]") {
				t.Errorf("New(%v, CPUSets [[0] %v]) = %v, want %v naming CPUSets[1]", kind, set, err, want)
			}
		}
	}
	o, err := Options{SlotSize: 5000}.fill()
	if err != nil || o.SlotSize != 8192 || o.QueueDepth != DefaultQueueDepth || o.SlotsPerWorker != DefaultQueueDepth || o.Workers != 1 {
		t.Fatalf("fill: %+v %v", o, err)
	}
}

func TestFixedBuffersFallback(t *testing.T) {
	saved := registerBuffers
	defer func() { registerBuffers = saved }()
	registerBuffers = func(*ring.Ring, []unix.Iovec) error { return &ring.Error{Op: "register buffers", Err: unix.ENOMEM} }

	if _, err := New(Options{Kind: IOUring, FixedBuffers: On}); err != nil && fallbackErr(err) && !errors.Is(err, unix.ENOMEM) {
		t.Skipf("io_uring unavailable: %v", err)
	} else if !errors.Is(err, unix.ENOMEM) {
		t.Fatalf("FixedBuffers On with registration refused: %v", err)
	}
	e := newEngine(t, Options{Kind: IOUring, Workers: 2})
	in := e.Info()
	if in.Kind != IOUring || in.FixedBuffers || len(in.Notices) != 1 {
		t.Fatalf("Info %+v", in)
	}
	readOne(t, e, content(50000), 999, 40000, 1).Release()
}

// TestIdleWorkerSleeps checks that a worker with nothing in flight waits in
// the kernel instead of looping, and still wakes for a new request.
func TestIdleWorkerSleeps(t *testing.T) {
	data := content(10000)
	path := writeFile(t, data, false)
	e := newEngine(t, Options{Kind: IOUring})
	f, err := e.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	q := e.NewQueue(QueueOptions{})
	read := func() {
		t.Helper()
		if err := q.Submit(context.Background(), []Request{{File: f, Off: 1, Len: 10, Worker: -1}}); err != nil {
			t.Fatal(err)
		}
		c, err := q.Next(testCtx(t))
		if err != nil || c.Err != nil {
			t.Fatal(err, c.Err)
		}
		c.Release()
	}
	read()
	w := e.workers[0]
	before := w.loops.Load()
	time.Sleep(50 * time.Millisecond) // room for a spinning worker to show itself
	if n := w.loops.Load() - before; n > 5 {
		t.Fatalf("idle worker looped %d times", n)
	}
	read() // the eventfd wakes it
}

// TestHandlerCallsPerWorkerNeverOverlap: a Handler may keep per-worker state
// unlocked, also on the pread pool where many goroutines read for a worker.
func TestHandlerCallsPerWorkerNeverOverlap(t *testing.T) {
	data := content(1 << 20)
	path := writeFile(t, data, false)
	for _, kind := range []Kind{IOUring, Pread} {
		t.Run(kind.String(), func(t *testing.T) {
			e := newEngine(t, Options{Kind: kind, Workers: 2, QueueDepth: 16, SlotSize: 16 << 10})
			f, err := e.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			var busy [2]atomic.Int32
			var perWorker [2]int // unlocked on purpose: the race detector checks the claim
			var left atomic.Int64
			left.Store(1000)
			finished := make(chan struct{})
			var overlap atomic.Bool
			q := e.NewQueue(QueueOptions{Handler: func(c *Completion) {
				if !busy[c.Worker].CompareAndSwap(0, 1) {
					overlap.Store(true)
				}
				perWorker[c.Worker]++
				for i := 0; i < 200; i++ { // widen the window
					_ = c.Data[i%len(c.Data)]
				}
				busy[c.Worker].Store(0)
				if n := left.Add(-1); n >= 32 {
					if c.Resubmit(Request{File: f, Off: int64(n) * 1000, Len: 1000}) == nil {
						return
					}
				} else if n == 0 {
					defer close(finished)
				}
				c.Release()
			}})
			reqs := make([]Request, 32)
			for i := range reqs {
				reqs[i] = Request{File: f, Off: int64(i) * 999, Len: 1000, Worker: i % 2}
			}
			if err := q.Submit(context.Background(), reqs); err != nil {
				t.Fatal(err)
			}
			<-finished
			if overlap.Load() {
				t.Fatal("Handler calls for one worker overlapped")
			}
			if err := q.Drain(testCtx(t)); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestResubmitOnlyInsideHandler(t *testing.T) {
	data := content(64 << 10)
	path := writeFile(t, data, false)
	for _, kind := range []Kind{IOUring, Pread} {
		e := newEngine(t, Options{Kind: kind, QueueDepth: 4, SlotSize: 16 << 10})
		f, err := e.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		// A completion from Next.
		q := e.NewQueue(QueueOptions{})
		req := []Request{{File: f, Len: 10, Worker: -1}}
		if err := q.Submit(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		c, err := q.Next(testCtx(t))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Resubmit(req[0]); !errors.Is(err, ErrResubmit) {
			t.Fatalf("%v: Resubmit of a Next completion: %v", kind, err)
		}
		c.Release()
		// A Handler completion kept past its call.
		kept := make(chan *Completion, 1)
		hq := e.NewQueue(QueueOptions{Handler: func(c *Completion) { kept <- c }})
		if err := hq.Submit(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		c = <-kept
		for c.s.w.handling.Load() != nil { // until the Handler call returned
			runtime.Gosched()
		}
		if err := c.Resubmit(req[0]); !errors.Is(err, ErrResubmit) {
			t.Fatalf("%v: Resubmit after the Handler returned: %v", kind, err)
		}
		c.Release()
		if q.InFlight()+hq.InFlight() != 0 {
			t.Fatal("slots not released")
		}
	}
}

func TestRingFlagsLadder(t *testing.T) {
	e := newEngine(t, Options{Kind: IOUring, RingFlags: []uint32{ring.SetupDeferTaskrun, ring.SetupSingleIssuer | ring.SetupCoopTaskrun}})
	if got := e.Info().SetupFlags; got != "COOP_TASKRUN|SINGLE_ISSUER" {
		t.Fatalf("SetupFlags %q", got)
	}
	readOne(t, e, content(9000), 17, 8000, -1).Release()
}

// TestScribbleOnRelease checks Options.Scribble: a released slot's bytes
// read 0xA5 at once, so use after Release shows in tests.
func TestScribbleOnRelease(t *testing.T) {
	e := newEngine(t, Options{Kind: IOUring, Scribble: true})
	c := readOne(t, e, content(1<<20), 4096, 8192, -1)
	kept := c.Data // used after Release on purpose
	c.Release()
	for i, b := range kept {
		if b != 0xA5 {
			t.Fatalf("byte %d is %#x after Release, want 0xa5", i, b)
		}
	}
}

// TestSettleWaitsForHandlersNotRelease checks Queue.Settle returns once
// every Handler call is done while completions are still held, and that
// Drain then waits for their Release.
func TestSettleWaitsForHandlersNotRelease(t *testing.T) {
	path := writeFile(t, content(1<<20), false)
	e := newEngine(t, Options{Kind: IOUring, Workers: 2})
	f, err := e.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var kept []*Completion
	q := e.NewQueue(QueueOptions{Handler: func(c *Completion) {
		time.Sleep(time.Millisecond) // a Handler that decodes
		mu.Lock()
		kept = append(kept, c)
		mu.Unlock()
	}})
	const n = 20
	reqs := make([]Request, n)
	for i := range reqs {
		reqs[i] = Request{File: f, Off: int64(i) * 4096, Len: 4096, Worker: -1}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := q.Submit(ctx, reqs); err != nil {
		t.Fatal(err)
	}
	if err := q.Settle(ctx); err != nil {
		t.Fatalf("Settle: %v", err)
	}
	mu.Lock()
	got := len(kept)
	mu.Unlock()
	if got != n {
		t.Fatalf("Settle returned with %d of %d Handler calls done", got, n)
	}
	short, cancelShort := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancelShort()
	if err := q.Drain(short); err == nil {
		t.Fatal("Drain returned while completions are held")
	}
	for _, c := range kept {
		c.Release()
	}
	if err := q.Drain(ctx); err != nil {
		t.Fatalf("Drain after Release: %v", err)
	}
}

// testCtx bounds the waits of the package's tests: a completion that never
// comes fails the test waiting for it (by name) within five minutes of the
// start, instead of hanging the package until go test's timeout.
func testCtx(testing.TB) context.Context { return waitCtx }

var waitCtx = context.Background()

// TestRingRefilledBeforeHandlers: a Handler (decoding, say) runs only once
// the worker has handed the kernel every queued read its depth allows, so
// the device never idles behind a slow handler. The handler runs on the
// worker's goroutine, so it may read the worker's counters.
func TestRingRefilledBeforeHandlers(t *testing.T) {
	data := content(1 << 20)
	path := writeFile(t, data, false)
	const depth, n = 2, 64
	e := newEngine(t, Options{Kind: IOUring, QueueDepth: depth, SlotsPerWorker: n, SlotSize: 16 << 10})
	f, err := e.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var calls, idle, queuedSeen int
	q := e.NewQueue(QueueOptions{Handler: func(c *Completion) {
		w := c.s.w
		calls++
		if w.pqLen > 0 {
			queuedSeen++
			if w.inKernel < depth {
				idle++
			}
		}
		c.Release()
	}})
	reqs := make([]Request, n)
	for i := range reqs {
		reqs[i] = Request{File: f, Off: int64(i) * 4096, Len: 4096, Worker: 0}
	}
	if err := q.Submit(testCtx(t), reqs); err != nil {
		t.Fatal(err)
	}
	if err := q.Settle(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if calls != n {
		t.Fatalf("%d handler calls, want %d", calls, n)
	}
	if queuedSeen == 0 {
		t.Fatal("no handler ran while reads were queued: the test shows nothing")
	}
	if idle > 0 {
		t.Fatalf("%d of %d handlers ran with reads queued and the ring below depth %d", idle, queuedSeen, depth)
	}
}

// TestStatsCountTheLoop: Stats counts every read reaped, waits no more
// often than it enters, never more reads in the kernel at a wait than the
// depth, and a backlog behind a full ring; the pread backend counts
// nothing.
func TestStatsCountTheLoop(t *testing.T) {
	data := content(1 << 20)
	path := writeFile(t, data, false)
	const depth, n = 4, 200
	for _, kind := range []Kind{IOUring, Pread} {
		e := newEngine(t, Options{Kind: kind, QueueDepth: depth, SlotsPerWorker: n, SlotSize: 16 << 10})
		f, err := e.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		var handled atomic.Int64
		posted := make(chan struct{})
		q := e.NewQueue(QueueOptions{Handler: func(c *Completion) {
			if handled.Add(1) == 1 {
				// Hold the worker until every request is posted, so that
				// its next wait has a backlog behind the full ring.
				select {
				case <-posted:
				case <-time.After(10 * time.Second):
					t.Error("Submit did not return while a handler ran")
				}
			}
			c.Release()
		}})
		reqs := make([]Request, n)
		for i := range reqs {
			reqs[i] = Request{File: f, Off: int64(i%256) * 4096, Len: 4096, Worker: 0}
		}
		if err := q.Submit(testCtx(t), reqs); err != nil {
			t.Fatal(err)
		}
		close(posted)
		if err := q.Settle(testCtx(t)); err != nil {
			t.Fatal(err)
		}
		st := e.Stats()
		if kind == Pread {
			if st != (Stats{}) {
				t.Fatalf("pread engine counted %+v", st)
			}
			continue
		}
		if st.Reaped != n || handled.Load() != n {
			t.Fatalf("reaped %d, handled %d, want %d", st.Reaped, handled.Load(), n)
		}
		if st.Enters == 0 || st.Waits > st.Enters || st.Waits == 0 {
			t.Fatalf("enters %d, waits %d", st.Enters, st.Waits)
		}
		if st.InKernelAtWaits > depth*st.Waits || st.InKernelAtWaits == 0 {
			t.Fatalf("%d reads in the kernel over %d waits at depth %d", st.InKernelAtWaits, st.Waits, depth)
		}
		if st.QueuedAtWaits == 0 {
			t.Fatalf("no backlog seen at any of %d waits with %d requests for depth %d", st.Waits, n, depth)
		}
		if st.HandlerTime <= 0 || st.WaitTime <= 0 {
			t.Fatalf("handler time %v, wait time %v", st.HandlerTime, st.WaitTime)
		}
		if st.Sub(Stats{}) != st || st.Sub(st) != (Stats{}) {
			t.Fatalf("Sub: %+v less nothing is %+v, less itself %+v", st, st.Sub(Stats{}), st.Sub(st))
		}
	}
}

// anonHugeKB returns AnonHugePages of the mapping of /proc/self/smaps
// that holds addr, in KiB.
func anonHugeKB(t *testing.T, addr uintptr) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Skipf("smaps: %v", err)
	}
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		var lo, hi uintptr
		if n, _ := fmt.Sscanf(line, "%x-%x ", &lo, &hi); n == 2 {
			in = lo <= addr && addr < hi
			continue
		}
		if in && strings.HasPrefix(line, "AnonHugePages:") {
			var kb int
			fmt.Sscanf(strings.TrimPrefix(line, "AnonHugePages:"), "%d", &kb)
			return kb
		}
	}
	t.Fatalf("no mapping holds %#x", addr)
	return 0
}

// TestSlotsOnHugePages: by default slot memory starts on a huge-page
// boundary and transparent huge pages back it (where THP is on), and
// reads into it return the right bytes; HugePages Off keeps 4 KiB pages
// where THP is madvise-only.
func TestSlotsOnHugePages(t *testing.T) {
	mode := thpMode()
	if mode != "always" && mode != "madvise" {
		t.Skipf("transparent huge pages %q", mode)
	}
	data := content(1 << 20)
	for _, hp := range []Tristate{TryOn, On, Off} {
		e := newEngine(t, Options{Kind: IOUring, QueueDepth: 8, SlotsPerWorker: 64, SlotSize: 64 << 10, HugePages: hp})
		w := e.workers[0]
		addr := uintptr(unsafe.Pointer(unsafe.SliceData(w.mem)))
		huge := anonHugeKB(t, addr)
		if hp != Off {
			if !e.Info().HugePages || addr%hugePage != 0 || huge < 2048 {
				t.Fatalf("HugePages %v: Info %v, slots at %#x, %d KiB on huge pages", hp, e.Info().HugePages, addr, huge)
			}
		} else if e.Info().HugePages || (mode == "madvise" && huge != 0) {
			t.Fatalf("HugePages Off: Info %v, %d KiB on huge pages", e.Info().HugePages, huge)
		}
		c := readOne(t, e, data, 4096*3+17, 60<<10, 0)
		c.Release()
	}
}

// TestBatchSubmitChunks checks that no io_uring_enter submits more than
// BatchSubmit reads (so n reads take at least n/BatchSubmit enters, also
// when the early refill before the handlers has a whole ring of room), and
// BatchSubmit's default (0: the chunker's).
func TestBatchSubmitChunks(t *testing.T) {
	for _, c := range []struct{ depth, batch, want int }{{64, 0, 0}, {8, -3, 0}, {32, 4, 4}, {4, 9, 4}} {
		o, err := Options{QueueDepth: c.depth, BatchSubmit: c.batch}.fill()
		if err != nil || o.BatchSubmit != c.want {
			t.Errorf("depth %d, BatchSubmit %d: filled to %d (%v), want %d", c.depth, c.batch, o.BatchSubmit, err, c.want)
		}
	}
	path := writeFile(t, content(1<<20), false)
	const depth, batch, n = 32, 4, 512
	e := newEngine(t, Options{Kind: IOUring, QueueDepth: depth, BatchSubmit: batch, SlotsPerWorker: n, SlotSize: 16 << 10})
	f, err := e.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	q := e.NewQueue(QueueOptions{Handler: func(c *Completion) {
		if c.Err != nil {
			t.Error(c.Err)
		}
		c.Release()
	}})
	reqs := make([]Request, n)
	for i := range reqs {
		reqs[i] = Request{File: f, Off: int64(i%256) * 4096, Len: 4096}
	}
	if err := q.Submit(testCtx(t), reqs); err != nil {
		t.Fatal(err)
	}
	if err := q.Settle(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	st := e.Stats()
	if st.Reaped != n {
		t.Fatalf("reaped %d of %d", st.Reaped, n)
	}
	if st.Enters < n/batch {
		t.Fatalf("%d reads in %d enters: more than %d a call", n, st.Enters, batch)
	}
}

// TestRingFlagsUnsupported: a RingFlags ladder with SQPOLL or IOPOLL fails
// New with ring.ErrUnsupportedFlags, with Kind Auto too (it is a
// configuration error, not a kernel without io_uring).
func TestRingFlagsUnsupported(t *testing.T) {
	for _, kind := range []Kind{Auto, IOUring} {
		for _, f := range []uint32{ring.SetupSQPoll, ring.SetupIOPoll} {
			e, err := New(Options{Kind: kind, RingFlags: []uint32{f, 0}})
			if err == nil {
				e.Close()
			}
			if !errors.Is(err, ring.ErrUnsupportedFlags) {
				t.Errorf("New(%v, RingFlags %s) = %v, want ring.ErrUnsupportedFlags", kind, ring.FlagsString(f), err)
			}
		}
	}
}

// TestBacklogFillsRingBeforeReaping: queued requests go into the ring, a
// chunk per enter, until it is full before the worker reaps anything (as
// fio issues what it reaped before it reaps again). Reaping between
// chunks let the delivered slots' next reads queue behind the backlog:
// a standing queue outside the ring, submission latency in tens of µs and
// less depth at the device. The backlog is submitted from a handler, on
// the worker's goroutine, so that all of it is queued when the worker
// next fills; buffered reads of cached pages complete during the
// submitting enter, so a reap between chunks shows as a completion before
// a later chunk's submission.
func TestBacklogFillsRingBeforeReaping(t *testing.T) {
	const depth = 8
	e, f := cachedFileEngine(t, 1<<20, depth, depth+1)
	for round := 0; round < 10; round++ {
		var mu sync.Mutex
		var sub, done []int64
		backlog := e.NewQueue(QueueOptions{Handler: func(c *Completion) {
			mu.Lock()
			sub, done = append(sub, c.SubmitNs), append(done, c.DoneNs)
			mu.Unlock()
			c.Release()
		}})
		reqs := make([]Request, depth)
		for i := range reqs {
			reqs[i] = Request{File: f, Off: int64(i) * 8192, Len: 4096, Worker: -1}
		}
		var subErr error
		trigger := e.NewQueue(QueueOptions{Handler: func(c *Completion) {
			c.Release()
			subErr = backlog.Submit(context.Background(), reqs) // depth free slots: does not block
		}})
		if err := trigger.Submit(testCtx(t), []Request{{File: f, Off: 0, Len: 4096, Worker: -1}}); err != nil {
			t.Fatal(err)
		}
		if err := trigger.Settle(testCtx(t)); err != nil {
			t.Fatal(err)
		}
		if err := backlog.Settle(testCtx(t)); err != nil || subErr != nil {
			t.Fatal(err, subErr)
		}
		if len(sub) != depth {
			t.Fatalf("%d completions of %d", len(sub), depth)
		}
		if slices.Max(sub) > slices.Min(done) {
			t.Fatalf("round %d: a read was submitted %d ns after another completed: the worker reaped before the ring was full",
				round, slices.Max(sub)-slices.Min(done))
		}
	}
}

// TestResubmitGoesOutBeforeNextHandler: a read a Handler resubmits is in
// the ring before the next handler of the same round runs, as fio issues
// a read for each completion it takes in; held back until the round's
// last handler, it waited for all of them outside the device. Buffered
// reads of cached pages complete during the enter that submits them, so
// a round has every read of the batch.
func TestResubmitGoesOutBeforeNextHandler(t *testing.T) {
	const depth = 8
	e, f := cachedFileEngine(t, 1<<20, depth, depth)
	type span struct{ start, end int64 }
	var handlers [depth]span // first generation, by index
	var resub [depth]int64   // SubmitNs of each handler's resubmitted read
	var mu sync.Mutex
	var failed error
	q := e.NewQueue(QueueOptions{Handler: func(c *Completion) {
		start := Now()
		k := int(c.Tag & 0xff)
		if c.Tag < 0x100 { // first generation: resubmit once
			mu.Lock()
			handlers[k].start = start
			mu.Unlock()
			if err := c.Resubmit(Request{File: f, Off: int64(k) * 8192, Len: 4096, Tag: 0x100 | uint64(k), Worker: -1}); err != nil {
				mu.Lock()
				failed = err
				mu.Unlock()
				c.Release()
			}
			mu.Lock()
			handlers[k].end = Now()
			mu.Unlock()
			return
		}
		mu.Lock()
		resub[k] = c.SubmitNs
		mu.Unlock()
		c.Release()
	}})
	reqs := make([]Request, depth)
	for i := range reqs {
		reqs[i] = Request{File: f, Off: int64(i) * 8192, Len: 4096, Tag: uint64(i), Worker: -1}
	}
	if err := q.Submit(testCtx(t), reqs); err != nil {
		t.Fatal(err)
	}
	if err := q.Settle(testCtx(t)); err != nil || failed != nil {
		t.Fatal(err, failed)
	}
	later := 0
	for k := range depth {
		for j := range depth {
			if handlers[j].start <= handlers[k].end {
				continue
			}
			later++
			if resub[k] > handlers[j].start {
				t.Fatalf("handler %d's resubmitted read went into the ring %d ns after handler %d began", k, resub[k]-handlers[j].start, j)
			}
		}
	}
	if later == 0 {
		t.Fatal("no handler ran after another: the test shows nothing")
	}
}

// TestResubmitPastEOFDuringRound: a handler resubmits a read with nothing
// to read (past the end of the file) while later completions of its round
// wait: it completes at once when deliver puts the round's resubmissions
// into the ring, and is delivered in the next round, not dropped.
func TestResubmitPastEOFDuringRound(t *testing.T) {
	const depth = 8
	e, f := cachedFileEngine(t, 64<<10, depth, depth)
	var empty, first atomic.Int64
	q := e.NewQueue(QueueOptions{Handler: func(c *Completion) {
		if c.Tag == 1 { // the resubmitted read: nothing past EOF
			if len(c.Data) != 0 || c.Err != nil {
				t.Errorf("past EOF: %d bytes, %v", len(c.Data), c.Err)
			}
			empty.Add(1)
			c.Release()
			return
		}
		first.Add(1)
		if err := c.Resubmit(Request{File: f, Off: 1 << 20, Len: 4096, Tag: 1, Worker: -1}); err != nil {
			t.Error(err)
			c.Release()
		}
	}})
	for round := 0; round < 20; round++ {
		reqs := make([]Request, depth)
		for i := range reqs {
			reqs[i] = Request{File: f, Off: int64(i) * 4096, Len: 4096, Worker: -1}
		}
		if err := q.Submit(testCtx(t), reqs); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err := q.Settle(ctx)
		cancel()
		if err != nil {
			t.Fatalf("round %d: %v: %d reads, %d empty reads delivered", round, err, first.Load(), empty.Load())
		}
	}
	if first.Load() != empty.Load() {
		t.Fatalf("%d reads resubmitted past EOF, %d delivered", first.Load(), empty.Load())
	}
}

// cachedFileEngine returns a one-worker io_uring engine of depth reads in
// flight, chunks of one, slots slots and timestamps, and a file of size
// bytes opened buffered with its pages in the page cache, so that its
// reads complete during the enter that submits them.
func cachedFileEngine(t *testing.T, size, depth, slots int) (*Engine, *File) {
	t.Helper()
	return cachedFile(t, size, Options{Kind: IOUring, Workers: 1, QueueDepth: depth, BatchSubmit: 1, Direct: Off, Timestamps: true,
		SlotsPerWorker: slots, SlotSize: 8 << 10})
}

// cachedFile writes a file of size bytes, opens it on an engine of
// options o and reads it whole, so that its pages are cached.
func cachedFile(t *testing.T, size int, o Options) (*Engine, *File) {
	t.Helper()
	path := writeFile(t, content(size), false)
	e := newEngine(t, o)
	f, err := e.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.ReadAt(make([]byte, size), 0); err != nil && err != io.EOF {
		t.Fatal(err)
	}
	return e, f
}
