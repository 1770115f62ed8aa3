package rinas

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/pagefeed/pagefeed/index"
	"github.com/pagefeed/pagefeed/internal/gen"
)

// Files of few units, as writers make them at their defaults: one file of
// 20,000 rows in 2 id pages (a row group), and the same rows in 2 row
// groups of 10,000.
const fewTotal = int64(20000)

// fewDatasets writes them under t's temporary directory.
func fewDatasets(t *testing.T) map[string][]string {
	t.Helper()
	sets := map[string]gen.Config{
		"pages2": {Files: 1, RowsPerFile: 20000, PageSize: 80000, Codec: "none", MeanTokens: 3, PageIndex: true, PageVersion: 2},
		"rg2":    {Files: 1, RowsPerFile: 20000, PageSize: 80000, Codec: "none", MeanTokens: 3, PageIndex: true, PageVersion: 2, RowGroupRows: 10000},
	}
	dir := t.TempDir()
	out := map[string][]string{}
	for n, c := range sets {
		c.Dir, c.Seed, c.Parallelism = filepath.Join(dir, n), 5, 2
		if _, err := gen.Run(context.Background(), c); err != nil {
			t.Fatalf("generate: %v", err)
		}
		out[n], _ = filepath.Glob(filepath.Join(c.Dir, "*.parquet"))
	}
	return out
}

func fewOpen(t *testing.T, paths []string, world, rank int, set func(c *Config)) (*Loader, error) {
	cfg := Config{Paths: paths, Columns: []string{"id"}, Seed: 11, Rank: rank, World: world,
		Index: index.Options{NoSidecar: true, Logf: func(string, ...any) {}}, Logf: func(string, ...any) {}}
	if set != nil {
		set(&cfg)
	}
	return Open(context.Background(), cfg)
}

// TestPageBatchesShareRows: page batches at their defaults (no BatchRows)
// over files of fewer units than ranks, page and rowgroup shuffles, every
// policy: every rank opens, takes the same steps, equal to Len and
// EpochLen, and the ranks together deliver every row once but fewer than
// World left out (DropLast, exactly Stats.DroppedRows) or repeated
// (PadLast, exactly Stats.PaddedRows); KeepUneven delivers every row.
// Over two epochs. Whole units (the old plan) refused 2 pages at world 3.
func TestPageBatchesShareRows(t *testing.T) {
	rg := func(c *Config) { c.Shuffle = ShuffleRowGroup }
	type tc struct {
		set   string
		world int
		cfg   func(c *Config)
	}
	sets := fewDatasets(t)
	var cases []tc
	for _, pol := range []func(c *Config){nil, func(c *Config) { c.PadLast = true }, func(c *Config) { c.KeepUneven = true }} {
		both := func(f func(c *Config)) func(c *Config) {
			return func(c *Config) {
				if f != nil {
					f(c)
				}
				if pol != nil {
					pol(c)
				}
			}
		}
		cases = append(cases, tc{"pages2", 3, both(nil)}, tc{"rg2", 3, both(rg)}, tc{"rg2", 5, both(rg)},
			tc{"pages2", 7, both(func(c *Config) { c.BatchPages = 1 })})
	}
	cases = append(cases, tc{"rg2", 3, func(c *Config) { c.Shuffle = ShuffleNone }}, tc{"pages2", 4, func(c *Config) { c.Shuffle = ShuffleStream }})
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/world%d/%s", c.set, c.world, probe(func(x *Config) {
			if c.cfg != nil {
				c.cfg(x)
			}
		})), func(t *testing.T) {
			paths := sets[c.set]
			const epochs = 2
			seen := make([][]int, epochs)
			for e := range seen {
				seen[e] = make([]int, fewTotal)
			}
			var dropped, padded int64
			steps := -1
			var pc Config
			if c.cfg != nil {
				c.cfg(&pc)
			}
			for r := 0; r < c.world; r++ {
				l, err := fewOpen(t, paths, c.world, r, func(x *Config) {
					x.Epochs = epochs
					if c.cfg != nil {
						c.cfg(x)
					}
				})
				if err != nil {
					t.Fatalf("rank %d: Open: %v", r, err)
				}
				if steps < 0 {
					steps = l.Len()
				}
				for e := uint64(0); e < epochs; e++ {
					n, err := l.EpochLen(e)
					if err != nil || n != steps {
						t.Fatalf("rank %d: EpochLen(%d) %d, %v; rank 0's Len %d", r, e, n, err, steps)
					}
				}
				count := make([]int, epochs)
				for {
					b, err := l.Next(context.Background())
					if err == io.EOF {
						break
					}
					if err != nil {
						t.Fatalf("rank %d: Next: %v", r, err)
					}
					count[b.Epoch]++
					if b.Rows == 0 || len(b.Pages) != len(b.Arrays) {
						t.Fatalf("rank %d: a batch of %d rows, %d pages, %d arrays", r, b.Rows, len(b.Pages), len(b.Arrays))
					}
					n := 0
					for _, a := range b.Arrays {
						for _, id := range a.(*array.Int64).Int64Values() {
							seen[b.Epoch][id]++
							n++
						}
					}
					if n != b.Rows {
						t.Fatalf("rank %d: %d ids in a batch of %d rows", r, n, b.Rows)
					}
					b.Release()
				}
				for e, n := range count {
					if n != steps {
						t.Fatalf("rank %d epoch %d: %d steps, Len %d", r, e, n, steps)
					}
				}
				st := l.Stats()
				dropped += st.DroppedRows
				padded += st.PaddedRows
				l.Close()
			}
			var missing, repeats int64
			for e := range seen {
				for id, n := range seen[e] {
					switch {
					case n == 0:
						missing++
					case n > 1 && !pc.PadLast:
						t.Fatalf("epoch %d: row %d delivered %d times", e, id, n)
					case n > 1:
						repeats += int64(n - 1)
					}
				}
			}
			if missing != dropped || repeats != padded {
				t.Fatalf("%d rows missing, %d reported dropped; %d repeated, %d reported padded", missing, dropped, repeats, padded)
			}
			bound := int64(c.world) * epochs // fewer than World rows an epoch
			if missing >= bound || repeats >= bound || (pc.KeepUneven && missing+repeats > 0) {
				t.Fatalf("%d rows missing, %d repeated over %d epochs: bound %d", missing, repeats, epochs, bound)
			}
			t.Logf("world %d: %d steps a rank, %d rows left out, %d repeated over %d epochs of %d rows", c.world, steps, missing, repeats, epochs, fewTotal)
		})
	}
}

