package rinas

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"io"
	"path/filepath"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/pagefeed/pagefeed/internal/gen"
)

// Red-team tests of the epoch share computed once per epoch and shared
// read-only by the producer and the consumer (planShare's cache beside
// the epochs): tiny epochs, many more than the cache's four, so that the
// producer runs epochs ahead of the consumer; several ranks under each
// policy; page and row batches; resumes from every State of a run.

// rt4Dataset generates a small dataset of many small pages (2 files of
// 150 rows, row groups of 50) in a temp dir.
func rt4Dataset(t *testing.T, pageIndex bool) dataset {
	t.Helper()
	c := gen.Config{Dir: filepath.Join(t.TempDir(), "ds"), Files: 2, RowsPerFile: 150, RowGroupRows: 50, PageSize: 600,
		PageVersion: 2, PageIndex: pageIndex, Codec: "none", Seed: 11, MeanTokens: 16}
	if !pageIndex {
		c.PageVersion = 1
	}
	res, err := gen.Run(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	return dataset{paths: res.Files, rows: res.Rows}
}

// rt4Run reads cfg to its end and returns each batch's ids by epoch, and
// the State after each batch.
func rt4Run(t *testing.T, cfg Config) (epochs map[uint64][][]int64, states []*State) {
	t.Helper()
	l := openT(t, cfg)
	epochs = map[uint64][][]int64{}
	for {
		b, err := l.Next(context.Background())
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		var ids []int64
		for _, a := range b.Arrays {
			ids = append(ids, a.(*array.Int64).Int64Values()...)
		}
		epochs[b.Epoch] = append(epochs[b.Epoch], ids)
		b.Release()
		states = append(states, l.State())
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return epochs, states
}

// TestRedteam4SharedShareManyEpochs: 9 tiny epochs on each of 3 ranks (and
// 1) under DropLast, PadLast and KeepUneven, page batches and row batches:
// in every epoch the ranks take equal steps (but KeepUneven), DropLast
// delivers each row at most once and PadLast and KeepUneven each at least
// once (KeepUneven exactly once); and each rank's epochs, read in one run
// with the producer ahead, equal the same epochs read by a loader opened
// at that epoch alone (its share computed afresh).
func TestRedteam4SharedShareManyEpochs(t *testing.T) {
	const epochs = 9
	ds := rt4Dataset(t, true)
	type policy struct {
		name             string
		drop, pad, keepU bool
	}
	for _, pol := range []policy{{"drop", true, false, false}, {"pad", false, true, false}, {"keep", false, false, true}} {
		for _, world := range []int{1, 3} {
			for _, rows := range []int{0, 7} {
				t.Run(fmt.Sprintf("%s/world%d/rows%d", pol.name, world, rows), func(t *testing.T) {
					base := func(rank int) Config {
						cfg := baseConfig(ds, "id")
						cfg.Rank, cfg.World, cfg.BatchPages, cfg.BatchRows = rank, world, 2, rows
						cfg.DropLast, cfg.PadLast, cfg.KeepUneven = pol.drop, pol.pad, pol.keepU
						cfg.Epochs = epochs
						return cfg
					}
					all := make([]map[uint64][][]int64, world)
					for r := range world {
						all[r], _ = rt4Run(t, base(r))
					}
					t.Logf("digest %x", rt4Digest(all))
					for ep := uint64(0); ep < epochs; ep++ {
						seen := make([]int, ds.rows)
						for r := range world {
							if !pol.keepU && len(all[r][ep]) != len(all[0][ep]) {
								t.Fatalf("epoch %d: rank %d took %d steps, rank 0 %d", ep, r, len(all[r][ep]), len(all[0][ep]))
							}
							for _, b := range all[r][ep] {
								for _, id := range b {
									seen[id]++
								}
							}
						}
						for id, n := range seen {
							switch {
							case pol.drop && n > 1, pol.keepU && n != 1, pol.pad && n < 1:
								t.Fatalf("epoch %d: row %d delivered %d times (%s)", ep, id, n, pol.name)
							}
						}
					}
					// One rank, epoch by epoch, from a fresh loader.
					r := world - 1
					for _, ep := range []uint64{0, 4, 5, 8} {
						cfg := base(r)
						cfg.Epoch, cfg.Epochs = ep, 1
						alone, _ := rt4Run(t, cfg)
						a, b := alone[ep], all[r][ep]
						if rows > 0 {
							// Row batches: the row shuffle's generator runs
							// on from epoch to epoch (as before the shared
							// share), so an epoch read alone mixes its rows
							// otherwise; the batches' sizes and the epoch's
							// rows are the same.
							a, b = rt4Sorted(a), rt4Sorted(b)
						}
						if !slices.EqualFunc(a, b, slices.Equal) {
							t.Fatalf("rank %d epoch %d: read alone %v, in a run of %d epochs %v", r, ep, alone[ep], epochs, all[r][ep])
						}
					}
				})
			}
		}
	}
}

// TestRedteam4ResumeEveryState: a run of 6 tiny epochs over 2 ranks
// (DropLast, page batches; and row batches), resumed from the State after
// every batch (mid-epoch and at each epoch's end), delivers exactly the
// batches the uninterrupted run delivered after that point.
func TestRedteam4ResumeEveryState(t *testing.T) {
	const epochs = 6
	ds := rt4Dataset(t, false)
	for _, rows := range []int{0, 9} {
		t.Run(fmt.Sprintf("rows%d", rows), func(t *testing.T) {
			cfg := baseConfig(ds, "id")
			cfg.Rank, cfg.World, cfg.BatchPages, cfg.BatchRows, cfg.Epochs = 1, 2, 3, rows, epochs
			whole, states := rt4Run(t, cfg)
			var flat [][]int64
			for ep := uint64(0); ep < epochs; ep++ {
				flat = append(flat, whole[ep]...)
			}
			if len(flat) != len(states) {
				t.Fatalf("%d batches, %d states", len(flat), len(states))
			}
			for i := 0; i < len(states); i += 2 {
				rc := cfg
				rc.Resume = states[i]
				rest, _ := rt4Run(t, rc)
				var got [][]int64
				for ep := uint64(0); ep < epochs; ep++ {
					got = append(got, rest[ep]...)
				}
				if !slices.EqualFunc(got, flat[i+1:], slices.Equal) {
					t.Fatalf("resumed after batch %d (epoch %d, end %v): %d batches %v, want %d %v", i, states[i].Epoch, states[i].EpochEnd,
						len(got), got, len(flat[i+1:]), flat[i+1:])
				}
			}
		})
	}
}

// rt4Sorted returns the batches' sizes, then all their ids sorted.
func rt4Sorted(bs [][]int64) [][]int64 {
	var sizes, ids []int64
	for _, b := range bs {
		sizes = append(sizes, int64(len(b)))
		ids = append(ids, b...)
	}
	slices.Sort(ids)
	return [][]int64{sizes, ids}
}

// rt4Digest hashes every rank's deliveries, epoch by epoch, batch by
// batch (logged, to compare runs of different builds).
func rt4Digest(all []map[uint64][][]int64) uint64 {
	h := fnv.New64a()
	var buf [8]byte
	for _, m := range all {
		for ep := uint64(0); ep < uint64(len(m)); ep++ {
			for _, b := range m[ep] {
				for _, id := range b {
					binary.LittleEndian.PutUint64(buf[:], uint64(id))
					h.Write(buf[:])
				}
				h.Write([]byte{0xff})
			}
		}
	}
	return h.Sum64()
}
