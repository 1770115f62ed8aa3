package index

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/pagefeed/pagefeed/engine"
	"github.com/pagefeed/pagefeed/internal/gen"
	"go.uber.org/goleak"
)

// Benchmark datasets are generated once per test binary run, into a temp
// dir that TestMain removes. Timings are with a warm page cache (caches
// cannot be dropped on the development machine).
var (
	benchMu   sync.Mutex
	benchDirs = map[string][]string{}
	benchRoot string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if benchRoot != "" {
		os.RemoveAll(benchRoot)
	}
	// Build starts and closes its own engine: nothing may outlive it.
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutine leak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// benchDataset returns the files of a named dataset, generating it once.
// 2,000 rows of ~24 tokens per file in ~128-byte pages gives ~1,070
// input_ids pages per file.
func benchDataset(b *testing.B, name string, files int, pageIndex bool) []string {
	b.Helper()
	benchMu.Lock()
	defer benchMu.Unlock()
	if f, ok := benchDirs[name]; ok {
		return f
	}
	if benchRoot == "" {
		d, err := os.MkdirTemp("", "pagefeed-index-bench-")
		if err != nil {
			b.Fatal(err)
		}
		benchRoot = d
	}
	res, err := gen.Run(context.Background(), gen.Config{
		Dir: filepath.Join(benchRoot, name), Files: files, RowsPerFile: 2000, PageSize: 128,
		MeanTokens: 24, Codec: "none", PageIndex: pageIndex, Seed: 1, Parallelism: 2,
	})
	if err != nil {
		b.Fatal(err)
	}
	benchDirs[name] = res.Files
	return res.Files
}

func reportIndex(b *testing.B, ix *Index) {
	st := ix.Stats()
	b.ReportMetric(float64(st.Pages), "pages")
	b.ReportMetric(float64(st.ResidentBytes)/float64(st.Pages), "B/page")
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/build")
}

// benchReaders are the readers the build benchmarks compare: the default
// (engine, O_DIRECT where the file system allows: reads miss the page
// cache), the engine with buffered reads, and the pread pool.
func benchReaders(b *testing.B) []struct {
	name string
	r    engine.BatchReader
} {
	direct, err := engine.StartRangeReader(engine.Options{QueueDepth: 64, SlotSize: engine.ReaderSlotSize, Logf: b.Logf})
	if err != nil {
		b.Fatal(err)
	}
	buffered, err := engine.StartRangeReader(engine.Options{QueueDepth: 64, SlotSize: engine.ReaderSlotSize, Direct: engine.Off, Logf: b.Logf})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { direct.Close(); buffered.Close() })
	return []struct {
		name string
		r    engine.BatchReader
	}{{"default", nil}, {"engine_direct", direct}, {"engine_buffered", buffered}, {"pread", &engine.PreadReader{}}}
}

// BenchmarkBuild: 1,000 files, ~1M input_ids pages, offset indexes.
func BenchmarkBuild(b *testing.B) {
	files := benchDataset(b, "oi1000", 1000, true)
	for _, rd := range benchReaders(b) {
		b.Run(rd.name, func(b *testing.B) {
			benchBuild(b, files, Options{Columns: []string{"input_ids"}, NoSidecar: true, Logf: b.Logf, Reader: rd.r})
		})
	}
}

func benchBuild(b *testing.B, files []string, opts Options) {
	b.ReportAllocs()
	b.ResetTimer()
	var ix *Index
	for i := 0; i < b.N; i++ {
		var err error
		if ix, err = Build(context.Background(), files, opts); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.SetBytes(ix.ResidentBytes())
	reportIndex(b, ix)
}

// BenchmarkSidecarLoad: the same index loaded from its sidecar.
func BenchmarkSidecarLoad(b *testing.B) {
	files := benchDataset(b, "oi1000", 1000, true)
	sc := filepath.Join(b.TempDir(), "bench.idx")
	opts := Options{Columns: []string{"input_ids"}, Sidecar: sc, Logf: b.Logf}
	if _, err := Build(context.Background(), files, opts); err != nil {
		b.Fatal(err)
	}
	st, _ := os.Stat(sc)
	b.ReportAllocs()
	b.ResetTimer()
	var ix *Index
	for i := 0; i < b.N; i++ {
		var err error
		if ix, err = Build(context.Background(), files, opts); err != nil {
			b.Fatal(err)
		}
		if ix.Stats().Sidecar != "hit" {
			b.Fatalf("sidecar %s", ix.Stats().Sidecar)
		}
	}
	b.StopTimer()
	b.SetBytes(st.Size())
	reportIndex(b, ix)
}

// BenchmarkBuildHeaderWalk: 50 files, ~108k pages, no offset indexes.
func BenchmarkBuildHeaderWalk(b *testing.B) {
	files := benchDataset(b, "walk50", 50, false)
	for _, rd := range benchReaders(b) {
		b.Run(rd.name, func(b *testing.B) {
			benchBuild(b, files, Options{Columns: []string{"input_ids"}, NoSidecar: true, Logf: b.Logf, Reader: rd.r})
		})
	}
}

// BenchmarkLocate: random global pages of the 1M-page index.
func BenchmarkLocate(b *testing.B) {
	for _, name := range []string{"walk50", "oi1000"} {
		b.Run(name, func(b *testing.B) {
			n := map[string]int{"walk50": 50, "oi1000": 1000}[name]
			files := benchDataset(b, name, n, name == "oi1000")
			ix := build(b, files, Options{Columns: []string{"input_ids"}})
			np := ix.NumPages(0)
			rng := rand.New(rand.NewSource(1))
			gs := make([]int, 1<<16)
			for i := range gs {
				gs[i] = rng.Intn(np)
			}
			b.ReportAllocs()
			b.SetBytes(16)
			b.ResetTimer()
			var s int64
			for i := 0; i < b.N; i++ {
				s += ix.Locate(0, gs[i&(len(gs)-1)]).Offset
			}
			sinkLoc.Offset = s
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/locate")
			b.ReportMetric(float64(np), "pages")
		})
	}
}
