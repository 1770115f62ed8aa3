package bench

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/pagefeed/pagefeed/rinas"
)

// TestBaselinesReadTheLoadersPlan: the mmap, arrow-go and decode-only
// baselines read the pages the loader delivers, in the loader's order
// (its page plan: shuffle, shard and equal-steps end), for a rank of an
// uneven world and for the ordered shuffles (a unit at the rank's
// boundary whole); the row shuffle, which has
// no page plan, is refused.
func TestBaselinesReadTheLoadersPlan(t *testing.T) {
	dir, _ := genParquet(t)
	quiet := func(string, ...any) {}
	run := func(t *testing.T, cfg ParquetConfig) ([]string, *ParquetResult) {
		t.Helper()
		cfg.Paths = []string{filepath.Join(dir, "*.parquet")}
		cfg.Column, cfg.Loops, cfg.Logf = "input_ids", 1, quiet
		cfg.DumpOrder = filepath.Join(t.TempDir(), "order")
		res, err := RunParquet(context.Background(), cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Engine == ParquetDecode {
			return nil, res
		}
		return readLines(t, cfg.DumpOrder), res
	}
	for _, sh := range []rinas.Shuffle{rinas.ShufflePage, rinas.ShuffleNone, rinas.ShuffleRowGroup} {
		for _, pad := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/pad=%v", sh, pad), func(t *testing.T) {
				base := ParquetConfig{Shuffle: sh, Fetch: rinas.Ordered, Deterministic: true, Seed: 9, Epoch: 2,
					Rank: 1, World: 4, PadLast: pad, DropLast: !pad, Batch: 3}
				want, lres := run(t, base)
				if n := len(want); n == 0 {
					t.Fatal("the loader delivered no pages")
				}
				for _, b := range []ParquetConfig{{IOEngine: ParquetMmap}, {Engine: ParquetArrowGo}, {Engine: ParquetDecode}} {
					cfg := base
					cfg.IOEngine, cfg.Engine = b.IOEngine, b.Engine
					got, res := run(t, cfg)
					if cfg.Engine == ParquetDecode {
						// One pass over the preloaded plan: the loader's
						// pages, decoded whole (the loader keeps only its
						// share's rows of a page at a rank's boundary).
						if res.Pages != lres.Pages || res.Rows < lres.Rows {
							t.Fatalf("decode: %d pages, %d rows; the loader delivered %d, %d", res.Pages, res.Rows, lres.Pages, lres.Rows)
						}
						continue
					}
					// A row group at a rank's boundary is read whole by
					// the baselines; the loader reads its pages that hold
					// the rank's rows.
					if !slices.Equal(got, want) && !(sh == rinas.ShuffleRowGroup && subsequence(want, got)) {
						t.Fatalf("%s/%s reads pages %v, the loader delivered %v", cfg.IOEngine, cfg.Engine, got, want)
					}
				}
			})
		}
	}
	for _, b := range []ParquetConfig{{IOEngine: ParquetMmap}, {Engine: ParquetArrowGo}, {Engine: ParquetDecode}} {
		cfg := b
		cfg.Shuffle = rinas.ShuffleRow
		cfg.Paths = []string{filepath.Join(dir, "*.parquet")}
		cfg.Column, cfg.Loops, cfg.Logf = "input_ids", 1, quiet
		if _, err := RunParquet(context.Background(), cfg, nil); !errors.Is(err, ErrBadOption) {
			t.Fatalf("%s/%s with the row shuffle: %v, want ErrBadOption", cfg.IOEngine, cfg.Engine, err)
		}
	}
}

// subsequence reports whether a's lines appear in b in the same order.
func subsequence(a, b []string) bool {
	i := 0
	for _, x := range b {
		if i < len(a) && a[i] == x {
			i++
		}
	}
	return i == len(a)
}
