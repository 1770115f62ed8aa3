package rinas

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pagefeed/pagefeed/index"
	"github.com/pagefeed/pagefeed/internal/gen"
)

var identityBench struct {
	once sync.Once
	dir  string
	err  error
}

// identityBenchDir returns $PAGEFEED_IDENTITY_BENCH, or a corpus generated
// once into a temporary folder: 32 files of 3,000 documents (mean 256
// tokens), uncompressed 8 KiB pages, about 100 MB (TestMain removes it). Small pages from many
// files are the check's worst case: up to one statx per unit of a batch.
func identityBenchDir(b *testing.B) string {
	if d := os.Getenv("PAGEFEED_IDENTITY_BENCH"); d != "" {
		return d
	}
	identityBench.once.Do(func() {
		identityBench.dir, identityBench.err = os.MkdirTemp("", "rinas-identity-bench-")
		if identityBench.err != nil {
			return
		}
		_, identityBench.err = gen.Run(context.Background(), gen.Config{Dir: filepath.Join(identityBench.dir, "c"), Files: 32, RowsPerFile: 3000,
			PageSize: 8 << 10, PageVersion: 2, PageIndex: true, Codec: "none", Seed: 5, MeanTokens: 256, Parallelism: 2})
	})
	if identityBench.err != nil {
		b.Fatal(identityBench.err)
	}
	return filepath.Join(identityBench.dir, "c")
}

// BenchmarkIdentityCheck reads epochs of input_ids at the default
// configuration (page shuffle, 64-page batches), alternately with the
// identity check after each fetch batch (confirmFiles: one statx per file
// of the batch) and without it: every iteration runs one epoch of each,
// in alternating order, so both sides share the machine's state. It
// reports each side's pages/s over the run, the median of the
// iterations' ratios (check/nocheck; the machine is shared and noisy, and
// a pair's two epochs run seconds apart at most) and the statx calls per
// page.
func BenchmarkIdentityCheck(b *testing.B) {
	dir := identityBenchDir(b)
	cfg := Config{Paths: []string{dir}, Columns: []string{"input_ids"}, World: 1,
		Index: index.Options{NoSidecar: true, Logf: func(string, ...any) {}}, Logf: func(string, ...any) {}}
	var pages [2]int64
	var busy [2]time.Duration
	var checks int64
	var ratios []float64
	defer func() { benchSkipConfirm = false }()
	for i := 0; i < b.N; i++ {
		var rate [2]float64
		for k := 0; k < 2; k++ {
			side := (i + k) % 2 // 0: check, 1: no check
			benchSkipConfirm = side == 1
			cfg.Seed = uint64(i)
			l, err := Open(context.Background(), cfg)
			if err != nil {
				b.Fatal(err)
			}
			t0 := time.Now()
			eachBatch(b, l, func(bt *Batch) { bt.Release() })
			d := time.Since(t0)
			n := l.Stats().Pages
			busy[side] += d
			pages[side] += n
			rate[side] = float64(n) / d.Seconds()
			checks += l.fc.checks
			l.Close()
		}
		ratios = append(ratios, rate[0]/rate[1])
	}
	slices.Sort(ratios)
	b.ReportMetric(float64(pages[0])/busy[0].Seconds(), "pages/s-check")
	b.ReportMetric(float64(pages[1])/busy[1].Seconds(), "pages/s-nocheck")
	b.ReportMetric(ratios[len(ratios)/2], "median-ratio")
	b.ReportMetric(float64(checks)/float64(pages[0]), "statx/page")
}
