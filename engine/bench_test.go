package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/pagefeed/pagefeed/ring"
)

// The benchmark file: a few hundred MiB laid out once per test binary in a
// temp dir on the repository's disk and removed by TestMain. Setting
// PAGEFEED_BENCH_FILE reads an existing file instead (e.g. fio's 2 GiB
// file, for a same-run comparison); it is left in place.
const benchFileSize = 384 << 20

var (
	benchSize int64 = benchFileSize
	benchOnce sync.Once
	benchDir  string
	benchPath string
	benchErr  error
)

func benchFile(b *testing.B) string {
	b.Helper()
	benchOnce.Do(func() {
		if p := os.Getenv("PAGEFEED_BENCH_FILE"); p != "" {
			st, err := os.Stat(p)
			if err == nil && st.Size() < 1<<20 {
				err = fmt.Errorf("%s: %d bytes, want at least 1 MiB", p, st.Size())
			}
			if err != nil {
				benchErr = err
				return
			}
			benchPath, benchSize = p, st.Size()
			return
		}
		benchDir, benchErr = os.MkdirTemp("", "pagefeed-engine-bench-")
		if benchErr != nil {
			return
		}
		benchPath = filepath.Join(benchDir, "randread.bin")
		f, err := os.Create(benchPath)
		if err != nil {
			benchErr = err
			return
		}
		chunk := content(4 << 20)
		for off := 0; off < benchFileSize; off += len(chunk) {
			if _, err := f.Write(chunk); err != nil {
				benchErr = err
				break
			}
		}
		if err := f.Close(); err != nil && benchErr == nil {
			benchErr = err
		}
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchPath
}

func benchCleanup() {
	if benchDir != "" {
		os.RemoveAll(benchDir)
	}
}

// cpuNs returns this process's user+system CPU time.
func cpuNs() int64 {
	var ru unix.Rusage
	unix.Getrusage(unix.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// randOff maps a sequence number to a 4 KiB-aligned offset in the file.
func randOff(k uint64) int64 {
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	k ^= k >> 33
	return int64(k%uint64(benchSize/4096)) * 4096
}

// closedLoop is fio's randread iodepth=depth job: a Handler resubmits each
// completed 4 KiB read at a new random offset until b.N reads completed.
func closedLoop(b *testing.B, o Options, depth int) {
	path := benchFile(b)
	o.QueueDepth = depth
	o.SlotSize = 4096 * 2
	o.Logf = b.Logf
	e, err := New(o)
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	f, err := e.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	if !f.Direct() {
		b.Logf("O_DIRECT unavailable: page-cache reads")
	}
	var seq, issued, done atomic.Uint64
	n := uint64(b.N)
	finished := make(chan struct{})
	var failed atomic.Value
	q := e.NewQueue(QueueOptions{Handler: func(c *Completion) {
		if c.Err != nil {
			failed.Store(c.Err)
		}
		if issued.Add(1) <= n-uint64(min(depth, b.N)) {
			if err := c.Resubmit(Request{File: f, Off: randOff(seq.Add(1)), Len: 4096}); err != nil {
				failed.Store(err)
				c.Release()
			}
		} else {
			c.Release()
		}
		if done.Add(1) == n {
			close(finished)
		}
	}})
	b.SetBytes(4096)
	b.ReportAllocs()
	cpu0 := cpuNs()
	b.ResetTimer()
	reqs := make([]Request, min(depth, b.N))
	for i := range reqs {
		reqs[i] = Request{File: f, Off: randOff(seq.Add(1)), Len: 4096, Worker: -1}
	}
	if err := q.Submit(context.Background(), reqs); err != nil {
		b.Fatal(err)
	}
	<-finished
	b.StopTimer()
	if v := failed.Load(); v != nil {
		b.Fatal(v)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "IOPS")
	b.ReportMetric(float64(cpuNs()-cpu0)/float64(b.N), "cpu-ns/op")
	in := e.Info()
	b.Logf("kind=%v flags=%s fixed=%v direct=%v", in.Kind, in.SetupFlags, in.FixedBuffers, f.Direct())
}

func BenchmarkRandRead4K(b *testing.B) {
	b.Run("uring", func(b *testing.B) { closedLoop(b, Options{Kind: IOUring}, 64) })
	b.Run("uring/nofixed", func(b *testing.B) { closedLoop(b, Options{Kind: IOUring, FixedBuffers: Off}, 64) })
	b.Run("uring/batchcomplete8", func(b *testing.B) { closedLoop(b, Options{Kind: IOUring, BatchComplete: 8}, 64) })
	b.Run("uring/single_issuer+coop", func(b *testing.B) {
		closedLoop(b, Options{Kind: IOUring, RingFlags: []uint32{ring.SetupSingleIssuer | ring.SetupCoopTaskrun}}, 64)
	})
	b.Run("pread", func(b *testing.B) { closedLoop(b, Options{Kind: Pread}, 64) })
}

// BenchmarkSubmitNext4K is the consumer path: Submit from one goroutine,
// Next and Release on it, keeping depth reads in flight.
func BenchmarkSubmitNext4K(b *testing.B) {
	for _, kind := range []Kind{IOUring, Pread} {
		b.Run(kind.String(), func(b *testing.B) {
			path := benchFile(b)
			const depth = 64
			e, err := New(Options{Kind: kind, QueueDepth: depth, SlotSize: 8192, Logf: b.Logf})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			f, err := e.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			q := e.NewQueue(QueueOptions{})
			ctx := context.Background()
			b.SetBytes(4096)
			b.ReportAllocs()
			cpu0 := cpuNs()
			b.ResetTimer()
			var seq uint64
			req := make([]Request, 1)
			inflight := 0
			for got := 0; got < b.N; {
				for inflight < depth && got+inflight < b.N {
					seq++
					req[0] = Request{File: f, Off: randOff(seq), Len: 4096, Worker: -1}
					if err := q.Submit(ctx, req); err != nil {
						b.Fatal(err)
					}
					inflight++
				}
				c, err := q.Next(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if c.Err != nil {
					b.Fatal(c.Err)
				}
				c.Release()
				inflight--
				got++
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "IOPS")
			b.ReportMetric(float64(cpuNs()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}
