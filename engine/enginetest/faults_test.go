package enginetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/sys/unix"

	"github.com/pagefeed/pagefeed/engine"
)

// faultReads is the number of reads TestFaultsNothingLost performs across
// its backends: enough that every fault kind lands many times.
const faultReads = 200_000

// TestFaultsNothingLost reads a file through engines whose every read
// attempt may fail with EIO, come back short, or fail with EAGAIN, EINTR or
// ECANCELED. Transient faults must be absorbed (the read retried or
// resumed, with the exact bytes delivered), EIO must reach the consumer as
// *engine.Error{Op: "read", Path, Off} naming the request, and every request must
// complete exactly once: none lost, none duplicated.
func TestFaultsNothingLost(t *testing.T) {
	data := content(8 << 20)
	path := writeFile(t, data)
	reads := faultReads
	if testing.Short() {
		reads /= 10
	}
	for _, tc := range []struct {
		name  string
		opts  engine.Options
		share int // per cent of the reads
	}{
		{"uring/direct", engine.Options{Kind: engine.IOUring, QueueDepth: 64, Workers: 2}, 50},
		{"uring/buffered/nofixed", engine.Options{Kind: engine.IOUring, QueueDepth: 32, Direct: engine.Off, FixedBuffers: engine.Off}, 20},
		{"pread/direct", engine.Options{Kind: engine.Pread, QueueDepth: 16, Workers: 2}, 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inj := &RateFaults{EIO: 0.002, Short: 0.02, EAGAIN: 0.01, EINTR: 0.01, ECANCELED: 0.01, Seed: 42}
			o := tc.opts
			o.SlotSize = 32 << 10
			o.Faults = inj
			e := newEngine(t, o)
			f, err := e.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			n := reads * tc.share / 100
			res := runFaultReads(t, e, f, data, n)
			c := inj.Counts()
			t.Logf("%d reads, %d attempts; injected EIO %d, short %d, EAGAIN %d, EINTR %d, ECANCELED %d; delivered %d ok, %d failed",
				n, c.Attempts, c.EIO, c.Short, c.EAGAIN, c.EINTR, c.ECANCELED, res.ok, res.failed)
			if res.ok+res.failed != int64(n) {
				t.Fatalf("%d ok + %d failed completions for %d requests", res.ok, res.failed, n)
			}
			// Each injected EIO ends exactly one request; nothing else may fail.
			if res.failed != c.EIO {
				t.Fatalf("%d failed completions, %d EIOs injected", res.failed, c.EIO)
			}
			if c.Short == 0 || c.EAGAIN == 0 || c.EINTR == 0 || c.ECANCELED == 0 || c.EIO == 0 {
				t.Fatalf("some fault kinds were never injected: %+v", c)
			}
			// Every transient error costs one more attempt (a short read
			// may not: the bytes asked for can lie before its end).
			if retried := c.EAGAIN + c.EINTR + c.ECANCELED; c.Attempts < int64(n)+retried {
				t.Fatalf("%d attempts for %d reads and %d transient errors: retries missing", c.Attempts, n, retried)
			}
		})
	}
}

type faultResult struct{ ok, failed int64 }

