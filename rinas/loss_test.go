package rinas

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/pagefeed/pagefeed/index"
)

// TestEqualStepsLossSweep checks what DropLast leaves out at defaults
// (nothing set but World, Rank, the shuffle and the batch kind) over
// every shuffle (stream with a buffer of 256 rows), worlds 2, 3, 4, 6 and 8, and pages of 5 to 8, about
// 2,000 and 5,000 rows: every rank has the same Len, and the rows the
// ranks report dropped (Stats.DroppedRows, which TestEqualStepsBoundedLoss
// shows equal to the rows never delivered) are fewer than World ×
// BatchRows for row batches, and fewer than World units for page batches
// (a unit is a page, a row under row shuffle, a row group under rowgroup
// shuffle). Open may refuse (ErrConfig) only where no plan can give every
// rank data: page batches of row groups over more ranks than row groups,
// or row batches whose rows do not fill one batch a rank.
func TestEqualStepsLossSweep(t *testing.T) {
	sets := []string{"tiny", "ft", "big"}
	// default is page shuffle with nothing else set; stream needs a
	// buffer.
	shuffles := []struct {
		name string
		s    Shuffle
		buf  int
	}{{"default", ShufflePage, 0}, {"row", ShuffleRow, 0}, {"rowgroup", ShuffleRowGroup, 0}, {"none", ShuffleNone, 0}, {"stream", ShuffleStream, 256}}
	worlds := []int{2, 3, 4, 6, 8}
	batches := []int{0, 32}
	if raceEnabled {
		sets, worlds = []string{"tiny", "ft"}, []int{3, 8}
	}
	for _, set := range sets {
		paths, total := eqDataset(t, set)
		ix, err := index.Build(context.Background(), paths, index.Options{NoSidecar: true, Logf: func(string, ...any) {}})
		if err != nil {
			t.Fatal(err)
		}
		var maxPage, maxGroup int64
		for k := 0; k < ix.NumColumns(); k++ {
			if ix.Column(k).Path != "id" {
				continue
			}
			for _, n := range ix.PageRows(k) {
				maxPage = max(maxPage, int64(n))
			}
			for c := 0; c < ix.NumChunks(); c++ {
				maxGroup = max(maxGroup, ix.Chunk(k, c).NumRows)
			}
		}
		for _, sh := range shuffles {
			for _, rows := range batches {
				for _, world := range worlds {
					t.Run(fmt.Sprintf("%s/%s/rows%d/world%d", set, sh.name, rows, world), func(t *testing.T) {
						unit := maxPage
						switch sh.s {
						case ShuffleRow:
							unit = 1
						case ShuffleRowGroup:
							unit = maxGroup
						}
						var dropped, padded int64
						steps := -1
						for r := range world {
							cfg := Config{Paths: paths, SharedIndex: ix, Columns: []string{"id"}, Rank: r, World: world, BatchRows: rows,
								Shuffle: sh.s, BufferRows: sh.buf, Logf: func(string, ...any) {}}
							l, err := Open(context.Background(), cfg)
							if err != nil {
								groups := int64(ix.NumChunks())
								ok := errors.Is(err, ErrConfig) && ((rows == 0 && sh.s == ShuffleRowGroup && int64(world) > groups) ||
									(rows > 0 && total < int64(world*rows)))
								if !ok {
									t.Fatalf("rank %d: Open: %v", r, err)
								}
								if r > 0 {
									t.Fatalf("rank %d refused, rank 0 was not: %v", r, err)
								}
								t.Logf("refused: %v", err)
								return
							}
							if steps >= 0 && l.Len() != steps {
								t.Fatalf("rank %d: Len %d, rank 0's %d", r, l.Len(), steps)
							}
							if steps = l.Len(); steps < 1 {
								t.Fatalf("rank %d: Len %d", r, steps)
							}
							st := l.Stats()
							dropped += st.DroppedRows
							padded += st.PaddedRows
							l.Close()
						}
						bound := int64(world * rows)
						if rows == 0 {
							bound = int64(world) * unit
						}
						if dropped >= bound || padded != 0 {
							t.Fatalf("%d of %d rows dropped (bound %d), %d padded", dropped, total, bound, padded)
						}
						t.Logf("%d steps a rank, %d of %d rows dropped (bound %d)", steps, dropped, total, bound)
					})
				}
			}
		}
	}
}

// TestWorldBeyondDataRefused: a world so large that a rank would get no
// rows (a million ranks over 3,000 rows) is refused at Open with
// ErrConfig, at defaults and with row batches, on the first and the last
// rank; never a loader that delivers nothing.
func TestWorldBeyondDataRefused(t *testing.T) {
	paths, _ := eqDataset(t, "tiny")
	const world = 1_000_000
	for _, rows := range []int{0, 1, 32} {
		for _, rank := range []int{0, world - 1} {
			t.Run(fmt.Sprintf("rows%d/rank%d", rows, rank), func(t *testing.T) {
				cfg := Config{Paths: paths, World: world, Rank: rank, BatchRows: rows,
					Index: index.Options{NoSidecar: true, Logf: func(string, ...any) {}}, Logf: func(string, ...any) {}}
				l, err := Open(context.Background(), cfg)
				if err == nil {
					n := l.Len()
					l.Close()
					t.Fatalf("Open accepted a world of %d over 3,000 rows (Len %d)", world, n)
				}
				if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "1000000") {
					t.Fatalf("Open: %v, want ErrConfig naming the world", err)
				}
			})
		}
	}
}
