package rinas

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/pagefeed/pagefeed/index"
	"github.com/pagefeed/pagefeed/internal/gen"
)

// Datasets of the equal-steps tests, generated once per test binary.
var (
	eqOnce sync.Once
	eqDir  string
	eqErr  error
	eqSets = map[string]gen.Config{
		// The fine-tuning set: 5 files × 7,001 rows, 16 KiB zstd
		// pages (about 2,000 rows in an id page), one row group a file.
		"ft": {Files: 5, RowsPerFile: 7001, PageSize: 16 << 10, Codec: "zstd", MeanTokens: 64, PageIndex: true, PageVersion: 2},
		// 3,000 rows in pages of 5 to 8 rows.
		"tiny": {Files: 3, RowsPerFile: 1000, PageSize: 48, Codec: "snappy", MeanTokens: 6, PageIndex: true, PageVersion: 2, RowGroupRows: 250},
		// 200,000 rows in id pages of 5,000 rows.
		"big": {Files: 4, RowsPerFile: 50000, PageSize: 40000, Codec: "none", MeanTokens: 3, PageIndex: true, PageVersion: 2, RowGroupRows: 25000},
	}
)

// eqDataset returns the paths and row count of a dataset of eqSets.
func eqDataset(t *testing.T, name string) ([]string, int64) {
	t.Helper()
	eqOnce.Do(func() {
		if eqDir, eqErr = os.MkdirTemp("", "rinas-equal-"); eqErr != nil {
			return
		}
		for n, c := range eqSets {
			c.Dir, c.Seed, c.Parallelism = filepath.Join(eqDir, n), 3, 2
			if _, eqErr = gen.Run(context.Background(), c); eqErr != nil {
				return
			}
		}
	})
	if eqErr != nil {
		t.Fatalf("generate: %v", eqErr)
	}
	paths, _ := filepath.Glob(filepath.Join(eqDir, name, "*.parquet"))
	c := eqSets[name]
	return paths, int64(c.Files * c.RowsPerFile)
}

// eqCase is one configuration run over every shard of a world.
type eqCase struct {
	set     string
	shards  int // World: ranks × DataLoader workers
	cfg     func(c *Config)
	epochs  int
	batches int // rows (tokens: rows×SeqLen tokens) a batch holds; 0: page batches
}

// TestEqualStepsBoundedLoss runs representative configurations through
// real loaders over every shard of their world (shards = ranks × workers:
// 4 = 4×1, 8 = 4×2, 9 = 3×3, 24 = 8×3): every shard takes the same steps,
// equal to Len and EpochLen, in every epoch; no row comes twice within an
// epoch (PadLast: the repeats are what Stats.PaddedRows says); and what is
// left out is what Stats.DroppedRows says, less than a batch per shard
// (page batches: fewer than World pages). Defaults (nothing set but World
// and Rank) included.
func TestEqualStepsBoundedLoss(t *testing.T) {
	rows := func(n int) func(c *Config) { return func(c *Config) { c.BatchRows = n } }
	cases := []eqCase{
		{set: "ft", shards: 4, cfg: func(c *Config) {}},               // defaults: page batches
		{set: "ft", shards: 8, cfg: func(c *Config) {}, epochs: 2},    // defaults, 4 ranks × 2 workers
		{set: "ft", shards: 4, cfg: rows(32), batches: 32},            // the run
		{set: "ft", shards: 8, cfg: rows(32), batches: 32, epochs: 3}, // and with 2 workers
		{set: "ft", shards: 9, cfg: rows(32), batches: 32},            // 3 × 3
		{set: "ft", shards: 6, cfg: func(c *Config) { c.Shuffle, c.BatchRows = ShuffleRowGroup, 32 }, batches: 32},
		{set: "ft", shards: 8, cfg: func(c *Config) { c.Shuffle, c.BatchRows = ShuffleRowGroup, 32 }, batches: 32, epochs: 2},
		{set: "ft", shards: 2, cfg: func(c *Config) { c.Shuffle, c.BatchRows = ShuffleRowGroup, 32 }, batches: 32},
		{set: "tiny", shards: 7, cfg: func(c *Config) { c.Shuffle, c.BatchRows = ShuffleRow, 64 }, batches: 64},
		{set: "tiny", shards: 6, cfg: func(c *Config) { c.Shuffle, c.BatchRows, c.PadLast = ShuffleStream, 16, true }, batches: 16},
		{set: "tiny", shards: 3, cfg: func(c *Config) { c.Shuffle, c.BatchRows, c.BufferRows = ShuffleNone, 50, 100 }, batches: 50, epochs: 2},
		{set: "tiny", shards: 4, cfg: func(c *Config) { c.Columns, c.BatchRows = []string{"id", "input_ids"}, 24 }, batches: 24},
		{set: "big", shards: 24, cfg: rows(700), batches: 700},
		{set: "big", shards: 7, cfg: func(c *Config) { c.Shuffle, c.BatchRows = ShuffleNone, 700 }, batches: 700},
		{set: "big", shards: 2, cfg: func(c *Config) { c.Shuffle = ShuffleRowGroup }}, // page batches of row groups
	}
	if raceEnabled {
		cases = []eqCase{cases[1], cases[6], cases[9]}
	}
	for _, tc := range cases {
		name := fmt.Sprintf("%s/shards%d/%+v", tc.set, tc.shards, probe(tc.cfg))
		t.Run(name, func(t *testing.T) { runEqual(t, tc) })
	}
}

