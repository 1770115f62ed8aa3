package rinas

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/pagefeed/pagefeed/index"
)

// TestReshardEqualSteps checks Reshard under the default DropLast: the
// rows the original world delivered before its checkpoints plus those the
// new world delivers after are rows of the original world's uninterrupted
// epoch (the epoch less its plan's dropped tail), each once, missing
// fewer than the new world's batches' worth (what its deal leaves out so
// that every new rank takes the same steps, equal to Len), whatever step
// each rank's state was taken at.
func TestReshardEqualSteps(t *testing.T) {
	ds := testDataset(t, "v2")
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	type mode struct {
		name              string
		shuffle           Shuffle
		batchRows, buffer int
		defaults          bool // BatchPages and BufferRows left to Open
	}
	modes := []mode{
		{"rows at defaults", ShufflePage, 50, 0, true},
		{"pages", ShufflePage, 0, 0, false},
		{"rows", ShufflePage, 70, 0, false},
		{"rows+buffer", ShufflePage, 70, 90, false},
		{"rowgroup rows", ShuffleRowGroup, 70, 0, false},
	}
	for _, w := range [][2]int{{2, 3}, {3, 2}, {2, 1}, {1, 2}} {
		for _, m := range modes {
			t.Run(fmt.Sprintf("%s/%d->%d", m.name, w[0], w[1]), func(t *testing.T) {
				cfgFor := func(rank, world int, s *State) Config {
					cfg := baseConfig(ds, "id")
					cfg.Rank, cfg.World, cfg.Resume = rank, world, s
					cfg.Shuffle, cfg.BatchPages, cfg.BatchRows, cfg.BufferRows = m.shuffle, 3, m.batchRows, m.buffer
					if m.defaults {
						cfg.BatchPages = 0
					}
					return cfg
				}
				dataSeed := rng.Uint64()
				open := func(rank, world int, s *State) *Loader {
					cfg := cfgFor(rank, world, s)
					cfg.Seed = dataSeed
					return openT(t, cfg)
				}
				// The original world's epoch, uninterrupted.
				var want []int64
				lens := make([]int, w[0])
				maxUnit := 0
				for r := range w[0] {
					l := open(r, w[0], nil)
					lens[r] = l.Len()
					maxUnit = int(slices.Max(l.ix.PageRows(l.lead)))
					ids, _, _ := drain(t, l, -1)
					want = append(want, ids...)
					l.Close()
				}
				checkNoRepeats(t, want)
				// Each rank stopped at its own random step (or all at one).
				same := rng.IntN(3) == 0
				step := rng.IntN(lens[0] + 1)
				var got []int64
				var states []*State
				newSteps := 0
				for r := range w[0] {
					k := rng.IntN(lens[r] + 1)
					if same {
						k = min(step, lens[r])
					}
					l := open(r, w[0], nil)
					ids, _, _ := drain(t, l, k)
					got = append(got, ids...)
					states = append(states, l.State())
					l.Close()
				}
				next, err := Reshard(states, w[1])
				if err != nil {
					t.Fatal(err)
				}
				for r := range w[1] {
					// A round trip through JSON, as a checkpoint goes.
					b, err := MarshalState(next[r])
					if err != nil {
						t.Fatal(err)
					}
					s, err := UnmarshalState(b)
					if err != nil {
						t.Fatal(err)
					}
					l := open(r, w[1], s)
					ids, _, rest := drain(t, l, -1)
					got = append(got, ids...)
					if len(rest) != l.Len() || (w[1] > 1 && r > 0 && len(rest) != newSteps) {
						t.Fatalf("new rank %d: %d steps, Len %d, new rank 0 took %d", r, len(rest), l.Len(), newSteps)
					}
					newSteps = len(rest)
				}
				slices.Sort(want)
				slices.Sort(got)
				checkNoRepeats(t, got)
				bound := w[1] * m.batchRows
				if m.batchRows == 0 {
					bound = w[1] * maxUnit // page batches: whole pages
				}
				if extra, missing := diff(got, want), diff(want, got); len(extra) > 0 || len(missing) >= bound {
					t.Fatalf("resharded run delivered %d rows, the original world's epoch %d: %d missing (bound %d), %d extra",
						len(got), len(want), len(missing), bound, len(extra))
				}
			})
		}
	}
}

func checkNoRepeats(t *testing.T, ids []int64) {
	t.Helper()
	s := slices.Clone(ids)
	slices.Sort(s)
	if len(slices.Compact(s)) != len(ids) {
		t.Fatalf("%d rows delivered, %d distinct", len(ids), len(s))
	}
}

// diff returns the elements of sorted a not in sorted b (as multisets).
func diff(a, b []int64) []int64 {
	var out []int64
	j := 0
	for _, v := range a {
		for j < len(b) && b[j] < v {
			j++
		}
		if j < len(b) && b[j] == v {
			j++
			continue
		}
		out = append(out, v)
	}
	return out
}

// TestReshardKeepUnevenPending: KeepUneven ranks whose shuffle buffer (at
// its default size) holds every row they took in, resharded 2 → 3 and 3 →
// 2: each new rank keeps every pending row dealt to it, so the run
// delivers every row exactly once (a quota dealt apart from the pending
// rows dropped one and repeated another).
func TestReshardKeepUnevenPending(t *testing.T) {
	paths, total := eqDataset(t, "tiny")
	for _, w := range [][2]int{{2, 3}, {3, 2}} {
		t.Run(fmt.Sprintf("%d->%d", w[0], w[1]), func(t *testing.T) {
			open := func(r, world int, s *State) *Loader {
				return openT(t, Config{Paths: paths, Columns: []string{"id"}, BatchRows: 50, Seed: 4, KeepUneven: true, Rank: r, World: world,
					Resume: s, Index: index.Options{NoSidecar: true, Logf: func(string, ...any) {}}, Logf: func(string, ...any) {}})
			}
			var got []int64
			var states []*State
			for r := range w[0] {
				l := open(r, w[0], nil)
				ids, _, _ := drain(t, l, 3+4*r)
				got = append(got, ids...)
				states = append(states, l.State())
				l.Close()
			}
			next, err := Reshard(states, w[1])
			if err != nil {
				t.Fatal(err)
			}
			for r := range w[1] {
				l := open(r, w[1], next[r])
				ids, _, _ := drain(t, l, -1)
				got = append(got, ids...)
				if st := l.Stats(); st.DroppedRows != 0 || st.PaddedRows != 0 {
					t.Fatalf("new rank %d: %d rows dropped, %d padded under KeepUneven", r, st.DroppedRows, st.PaddedRows)
				}
				l.Close()
			}
			checkNoRepeats(t, got)
			if int64(len(got)) != total {
				t.Fatalf("%d rows delivered of %d", len(got), total)
			}
		})
	}
}
