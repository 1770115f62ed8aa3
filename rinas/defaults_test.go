package rinas

import (
	"fmt"
	"testing"

	"github.com/pagefeed/pagefeed/index"
)

// defaultsConfig is a Config with nothing set but the data and the
// projection (and quiet logs and no sidecar, which change no behaviour):
// every mode is tested at its defaults too, not only with the settings
// that make it work.
func defaultsConfig(paths []string, cols ...string) Config {
	return Config{
		Paths: paths, Columns: cols,
		Index: index.Options{NoSidecar: true, Logf: func(string, ...any) {}},
		Logf:  func(string, ...any) {},
	}
}

// TestEveryShuffleAtDefaults runs every shuffle with page batches (the
// default) and with row batches, over one column and over several, with
// no other setting: every row once, with the values the file holds, and
// every column row-aligned with the others.
func TestEveryShuffleAtDefaults(t *testing.T) {
	paths := multiDataset(t, "mixed")
	ref := reference(t, paths)
	for _, sh := range []Shuffle{ShufflePage, ShuffleRow, ShuffleRowGroup, ShuffleStream, ShuffleNone} {
		for _, batchRows := range []int{0, 64} {
			for _, cols := range [][]string{{"id"}, {"id", "input_ids", "text"}} {
				t.Run(fmt.Sprintf("%s/rows%d/%dcols", sh, batchRows, len(cols)), func(t *testing.T) {
					cfg := defaultsConfig(paths, cols...)
					cfg.Shuffle, cfg.BatchRows = sh, batchRows
					l := openT(t, cfg)
					keys := runAll(t, l, ref, -1)
					checkOnce(t, keys, l.Index())
				})
			}
		}
	}
}

// TestEpochLenIsEachEpochsSteps checks that EpochLen(e) is the number of
// batches epoch e yields, for every epoch of a run, at world 3.
func TestEpochLenIsEachEpochsSteps(t *testing.T) {
	paths := multiDataset(t, "mixed")
	for _, batchRows := range []int{0, 32} {
		for r := 0; r < 3; r++ {
			cfg := defaultsConfig(paths, "id")
			cfg.Rank, cfg.World, cfg.Epochs, cfg.BatchRows = r, 3, 3, batchRows
			l := openT(t, cfg)
			var want []int
			for e := uint64(0); e < 3; e++ {
				n, err := l.EpochLen(e)
				if err != nil {
					t.Fatal(err)
				}
				want = append(want, n)
			}
			got := make([]int, 3)
			eachBatch(t, l, func(b *Batch) {
				got[b.Epoch]++
				b.Release()
			})
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("rows %d rank %d: epochs took %v steps, EpochLen said %v", batchRows, r, got, want)
			}
		}
	}
}