// probe describes what a case's cfg function sets.
func probe(f func(c *Config)) string {
	var c Config
	f(&c)
	return fmt.Sprintf("%v/rows%d/pad%v/buf%d/cols%d", c.Shuffle, c.BatchRows, c.PadLast, c.BufferRows, len(c.Columns))
}

func runEqual(t *testing.T, tc eqCase) {
	paths, total := eqDataset(t, tc.set)
	ix, err := index.Build(context.Background(), paths, index.Options{NoSidecar: true, Logf: func(string, ...any) {}})
	if err != nil {
		t.Fatal(err)
	}
	epochs := max(tc.epochs, 1)
	seen := make([][]int, epochs)
	for e := range seen {
		seen[e] = make([]int, total)
	}
	var dropped, padded int64
	steps := make([][]int, epochs)
	maxPage := int64(0)
	for r := 0; r < tc.shards; r++ {
		cfg := Config{Paths: paths, SharedIndex: ix, Columns: []string{"id"}, Seed: 17, Rank: r, World: tc.shards, Epochs: epochs,
			Logf: func(string, ...any) {}}
		tc.cfg(&cfg)
		l, err := Open(context.Background(), cfg)
		if err != nil {
			t.Fatalf("rank %d: Open: %v", r, err)
		}
		for _, n := range ix.PageRows(l.lead) {
			maxPage = max(maxPage, int64(n))
		}
		if cfg.Shuffle == ShuffleRowGroup {
			for c := 0; c < ix.NumChunks(); c++ {
				maxPage = max(maxPage, ix.Chunk(l.lead, c).NumRows)
			}
		}
		lens := make([]int, epochs)
		for e := range lens {
			if lens[e], err = l.EpochLen(uint64(e)); err != nil {
				t.Fatal(err)
			}
		}
		if l.Len() != lens[0] {
			t.Fatalf("rank %d: Len %d at Open, EpochLen(0) %d", r, l.Len(), lens[0])
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
			e := b.Epoch
			count[e]++
			if l.Len() != lens[e] {
				t.Fatalf("rank %d epoch %d: Len %d, EpochLen %d", r, e, l.Len(), lens[e])
			}
			if tc.batches > 0 && b.Rows != tc.batches {
				t.Fatalf("rank %d epoch %d batch %d: %d rows, want %d", r, e, count[e], b.Rows, tc.batches)
			}
			for _, a := range b.Columns[0].Arrays {
				for _, id := range a.(*array.Int64).Int64Values() {
					seen[e][id]++
				}
			}
			b.Release()
		}
		for e := range count {
			if count[e] != lens[e] {
				t.Fatalf("rank %d epoch %d: %d steps, EpochLen %d", r, e, count[e], lens[e])
			}
			steps[e] = append(steps[e], count[e])
		}
		st := l.Stats()
		dropped += st.DroppedRows
		padded += st.PaddedRows
		l.Close()
	}
	var probeCfg Config
	tc.cfg(&probeCfg)
	pad := probeCfg.PadLast
	var missing, repeats int64
	for e := range seen {
		if slices.Min(steps[e]) != slices.Max(steps[e]) {
			t.Fatalf("epoch %d: steps %v", e, steps[e])
		}
		for id, c := range seen[e] {
			switch {
			case c == 0:
				missing++
			case c > 1 && !pad:
				t.Fatalf("epoch %d: row %d delivered %d times", e, id, c)
			case c > 1:
				repeats += int64(c - 1)
			}
		}
	}
	bound := int64(tc.shards) * int64(tc.batches) * int64(epochs)
	if tc.batches == 0 {
		bound = int64(tc.shards) * maxPage * int64(epochs) // fewer than World pages
	}
	if missing != dropped || repeats != padded {
		t.Fatalf("%d rows missing, %d reported dropped; %d repeated, %d reported padded", missing, dropped, repeats, padded)
	}
	if missing >= bound || repeats >= bound {
		t.Fatalf("%d rows missing, %d repeated over %d epochs of %d rows: bound %d", missing, repeats, epochs, total, bound)
	}
	t.Logf("%d shards, %d epochs: %d steps each, %d of %d rows left out (bound %d), %d repeated",
		tc.shards, epochs, steps[0][0], missing, total*int64(epochs), bound, repeats)
}

