package rinas

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/pagefeed/pagefeed/index"
	"github.com/pagefeed/pagefeed/internal/gen"
)

// mixBenchSplit returns the identity benchmark's corpus (or
// $PAGEFEED_MIX_BENCH: a folder of Parquet files) and the same files split
// into three folders of symbolic links (as even as the count allows).
func mixBenchSplit(b *testing.B) (all string, parts []string) {
	all = os.Getenv("PAGEFEED_MIX_BENCH")
	if all == "" {
		all = identityBenchDir(b)
	}
	files, _ := filepath.Glob(filepath.Join(all, "*.parquet"))
	if len(files) < 3 {
		b.Skipf("%s: fewer than 3 files", all)
	}
	tmp := b.TempDir()
	for k := 0; k < 3; k++ {
		d := filepath.Join(tmp, fmt.Sprint("part", k))
		if err := os.Mkdir(d, 0o755); err != nil {
			b.Fatal(err)
		}
		for _, f := range files[k*len(files)/3 : (k+1)*len(files)/3] {
			abs, _ := filepath.Abs(f)
			if err := os.Symlink(abs, filepath.Join(d, filepath.Base(f))); err != nil {
				b.Fatal(err)
			}
		}
		parts = append(parts, d)
	}
	return all, parts
}

// BenchmarkMixture reads one epoch of input_ids in row batches of 1024
// (page shuffle, unordered) from one dataset and from a three-source
// mixture of the same files (each source its own rows once: the same
// rows), alternately, every iteration one epoch of each in alternating
// order. It reports each side's rows/s and the median of the
// iterations' ratios (mix/one), and each side's process CPU per row with
// the ratio of the totals (mix/one-cpu: above 1, the mixture costs more
// CPU per row), which other tenants of a shared machine disturb less than
// the wall-clock rates.
func BenchmarkMixture(b *testing.B) {
	all, parts := mixBenchSplit(b)
	base := Config{Columns: []string{"input_ids"}, World: 1, BatchRows: 1024,
		Index: index.Options{NoSidecar: true, Logf: func(string, ...any) {}}, Logf: func(string, ...any) {}}
	one := base
	one.Paths = []string{all}
	mix := base
	for _, p := range parts {
		mix.Sources = append(mix.Sources, Source{Paths: []string{p}})
	}
	epoch := func(cfg Config) (int64, time.Duration, time.Duration) {
		l, err := Open(context.Background(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		t0, c0 := time.Now(), cpuTime()
		var rows int64
		for {
			bt, err := l.Next(context.Background())
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			rows += int64(bt.Rows)
			bt.Release()
		}
		return rows, time.Since(t0), cpuTime() - c0
	}
	var rows [2]int64
	var busy, cpu [2]time.Duration
	var ratios []float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var rps [2]float64
		for k := 0; k < 2; k++ {
			side := (i + k) % 2 // alternate which side goes first
			cfg := one
			if side == 1 {
				cfg = mix
			}
			n, d, c := epoch(cfg)
			rows[side] += n
			busy[side] += d
			cpu[side] += c
			rps[side] = float64(n) / d.Seconds()
		}
		ratios = append(ratios, rps[1]/rps[0])
	}
	if rows[0] != rows[1] {
		b.Fatalf("one dataset delivered %d rows, the mixture %d", rows[0], rows[1])
	}
	slices.Sort(ratios)
	b.ReportMetric(float64(rows[0])/busy[0].Seconds(), "one-rows/s")
	b.ReportMetric(float64(rows[1])/busy[1].Seconds(), "mix-rows/s")
	b.ReportMetric(ratios[len(ratios)/2], "mix/one")
	b.ReportMetric(float64(cpu[0].Nanoseconds())/float64(rows[0]), "one-cpu-ns/row")
	b.ReportMetric(float64(cpu[1].Nanoseconds())/float64(rows[1]), "mix-cpu-ns/row")
	b.ReportMetric(cpu[1].Seconds()/cpu[0].Seconds(), "mix/one-cpu")
}

// BenchmarkMixtureOpen opens a mixture of 100 sources of 10 files each and
// one dataset of the same 1,000 files, alternately, and reports each
// side's Open (and Close) time and the median ratio (mix/one).
func BenchmarkMixtureOpen(b *testing.B) {
	dir := b.TempDir()
	if _, err := gen.Run(context.Background(), gen.Config{Dir: filepath.Join(dir, "all"), Files: 1000, RowsPerFile: 20, PageSize: 4096,
		PageVersion: 2, PageIndex: true, Codec: "none", Seed: 3, MeanTokens: 16, Parallelism: 2}); err != nil {
		b.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "all", "*.parquet"))
	base := Config{Columns: []string{"input_ids"}, World: 1, BatchRows: 64,
		Index: index.Options{NoSidecar: true, Logf: func(string, ...any) {}}, Logf: func(string, ...any) {}}
	one := base
	one.Paths = []string{filepath.Join(dir, "all")}
	mix := base
	for k := 0; k < 100; k++ {
		mix.Sources = append(mix.Sources, Source{Name: fmt.Sprint(k), Paths: files[k*10 : (k+1)*10]})
	}
	open := func(cfg Config) time.Duration {
		t0 := time.Now()
		l, err := Open(context.Background(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		d := time.Since(t0)
		l.Close()
		return d
	}
	var took [2]time.Duration
	var ratios []float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var d [2]time.Duration
		for k := 0; k < 2; k++ {
			side := (i + k) % 2
			cfg := one
			if side == 1 {
				cfg = mix
			}
			d[side] = open(cfg)
			took[side] += d[side]
		}
		ratios = append(ratios, d[1].Seconds()/d[0].Seconds())
	}
	slices.Sort(ratios)
	b.ReportMetric(took[0].Seconds()*1e3/float64(b.N), "one-open-ms")
	b.ReportMetric(took[1].Seconds()*1e3/float64(b.N), "mix-open-ms")
	b.ReportMetric(ratios[len(ratios)/2], "mix/one")
}
