package rinas

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

// TestPlanPagesIsTheLoadersOrder: the exported page plan lists, in order,
// exactly the pages a loader with page batches delivers (Ordered fetch,
// deterministic assembly), for every shuffle with a page plan, uneven
// worlds and every equal-steps policy: what pagebench's baselines read.
func TestPlanPagesIsTheLoadersOrder(t *testing.T) {
	ds := testDataset(t, "v2")
	for _, sh := range []Shuffle{ShufflePage, ShuffleRowGroup, ShuffleStream, ShuffleNone} {
		for _, policy := range []string{"drop", "pad", "uneven"} {
			for _, world := range []int{1, 4} {
				t.Run(fmt.Sprintf("%s/%s/world%d", sh, policy, world), func(t *testing.T) {
					for r := 0; r < world; r++ {
						cfg := baseConfig(ds, "id")
						cfg.Shuffle, cfg.Rank, cfg.World, cfg.Epoch = sh, r, world, 3
						cfg.BatchPages, cfg.Fetch, cfg.Deterministic = 5, Ordered, true
						cfg.DropLast, cfg.PadLast, cfg.KeepUneven = policy == "drop", policy == "pad", policy == "uneven"
						l := openT(t, cfg)
						var got []uint64
						eachBatch(t, l, func(b *Batch) {
							got = append(got, b.Pages...)
							b.Release()
						})
						rows := l.ix.PageRows(l.lead)
						if sh == ShuffleRowGroup {
							rows = make([]int32, l.ix.NumChunks())
							for c := range rows {
								rows[c] = int32(l.ix.Chunk(l.lead, c).NumRows)
							}
						}
						n := uint64(len(rows))
						p, err := PlanPagesRows(cfg, rows, cfg.Epoch)
						if err != nil {
							t.Fatal(err)
						}
						if world > 1 && n%uint64(world) == 0 {
							t.Fatalf("%d units divide among %d ranks: the test sees no uneven end", n, world)
						}
						var want []uint64
						for j := uint64(0); j < p.Len(); j++ {
							u := p.At(j)
							if sh != ShuffleRowGroup {
								want = append(want, u)
								continue
							}
							want = append(want, u)
						}
						if sh == ShuffleRowGroup {
							// A row group cut between ranks delivers the
							// pages that hold its rows: compare row groups.
							var rgs []uint64
							for _, g := range got {
								rgs = append(rgs, uint64(l.ix.Locate(l.lead, int(g)).Chunk))
							}
							got, want = slices.Compact(rgs), slices.Compact(want)
						}
						if !slices.Equal(got, want) {
							t.Fatalf("rank %d: loader delivered pages %v, PlanPages says %v", r, got, want)
						}
					}
				})
			}
		}
	}
	if _, err := PlanPages(Config{Shuffle: ShuffleRow}, 10, 0); !errors.Is(err, ErrConfig) {
		t.Fatalf("row shuffle: %v, want ErrConfig", err)
	}
	if _, err := PlanPages(Config{Rank: 2, World: 2}, 10, 0); !errors.Is(err, ErrConfig) {
		t.Fatalf("rank 2 of 2: %v, want ErrConfig", err)
	}
}