// TestEqualStepsRefusals: a world that would leave a shard without data
// fails at Open with ErrConfig saying so; so does DropLast leaving out
// more than half the rows, which happens exactly when the rows do not
// fill one batch on every shard (with one batch each, what is left out is
// less than a batch per shard, so less than what is delivered).
func TestEqualStepsRefusals(t *testing.T) {
	paths, _ := eqDataset(t, "tiny")
	for _, tc := range []struct {
		name string
		cfg  func(c *Config)
	}{
		{"more shards than rows with page batches of row groups", func(c *Config) { c.Shuffle, c.World, c.Rank = ShuffleRowGroup, 3001, 12 }},
		{"no full batch at all", func(c *Config) { c.World, c.Rank, c.BatchRows = 8, 0, 600 }},
		{"more shards than rows", func(c *Config) { c.World, c.Rank, c.BatchRows, c.KeepUneven = 1<<14, 5, 1, true }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Paths: paths, Columns: []string{"id"}, Index: index.Options{NoSidecar: true, Logf: func(string, ...any) {}}, Logf: func(string, ...any) {}}
			tc.cfg(&cfg)
			l, err := Open(context.Background(), cfg)
			if err == nil {
				l.Close()
				t.Fatal("Open accepted it")
			}
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("Open: %v, want ErrConfig", err)
			}
			t.Log(err)
		})
	}
}

// TestEqualStepsResharded: ranks of a world stopped at random steps of an
// epoch, resharded to another world (ranks × workers), resume with equal
// steps on every new rank, equal to Len; the rows before and after are
// the original world's epoch, each once, less under a batch per new rank.
func TestEqualStepsResharded(t *testing.T) {
	paths, total := eqDataset(t, "ft")
	rng := rand.New(rand.NewPCG(8, 9))
	type tc struct {
		from, to int
		cfg      func(c *Config)
		bound    int64
	}
	cases := []tc{
		{4, 3, func(c *Config) { c.BatchRows = 32 }, 32},
		{8, 6, func(c *Config) { c.BatchRows, c.BufferRows = 32, 200 }, 32},
		{2, 9, func(c *Config) { c.Shuffle, c.BatchRows = ShuffleRowGroup, 32 }, 32},
		{3, 2, func(c *Config) {}, 0}, // page batches at defaults
	}
	if raceEnabled {
		cases = cases[1:3]
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%d->%d/%s", c.from, c.to, probe(c.cfg)), func(t *testing.T) {
			open := func(rank, world int, s *State) *Loader {
				cfg := Config{Paths: paths, Columns: []string{"id"}, Seed: 23, Rank: rank, World: world, Resume: s,
					Index: index.Options{NoSidecar: true, Logf: func(string, ...any) {}}, Logf: func(string, ...any) {}}
				c.cfg(&cfg)
				return openT(t, cfg)
			}
			var want, got []int64
			var states []*State
			for r := range c.from {
				ids, _, _ := drain(t, open(r, c.from, nil), -1)
				want = append(want, ids...)
				l := open(r, c.from, nil)
				k := rng.IntN(l.Len() + 1)
				ids, _, _ = drain(t, l, k)
				got = append(got, ids...)
				states = append(states, l.State())
			}
			next, err := Reshard(states, c.to)
			if err != nil {
				t.Fatal(err)
			}
			maxPage := int64(0)
			steps := -1
			for r := range c.to {
				l := open(r, c.to, next[r])
				for _, n := range l.ix.PageRows(l.lead) {
					maxPage = max(maxPage, int64(n))
				}
				ids, _, st := drain(t, l, -1)
				got = append(got, ids...)
				if len(st) != l.Len() || (steps >= 0 && len(st) != steps) {
					t.Fatalf("new rank %d: %d steps, Len %d; rank 0 took %d", r, len(st), l.Len(), steps)
				}
				steps = len(st)
			}
			checkNoRepeats(t, got)
			slices.Sort(want)
			slices.Sort(got)
			bound := int64(c.to) * c.bound
			if c.bound == 0 {
				bound = int64(c.to) * maxPage
			}
			if extra, missing := diff(got, want), diff(want, got); len(extra) > 0 || int64(len(missing)) >= bound {
				t.Fatalf("%d rows across the reshard, the original world's epoch %d of %d: %d missing (bound %d), %d extra",
					len(got), len(want), total, len(missing), bound, len(extra))
			}
		})
	}
}