// TestPageBatchesShareRowsResume: page batches that cut row groups between
// ranks (2 row groups at world 3, 2 steps a rank), stopped after the first
// step: resumed from each rank's State, and resharded 3 → 2, the rows
// before and after are the uninterrupted world's, each once, and the new
// ranks take equal steps, Len of them.
func TestPageBatchesShareRowsResume(t *testing.T) {
	paths := fewDatasets(t)["rg2"]
	rg := func(c *Config) { c.Shuffle = ShuffleRowGroup }
	open := func(world, rank int, s *State) *Loader {
		l, err := fewOpen(t, paths, world, rank, func(c *Config) { rg(c); c.Resume = s })
		if err != nil {
			t.Fatalf("world %d rank %d: Open: %v", world, rank, err)
		}
		return l
	}
	var want, before []int64
	var states []*State
	for r := range 3 {
		l := open(3, r, nil)
		ids, _, _ := drain(t, l, -1)
		l.Close()
		want = append(want, ids...)
		l = open(3, r, nil)
		if l.Len() < 2 {
			t.Fatalf("rank %d: Len %d, want a step to stop after", r, l.Len())
		}
		ids, _, _ = drain(t, l, 1)
		before = append(before, ids...)
		states = append(states, l.State())
		l.Close()
	}
	checkNoRepeats(t, want)
	if int64(len(want)) <= fewTotal-3 {
		t.Fatalf("the world delivers %d of %d rows", len(want), fewTotal)
	}
	slices.Sort(want)
	t.Run("resume", func(t *testing.T) {
		got := slices.Clone(before)
		for r, s := range states {
			l := open(3, r, s)
			ids, _, _ := drain(t, l, -1)
			l.Close()
			got = append(got, ids...)
		}
		checkNoRepeats(t, got)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("%d rows across the checkpoint, the uninterrupted epoch %d", len(got), len(want))
		}
	})
	t.Run("reshard3to2", func(t *testing.T) {
		next, err := Reshard(states, 2)
		if err != nil {
			t.Fatal(err)
		}
		got := slices.Clone(before)
		steps := -1
		for r := range 2 {
			l := open(2, r, next[r])
			n := l.Len()
			ids, _, st := drain(t, l, -1)
			l.Close()
			if len(st) != n || (steps >= 0 && n != steps) {
				t.Fatalf("new rank %d: %d steps, Len %d; rank 0 took %d", r, len(st), n, steps)
			}
			steps = n
			got = append(got, ids...)
		}
		checkNoRepeats(t, got)
		slices.Sort(got)
		if extra, missing := diff(got, want), diff(want, got); len(extra) > 0 || len(missing) >= 2 {
			t.Fatalf("%d rows across the reshard, the original world's %d: %d missing (bound 2), %d extra", len(got), len(want), len(missing), len(extra))
		}
	})
}
