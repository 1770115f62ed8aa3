package rinas

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pagefeed/pagefeed/index"
	"github.com/pagefeed/pagefeed/index/perm"
	"github.com/pagefeed/pagefeed/internal/gen"
)

// BenchmarkOpenPlan measures what Open adds for the training semantics on
// the index benchmark's 1,000-file, ~1M-page dataset (2,000 rows of ~24
// tokens per file in ~128-byte pages): the content fingerprint, and the
// epoch plan behind Len for page batches and for row batches of a world of
// 8 (DropLast: every rank's rows counted). Set PAGEFEED_BENCH_FILES to
// change the file count.
func BenchmarkOpenPlan(b *testing.B) {
	files := 1000
	if v := os.Getenv("PAGEFEED_BENCH_FILES"); v != "" {
		fmt.Sscan(v, &files)
	}
	dir := b.TempDir()
	res, err := gen.Run(context.Background(), gen.Config{Dir: dir, Files: files, RowsPerFile: 2000, PageSize: 128,
		MeanTokens: 24, Codec: "none", PageIndex: true, Seed: 1, Parallelism: 2})
	if err != nil {
		b.Fatal(err)
	}
	ix, err := index.Build(context.Background(), res.Files, index.Options{Columns: []string{"input_ids"}, NoSidecar: true, Logf: func(string, ...any) {}})
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("%d files, %d pages, %d rows", ix.NumFiles(), ix.NumPages(0), ix.NumRows())
	b.Run("fingerprint", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			fingerprint(ix, "input_ids.list.element")
		}
	})
	for _, rows := range []int{0, 64} {
		b.Run(fmt.Sprintf("plan/rows=%d", rows), func(b *testing.B) {
			l := &Loader{cfg: Config{SharedIndex: ix, World: 8, Rank: 3, BatchPages: 64, BatchRows: rows}, ix: ix}
			if err := l.cfg.fill(); err != nil {
				b.Fatal(err)
			}
			if err := l.plan(); err != nil {
				b.Fatal(err)
			}
			for i := 0; i < b.N; i++ {
				if err := l.planInit(); err != nil {
					b.Fatal(err)
				}
				var err error
				if l.shard, l.ep, err = l.planEpoch(uint64(i), 0, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(l.Len()), "len")
		})
	}
	// The row-batch plan against the plan as first written
	// (planEpochRef), in alternating rounds on the same index, each
	// iteration timed alone (the index's row counts read once, the plans
	// kept so far forgotten); "twice" plans the same epoch twice, as a
	// resume does (State check, then the epoch's start). The medians over
	// all rounds are logged.
	l := &Loader{cfg: Config{SharedIndex: ix, World: 8, Rank: 3, BatchPages: 64, BatchRows: 64}, ix: ix}
	if err := l.cfg.fill(); err != nil {
		b.Fatal(err)
	}
	if err := l.plan(); err != nil {
		b.Fatal(err)
	}
	if err := l.planInit(); err != nil {
		b.Fatal(err)
	}
	type variant struct {
		name string
		plan func(epoch, start uint64, rem *State) (perm.Shard, epochPlan, error)
		runs int
	}
	variants := []variant{
		{"reference", planRef(l), 1},
		{"new", l.planEpoch, 1},
		{"reference/twice", planRef(l), 2},
		{"new/twice", l.planEpoch, 2},
	}
	times := make([][]time.Duration, len(variants))
	rounds := 5
	for round := 0; round < rounds; round++ {
		for v, vr := range variants {
			b.Run("rows=64/"+vr.name, func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					l.plans = planner{}
					t0 := time.Now()
					for k := 0; k < vr.runs; k++ {
						if _, _, err := vr.plan(uint64(i), 0, nil); err != nil {
							b.Fatal(err)
						}
					}
					times[v] = append(times[v], time.Since(t0))
				}
			})
		}
	}
	load, _ := os.ReadFile("/proc/loadavg")
	for v, vr := range variants {
		ts := times[v]
		slices.Sort(ts)
		if len(ts) > 0 {
			b.Logf("rows=64/%s: median %.2f ms, min %.2f ms over %d plans (GOMAXPROCS %d, load %s)",
				vr.name, float64(ts[len(ts)/2])/1e6, float64(ts[0])/1e6, len(ts), runtime.GOMAXPROCS(0), strings.TrimSpace(string(load)))
		}
	}
}

// planRef adapts the reference plan to planEpoch's signature.
func planRef(l *Loader) func(epoch, start uint64, rem *State) (perm.Shard, epochPlan, error) {
	return func(epoch, start uint64, rem *State) (perm.Shard, epochPlan, error) {
		return l.planEpochRef(epoch, start, rem != nil)
	}
}