// runFaultReads submits n random reads of f (whose content is data) and
// checks every completion: exact bytes, or a read error naming the request.
// It fails the test on a lost or duplicated completion.
func runFaultReads(t *testing.T, e *engine.Engine, f *engine.File, data []byte, n int) faultResult {
	t.Helper()
	offs := make([]int64, n)
	lens := make([]int32, n)
	r := rand.New(rand.NewPCG(uint64(n), 3))
	for i := range offs {
		lens[i] = int32(1 + r.IntN(16<<10))
		offs[i] = min(r.Int64N(int64(len(data))-int64(lens[i])+4096), int64(len(data))-1) // some run past EOF
	}
	seen := make([]atomic.Int32, n)
	var res faultResult
	var mu sync.Mutex
	var bad []string // first problems, reported after Drain
	report := func(format string, args ...any) {
		mu.Lock()
		if len(bad) < 10 {
			bad = append(bad, fmt.Sprintf(format, args...))
		}
		mu.Unlock()
	}
	q := e.NewQueue(engine.QueueOptions{Handler: func(c *engine.Completion) {
		defer c.Release()
		i := int(c.Tag)
		if i >= n {
			report("unknown tag %d", c.Tag)
			return
		}
		if seen[i].Add(1) != 1 {
			report("request %d completed twice", i)
		}
		if c.Err != nil {
			var ee *engine.Error
			if !errors.As(c.Err, &ee) || ee.Op != "read" || ee.Path != f.Path() || ee.Off != offs[i] || !errors.Is(c.Err, unix.EIO) {
				report("request %d (off %d): error %v, want read EIO naming %s at %d", i, offs[i], c.Err, f.Path(), offs[i])
			}
			atomic.AddInt64(&res.failed, 1)
			return
		}
		want := expect(data, offs[i], int(lens[i]))
		if string(c.Data) != string(want) {
			report("request %d (off %d len %d): %d bytes, want %d, or content differs", i, offs[i], lens[i], len(c.Data), len(want))
		}
		atomic.AddInt64(&res.ok, 1)
	}})
	reqs := make([]engine.Request, 0, 256)
	for i := 0; i < n; i++ {
		reqs = append(reqs, engine.Request{File: f, Off: offs[i], Len: int(lens[i]), Tag: uint64(i), Worker: -1})
		if len(reqs) == cap(reqs) || i == n-1 {
			if err := q.Submit(context.Background(), reqs); err != nil {
				t.Fatalf("Submit: %v", err)
			}
			reqs = reqs[:0]
		}
	}
	if err := q.Drain(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		t.Error(b)
	}
	for i := range seen {
		if c := seen[i].Load(); c != 1 {
			t.Fatalf("request %d completed %d times", i, c)
		}
	}
	return res
}

// TestRateFaultsDistribution checks the injector draws each kind near its
// rate and leaves other attempts alone.
func TestRateFaultsDistribution(t *testing.T) {
	r := &RateFaults{EIO: 0.01, Short: 0.05, EAGAIN: 0.02, EINTR: 0.02, ECANCELED: 0.02, Seed: 1}
	const n = 200_000
	untouched := 0
	for i := 0; i < n; i++ {
		if r.Fault(nil, 0, 4096, 4096) == 4096 {
			untouched++
		}
	}
	c := r.Counts()
	for _, k := range []struct {
		name string
		got  int64
		p    float64
	}{{"EIO", c.EIO, r.EIO}, {"short", c.Short, r.Short}, {"EAGAIN", c.EAGAIN, r.EAGAIN}, {"EINTR", c.EINTR, r.EINTR}, {"ECANCELED", c.ECANCELED, r.ECANCELED}} {
		want := k.p * n
		if float64(k.got) < want*0.8 || float64(k.got) > want*1.2 {
			t.Errorf("%s: %d injected, want about %.0f", k.name, k.got, want)
		}
	}
	if int64(untouched)+c.Total() != n || c.Attempts != n {
		t.Errorf("%d untouched + %d faults, %d attempts, want %d", untouched, c.Total(), c.Attempts, n)
	}
	only := &RateFaults{EIO: 1, Only: func(_ *engine.File, off int64) bool { return off == 8192 }}
	if only.Fault(nil, 0, 10, 10) != 10 || only.Fault(nil, 8192, 10, 10) != -int(unix.EIO) {
		t.Error("Only does not confine the faults")
	}
}

// BenchmarkRateFaults is the injector's cost per read attempt (tests and
// soak only; production engines pay a nil check).
func BenchmarkRateFaults(b *testing.B) {
	r := &RateFaults{EIO: 0.001, Short: 0.01, EAGAIN: 0.005, EINTR: 0.005, ECANCELED: 0.005, Seed: 1}
	b.ReportAllocs()
	b.SetBytes(4096)
	for i := 0; i < b.N; i++ {
		r.Fault(nil, int64(i)*4096, 4096, 4096)
	}
	b.ReportMetric(float64(r.Counts().Total())/float64(b.N), "faults/op")
}

// newEngine starts an engine that the test closes; it skips when io_uring
// is refused by this kernel.
func newEngine(t testing.TB, o engine.Options) *engine.Engine {
	t.Helper()
	o.Logf = t.Logf
	e, err := engine.New(o)
	if err != nil {
		if o.Kind == engine.IOUring && (errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOMEM)) {
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
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// writeFile writes data to a file in a temp dir and returns its path.
func writeFile(t testing.TB, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "data.bin")
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
	return data[off:min(off+int64(n), int64(len(data)))]
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
