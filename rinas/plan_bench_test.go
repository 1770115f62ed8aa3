package rinas

import (
	"context"
	"fmt"
	"math/bits"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
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
		// What Open adds for the plan: the units' space from the index,
		// the first epoch's order and sums (row batches: one pass), and
		// this rank's share of it.
		b.Run(fmt.Sprintf("plan/rows=%d", rows), func(b *testing.B) {
			l := &Loader{cfg: Config{SharedIndex: ix, World: 8, Rank: 3, BatchPages: 64, BatchRows: rows}, ix: ix}
			if err := l.cfg.fill(); err != nil {
				b.Fatal(err)
			}
			if err := l.openUnits(); err != nil {
				b.Fatal(err)
			}
			var steps int64
			for i := 0; i < b.N; i++ {
				if err := l.openSpace(); err != nil {
					b.Fatal(err)
				}
				sh, err := l.planShare(l.epochPlan(uint64(i)), nil)
				if err != nil {
					b.Fatal(err)
				}
				steps = sh.Steps
			}
			b.ReportMetric(float64(steps), "len")
		})
	}
	// The row-batch plan's pass against the pass it replaced (rows
	// counted per rank of a round-robin deal, positions from the inverse
	// permutation a block at a time, rank by Lemire's multiply), in
	// alternating rounds on the same index, each iteration timed alone;
	// the medians over all rounds are logged.
	l := &Loader{cfg: Config{SharedIndex: ix, World: 8, Rank: 3, BatchPages: 64, BatchRows: 64}, ix: ix}
	if err := l.cfg.fill(); err != nil {
		b.Fatal(err)
	}
	if err := l.openUnits(); err != nil {
		b.Fatal(err)
	}
	rows := ix.PageRows(0)
	variants := []struct {
		name string
		run  func(epoch uint64)
	}{
		{"roundrobin-count", func(epoch uint64) {
			counts := make([]int64, 8)
			countRowsRef(perm.New(uint64(len(rows)), 0, epoch), rows, counts)
		}},
		{"share", func(epoch uint64) {
			if _, err := l.space.Epoch(0, epoch).Plan(l.params()); err != nil {
				b.Fatal(err)
			}
		}},
	}
	times := make([][]time.Duration, len(variants))
	for round := 0; round < 5; round++ {
		for v, vr := range variants {
			b.Run("pass/"+vr.name, func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					t0 := time.Now()
					vr.run(uint64(i))
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
			b.Logf("pass/%s: median %.2f ms, min %.2f ms over %d (GOMAXPROCS %d, load %s)",
				vr.name, float64(ts[len(ts)/2])/1e6, float64(ts[0])/1e6, len(ts), runtime.GOMAXPROCS(0), strings.TrimSpace(string(load)))
		}
	}
}

// countRowsRef is the pass the row-batch plan made before rows were
// shared as ranges: each item's rows added to the count of the rank its
// position falls to (round-robin over len(counts) ranks), the items read
// in order and their positions found a block at a time, split over
// GOMAXPROCS goroutines.
func countRowsRef(p perm.Perm, unit []int32, counts []int64) {
	n := uint64(len(unit))
	parts := uint64(max(1, min(runtime.GOMAXPROCS(0), int(n/(1<<16)))))
	w := uint64(len(counts))
	sums := make([]int64, parts*w)
	var wg sync.WaitGroup
	for k := uint64(0); k < parts; k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lo, hi := n*k/parts, n*(k+1)/parts
			rows := sums[k*w : (k+1)*w]
			mw := ^uint64(0)/w + 1
			var buf [2048]uint64
			for item := lo; item < hi; {
				pos := buf[:min(uint64(len(buf)), hi-item)]
				p.Positions(item, pos)
				for i, q := range pos {
					r, _ := bits.Mul64(mw*q, w)
					rows[r] += int64(max(unit[item+uint64(i)], 0))
				}
				item += uint64(len(pos))
			}
		}()
	}
	wg.Wait()
	for k := uint64(0); k < parts; k++ {
		for r, v := range sums[k*w : (k+1)*w] {
			counts[r] += v
		}
	}
}
