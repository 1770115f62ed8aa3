package rinas

import (
	"fmt"
	"testing"
)

// TestEqualStepsEveryWorld: for every world, shuffle, batch kind and
// policy, every rank takes the same number of steps, equal to Len; with
// DropLast the union of rows is the dataset less exactly the rows the
// ranks report dropped, with no repeat; with PadLast every row arrives
// and the repeats are exactly the rows reported padded.
func TestEqualStepsEveryWorld(t *testing.T) {
	ds := testDataset(t, "v2")
	for _, sh := range []Shuffle{ShufflePage, ShuffleRow, ShuffleRowGroup, ShuffleStream, ShuffleNone} {
		for _, rows := range []bool{false, true} {
			if sh == ShuffleRow && !rows {
				continue // page batches of the row shuffle hand over whole pages
			}
			for _, pad := range []bool{false, true} {
				for _, world := range []int{1, 2, 3, 7, 8} {
					name := fmt.Sprintf("%s/rows=%v/pad=%v/world%d", sh, rows, pad, world)
					t.Run(name, func(t *testing.T) {
						seen := make([]int, ds.rows)
						var dropped, padded int64
						steps := -1
						for r := 0; r < world; r++ {
							cfg := baseConfig(ds, "id")
							cfg.Shuffle, cfg.Rank, cfg.World = sh, r, world
							cfg.BatchPages = 5
							if sh == ShuffleRow {
								cfg.BatchPages = 97
							}
							cfg.DropLast, cfg.PadLast = !pad, pad
							if rows {
								cfg.BatchRows, cfg.BufferRows = 37, 50
							}
							l := openT(t, cfg)
							n := 0
							eachBatch(t, l, func(b *Batch) {
								n++
								if rows && b.Rows != cfg.BatchRows {
									t.Errorf("rank %d batch %d: %d rows, want %d", r, n, b.Rows, cfg.BatchRows)
								}
								for _, a := range b.Arrays {
									for _, id := range a.(interface{ Int64Values() []int64 }).Int64Values() {
										seen[id]++
									}
								}
								b.Release()
							})
							if n != l.Len() {
								t.Fatalf("rank %d: %d steps, Len %d", r, n, l.Len())
							}
							if steps >= 0 && n != steps {
								t.Fatalf("rank %d: %d steps, rank 0 took %d", r, n, steps)
							}
							steps = n
							st := l.Stats()
							dropped += st.DroppedRows
							padded += st.PaddedRows
						}
						missing, extra := int64(0), int64(0)
						for id, c := range seen {
							switch {
							case c == 0:
								missing++
							case c > 1 && !pad:
								t.Fatalf("row %d delivered %d times", id, c)
							case c > 1:
								extra += int64(c - 1)
							}
						}
						if pad && (missing != 0 || extra != padded) {
							t.Fatalf("PadLast: %d rows missing, %d repeats, %d reported padded", missing, extra, padded)
						}
						if !pad && missing != dropped {
							t.Fatalf("DropLast: %d rows missing, %d reported dropped", missing, dropped)
						}
						if world == 1 && !rows && (missing != 0 || extra != 0) {
							t.Fatalf("world 1: %d missing, %d repeats", missing, extra)
						}
					})
				}
			}
		}
	}
}

// TestEqualStepsResume: a rank of an equalized epoch resumed from any
// checkpoint delivers exactly the rest of the uninterrupted run, in as
// many steps.
func TestEqualStepsResume(t *testing.T) {
	ds := testDataset(t, "v2")
	for _, pad := range []bool{false, true} {
		for _, sh := range []Shuffle{ShufflePage, ShuffleRowGroup, ShuffleRow} {
			t.Run(fmt.Sprintf("%s/pad=%v", sh, pad), func(t *testing.T) {
				cfg := baseConfig(ds, "id")
				cfg.Shuffle, cfg.Rank, cfg.World, cfg.Fetch = sh, 1, 3, Ordered
				cfg.BatchRows, cfg.BufferRows, cfg.BatchPages = 41, 60, 4
				cfg.DropLast, cfg.PadLast = !pad, pad
				full, _, states := drain(t, openT(t, cfg), -1)
				for _, k := range []int{0, len(states) / 2, len(states) - 2} {
					head, _, _ := drain(t, openT(t, cfg), k+1)
					rcfg := cfg
					rcfg.Resume = states[k]
					l := openT(t, rcfg)
					rest, _, rs := drain(t, l, -1)
					if got := append(head, rest...); fmt.Sprint(got) != fmt.Sprint(full) {
						t.Fatalf("resume after batch %d: %d rows, want the uninterrupted %d\n%v\n%v", k, len(got), len(full), got[len(got)-60:], full[len(full)-60:])
					}
					if k+1+len(rs) != l.Len() {
						t.Fatalf("resume after batch %d: %d steps in all, Len %d", k, k+1+len(rs), l.Len())
					}
				}
			})
		}
	}
}

// TestEqualStepsTokens: tokens output of a list column, whose token count
// Len estimates: with DropLast and PadLast every rank yields exactly Len
// batches, the same on every rank, padding with empty batches or dropping
// the rest; with KeepUneven every token arrives.
func TestEqualStepsTokens(t *testing.T) {
	ds := testDataset(t, "v2")
	var total int64 // the documents' tokens and one EOS each
	for _, n := range wholeColumnLengths(t, ds.paths) {
		total += int64(n) + 1
	}
	worlds := []int{1, 2, 3, 4, 8}
	if raceEnabled {
		worlds = []int{3, 8}
	}
	for _, pad := range []bool{false, true} {
		for _, world := range worlds {
			t.Run(fmt.Sprintf("pad=%v/world%d", pad, world), func(t *testing.T) {
				steps := -1
				var got int64
				per := int64(world) * 4 * 128
				for r := 0; r < world; r++ {
					cfg := baseConfig(ds, "input_ids")
					cfg.Output, cfg.SeqLen, cfg.BatchRows, cfg.BatchPages = OutputTokens, 128, 4, 8
					cfg.Rank, cfg.World, cfg.DropLast, cfg.PadLast = r, world, !pad, pad
					l := openT(t, cfg)
					n := 0
					eachBatch(t, l, func(b *Batch) {
						n++
						for _, m := range b.LossMask {
							got += int64(m)
						}
						b.Release()
					})
					if n != l.Len() || (steps >= 0 && n != steps) {
						t.Fatalf("rank %d: %d steps, Len %d, rank 0 %d", r, n, l.Len(), steps)
					}
					steps = n
				}
				// Shares are balanced by estimated tokens (list columns: from
				// page bytes), so the tokens left out or repeated are under
				// a batch per rank of the estimate, plus its error.
				t.Logf("world %d: %d steps, %d of %d tokens delivered (%+d, a batch per rank is %d)", world, steps, got, total, got-total, per)
				if d := got - total; (!pad && (d > 0 || -d >= per+total/20)) || (pad && (d < 0 || d >= per+total/20)) {
					t.Fatalf("%d of %d tokens delivered", got, total)
				}
			})
		}
	}
}
