package rinas

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/pagefeed/pagefeed/engine"
	"github.com/pagefeed/pagefeed/index"
	"github.com/pagefeed/pagefeed/internal/gen"
	"go.uber.org/goleak"
)

// TestMain removes the datasets the tests generated once every test has
// run, then checks that no goroutine outlived them.
func TestMain(m *testing.M) {
	code := m.Run()
	if stateFuzz.eng != nil {
		stateFuzz.eng.Close()
	}
	if dsDir != "" {
		os.RemoveAll(dsDir)
	}
	if relDir != "" {
		os.RemoveAll(relDir)
	}
	if mcDir != "" {
		os.RemoveAll(mcDir)
	}
	if eqDir != "" {
		os.RemoveAll(eqDir)
	}
	if identityBench.dir != "" {
		os.RemoveAll(identityBench.dir)
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// datasets are generated once per test binary.
var (
	dsOnce sync.Once
	dsDir  string
	dsErr  error
)

const (
	dsFiles = 3
	dsRows  = 1500 // per file
)

type dataset struct {
	paths []string
	rows  int64
}

// testDataset returns a small generated dataset: "v2" (V2 pages with page
// index: every page starts a row) or "v1walk" (V1 pages without page
// index: rows cross pages and the index walks headers).
func testDataset(t *testing.T, kind string) dataset {
	t.Helper()
	dsOnce.Do(func() {
		dsDir, dsErr = os.MkdirTemp("", "rinas-test-")
		if dsErr != nil {
			return
		}
		for _, k := range []struct {
			name string
			cfg  gen.Config
		}{
			{"v2", gen.Config{PageVersion: 2, PageIndex: true, Codec: "snappy", Dictionary: true}},
			{"v1walk", gen.Config{PageVersion: 1, PageIndex: false, Codec: "zstd"}},
			{"v2plain", gen.Config{PageVersion: 2, PageIndex: true, Codec: "none"}},
		} {
			c := k.cfg
			c.Dir = filepath.Join(dsDir, k.name)
			c.Files, c.RowsPerFile, c.PageSize, c.RowGroupRows, c.Seed, c.MeanTokens = dsFiles, dsRows, 2048, 500, 7, 64
			if _, dsErr = gen.Run(context.Background(), c); dsErr != nil {
				return
			}
		}
	})
	if dsErr != nil {
		t.Fatalf("generate dataset: %v", dsErr)
	}
	dir := filepath.Join(dsDir, kind)
	matches, _ := filepath.Glob(filepath.Join(dir, "*.parquet"))
	return dataset{paths: matches, rows: dsFiles * dsRows}
}

func baseConfig(ds dataset, col string) Config {
	return Config{
		Paths:   ds.paths,
		Columns: []string{col},
		Seed:    42,
		World:   1,
		Index:   index.Options{NoSidecar: true, Logf: func(string, ...any) {}},
		Logf:    func(string, ...any) {},
	}
}

// drain reads every batch and returns the ids of the "id" column (arrow
// output) in delivery order, and the pages seen.
func drain(t *testing.T, l *Loader, max int) (ids []int64, pages []uint64, states []*State) {
	t.Helper()
	ctx := context.Background()
	for n := 0; max < 0 || n < max; n++ {
		b, err := l.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		for _, a := range b.Arrays {
			ids = append(ids, a.(*array.Int64).Int64Values()...)
		}
		pages = append(pages, b.Pages...)
		b.Release()
		states = append(states, l.State())
	}
	return ids, pages, states
}

func checkExactlyOnce(t *testing.T, ids []int64, rows int64) {
	t.Helper()
	seen := make([]bool, rows)
	for _, id := range ids {
		if id < 0 || id >= rows {
			t.Fatalf("id %d out of range [0,%d)", id, rows)
		}
		if seen[id] {
			t.Fatalf("id %d delivered twice", id)
		}
		seen[id] = true
	}
	if int64(len(ids)) != rows {
		t.Fatalf("delivered %d rows, want %d", len(ids), rows)
	}
}

func openT(t *testing.T, cfg Config) *Loader {
	t.Helper()
	l, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func TestPageShuffleExactlyOnceAcrossRanks(t *testing.T) {
	ds := testDataset(t, "v2")
	for _, fetch := range []Fetch{Unordered, Ordered} {
		for _, world := range []int{1, 2, 3, 8} {
			t.Run(fmt.Sprintf("%s/world%d", fetch, world), func(t *testing.T) {
				var all []int64
				var pages []uint64
				for r := 0; r < world; r++ {
					cfg := baseConfig(ds, "id")
					cfg.Rank, cfg.World, cfg.BatchPages, cfg.Fetch, cfg.KeepUneven = r, world, 8, fetch, true
					l := openT(t, cfg)
					ids, pg, _ := drain(t, l, -1)
					all = append(all, ids...)
					pages = append(pages, pg...)
					if err := l.Close(); err != nil {
						t.Fatal(err)
					}
				}
				checkExactlyOnce(t, all, ds.rows)
				// Ranks share rows: a page at a boundary between two
				// ranks' shares goes to both, each with its own rows.
				slices.Sort(pages)
				again := len(pages)
				pages = slices.Compact(pages)
				again -= len(pages)
				for i, p := range pages {
					if p != uint64(i) {
						t.Fatalf("pages delivered %v..., want each of 0..%d", pages[:min(len(pages), 10)], len(pages)-1)
					}
				}
				if again > world-1 {
					t.Fatalf("%d pages delivered to two ranks, more than the %d boundaries", again, world-1)
				}
			})
		}
	}
}

func TestPageShuffleOrderIsShuffled(t *testing.T) {
	ds := testDataset(t, "v2")
	cfg := baseConfig(ds, "id")
	cfg.Fetch = Ordered
	_, pages, _ := drain(t, openT(t, cfg), -1)
	inOrder := 0
	for i := 1; i < len(pages); i++ {
		if pages[i] == pages[i-1]+1 {
			inOrder++
		}
	}
	if inOrder > len(pages)/10 {
		t.Fatalf("%d of %d pages follow their predecessor: not shuffled", inOrder, len(pages))
	}
	cfg.Epoch = 1
	_, pages1, _ := drain(t, openT(t, cfg), -1)
	if slices.Equal(pages, pages1) {
		t.Fatal("epochs 0 and 1 have the same order")
	}
}

func TestEveryModeDeliversEveryRowOnce(t *testing.T) {
	for _, kind := range []string{"v2", "v1walk"} {
		ds := testDataset(t, kind)
		for _, sh := range []Shuffle{ShufflePage, ShuffleRow, ShuffleRowGroup, ShuffleStream, ShuffleNone} {
			for _, world := range []int{1, 3} {
				t.Run(fmt.Sprintf("%s/%s/world%d", kind, sh, world), func(t *testing.T) {
					var all []int64
					for r := 0; r < world; r++ {
						cfg := baseConfig(ds, "id")
						cfg.Shuffle, cfg.Rank, cfg.World, cfg.BatchRows, cfg.BufferRows, cfg.KeepUneven = sh, r, world, 100, 0, true
						if sh == ShuffleStream || sh == ShufflePage {
							cfg.BufferRows = 300
						}
						l := openT(t, cfg)
						ids, _, _ := drain(t, l, -1)
						if l.rows.buf != nil && l.rows.buf.len() > cfg.BufferRows {
							t.Fatalf("buffer holds %d rows, configured %d", l.rows.buf.len(), cfg.BufferRows)
						}
						all = append(all, ids...)
					}
					checkExactlyOnce(t, all, ds.rows)
				})
			}
		}
	}
}

func TestListColumnRowsCrossingPagesMatchWholeFile(t *testing.T) {
	ds := testDataset(t, "v1walk")
	cfg := baseConfig(ds, "input_ids")
	cfg.Shuffle = ShuffleNone
	cfg.Fetch = Ordered
	l := openT(t, cfg)
	var lens []int
	eachBatch(t, l, func(b *Batch) {
		for _, a := range b.Arrays {
			lens = appendLengths(lens, a.(*array.List))
		}
		b.Release()
	})
	want := wholeColumnLengths(t, ds.paths)
	if !slices.Equal(lens, want) {
		t.Fatalf("%d rows with lengths %v..., want %d rows %v...", len(lens), lens[:min(8, len(lens))], len(want), want[:min(8, len(want))])
	}
}

func TestTokensOutput(t *testing.T) {
	ds := testDataset(t, "v2")
	cfg := baseConfig(ds, "input_ids")
	cfg.Shuffle, cfg.Fetch, cfg.Output, cfg.SeqLen, cfg.BatchRows, cfg.EOS = ShuffleNone, Ordered, OutputTokens, 128, 4, -7
	cfg.Pad = -9
	l := openT(t, cfg)
	var stream []int32
	eachBatch(t, l, func(b *Batch) {
		if len(b.Tokens) != 4*128 || uintptrOf(b.Tokens)%4096 != 0 {
			t.Fatalf("token matrix of %d at %#x, want 512 at a 4096-aligned address", len(b.Tokens), uintptrOf(b.Tokens))
		}
		if b.Fill <= 0 || b.Fill > 1 {
			t.Fatalf("fill %v", b.Fill)
		}
		for _, v := range b.Tokens {
			if v != -9 {
				stream = append(stream, v)
			}
		}
		b.Release()
	})
	lens := wholeColumnLengths(t, ds.paths)
	docs := 0
	for _, v := range stream {
		if v == -7 {
			docs++
		}
	}
	if docs != len(lens) {
		t.Fatalf("%d EOS in the token stream, want one per document (%d)", docs, len(lens))
	}
	total := 0
	for _, n := range lens {
		total += n + 1
	}
	if len(stream) != total {
		t.Fatalf("%d tokens, want %d", len(stream), total)
	}
}

func TestResumeExactly(t *testing.T) {
	ds := testDataset(t, "v2")
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name string
		mod  func(*Config)
	}{
		{"pages", func(c *Config) { c.BatchPages = 4; c.Fetch = Ordered }},
		{"rows+buffer", func(c *Config) { c.BatchRows = 64; c.BufferRows = 200; c.Fetch = Ordered }},
		{"stream", func(c *Config) { c.Shuffle = ShuffleStream; c.BatchRows = 50; c.BufferRows = 100; c.Fetch = Ordered }},
		{"rowgroup", func(c *Config) { c.Shuffle = ShuffleRowGroup; c.BatchRows = 70; c.Fetch = Ordered }},
		{"row", func(c *Config) { c.Shuffle = ShuffleRow; c.BatchRows = 33; c.BatchPages = 16; c.Fetch = Ordered }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := baseConfig(ds, "id")
			tc.mod(&cfg)
			full, _, states := drain(t, openT(t, cfg), -1)
			checkExactlyOnce(t, full, ds.rows)
			for trial := 0; trial < 3; trial++ {
				k := rng.IntN(len(states) - 1)
				// Rows delivered up to and including batch k.
				head, _, _ := drain(t, openT(t, cfg), k+1)
				blob, err := MarshalState(states[k])
				if err != nil {
					t.Fatal(err)
				}
				st, err := UnmarshalState(blob)
				if err != nil {
					t.Fatal(err)
				}
				rcfg := cfg
				rcfg.Resume = st
				rest, _, _ := drain(t, openT(t, rcfg), -1)
				got := append(slices.Clone(head), rest...)
				if !slices.Equal(got, full) {
					t.Fatalf("resume after batch %d: %d rows, differs from the uninterrupted %d rows", k, len(got), len(full))
				}
			}
		})
	}
}

func TestResumeUnorderedDeliversTheRest(t *testing.T) {
	ds := testDataset(t, "v2")
	cfg := baseConfig(ds, "id")
	cfg.BatchRows, cfg.BufferRows = 64, 100
	l := openT(t, cfg)
	head, _, states := drain(t, l, 7)
	rcfg := cfg
	rcfg.Resume = states[len(states)-1]
	rest, _, _ := drain(t, openT(t, rcfg), -1)
	checkExactlyOnce(t, append(head, rest...), ds.rows)
}

// TestReshardChangesWorldSizeExactly: states of ranks stopped at different
// steps, resharded to another world, deliver the rest exactly once, with
// equal steps off (KeepUneven) and on (DropLast, the default for World >
// 1: the resharded remainder is delivered whole).
func TestReshardChangesWorldSizeExactly(t *testing.T) {
	for _, uneven := range []bool{true, false} {
		t.Run(fmt.Sprintf("keepUneven=%v", uneven), func(t *testing.T) { testReshard(t, uneven) })
	}
}

func testReshard(t *testing.T, uneven bool) {
	ds := testDataset(t, "v2")
	for _, tc := range []struct {
		name     string
		from, to int
		rows     bool
	}{
		{"pages 2->3", 2, 3, false},
		{"pages 3->1", 3, 1, false},
		{"rows 2->3", 2, 3, true},
		{"rows 1->8", 1, 8, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var all, want []int64
			var states []*State
			for r := 0; r < tc.from; r++ {
				cfg := baseConfig(ds, "id")
				cfg.Rank, cfg.World, cfg.BatchPages, cfg.KeepUneven = r, tc.from, 4, uneven || tc.from == 1
				if tc.rows {
					cfg.BatchRows, cfg.BufferRows = 40, 90
				}
				// The original world's epoch uninterrupted: every row, or
				// the rows less its DropLast tail, which stays left out.
				ids, _, _ := drain(t, openT(t, cfg), -1)
				want = append(want, ids...)
				l := openT(t, cfg)
				ids, _, st := drain(t, l, 3+r) // ranks stop at different steps
				all = append(all, ids...)
				states = append(states, st[len(st)-1])
			}
			next, err := Reshard(states, tc.to)
			if err != nil {
				t.Fatal(err)
			}
			for r := 0; r < tc.to; r++ {
				cfg := baseConfig(ds, "id")
				cfg.Rank, cfg.World, cfg.BatchPages, cfg.Resume, cfg.KeepUneven = r, tc.to, 4, next[r], uneven || tc.to == 1
				if tc.rows {
					cfg.BatchRows, cfg.BufferRows = 40, 90
				}
				ids, _, _ := drain(t, openT(t, cfg), -1)
				all = append(all, ids...)
			}
			if uneven {
				checkExactlyOnce(t, all, ds.rows)
			}
			// The rows of the original world's epoch, each once, less what
			// the new world's equal steps leave out (under a batch per rank).
			slices.Sort(all)
			slices.Sort(want)
			checkNoRepeats(t, all)
			bound := 1
			if !uneven && tc.to > 1 {
				bound = tc.to * 40
				if !tc.rows {
					bound = tc.to * int(slices.Max(openT(t, baseConfig(ds, "id")).ix.PageRows(0)))
				}
			}
			if extra, missing := diff(all, want), diff(want, all); len(extra) > 0 || len(missing) >= bound {
				t.Fatalf("delivered %d rows across the reshard, the original world's epoch %d: %d missing (bound %d), %d extra",
					len(all), len(want), len(missing), bound, len(extra))
			}
		})
	}
}

func TestMultipleEpochs(t *testing.T) {
	ds := testDataset(t, "v2")
	cfg := baseConfig(ds, "id")
	cfg.Epochs = 2
	ids, _, states := drain(t, openT(t, cfg), -1)
	if int64(len(ids)) != 2*ds.rows {
		t.Fatalf("%d rows over 2 epochs, want %d", len(ids), 2*ds.rows)
	}
	checkExactlyOnce(t, ids[:ds.rows], ds.rows)
	checkExactlyOnce(t, ids[ds.rows:], ds.rows)
	if last := states[len(states)-1]; last.Epoch != 1 {
		t.Fatalf("last state in epoch %d, want 1", last.Epoch)
	}
}

func TestCancelAndBackpressure(t *testing.T) {
	ds := testDataset(t, "v2")
	cfg := baseConfig(ds, "id")
	cfg.BatchPages, cfg.Prefetch = 4, 1
	l := openT(t, cfg)
	// Hold every batch: Next must block once the window is exhausted.
	var held []*Batch
	for i := 0; i < 2; i++ {
		b, err := l.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := l.Next(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Next with every batch held: %v, want the deadline", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("cancelled Next took %v", d)
	}
	for _, b := range held {
		b.Release()
	}
	b, err := l.Next(context.Background())
	if err != nil {
		t.Fatalf("Next after releasing: %v", err)
	}
	b.Release()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Next(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Next after Close: %v", err)
	}
}

func TestOpenRejectsBadConfig(t *testing.T) {
	ds := testDataset(t, "v2")
	other := baseConfig(ds, "id")
	other.Seed = 1
	ol := openT(t, other)
	b, err := ol.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	b.Release()
	foreign := ol.State()
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		want error
	}{
		{"unknown column", func(c *Config) { c.Columns = []string{"nope"} }, nil},
		{"tokens from strings", func(c *Config) { c.Columns = []string{"text"}; c.Output = OutputTokens }, ErrConfig},
		{"memory", func(c *Config) { c.BatchPages = 60000; c.MemoryLimit = 4 << 10 }, ErrMemory},
		{"state of another seed", func(c *Config) { c.Resume = foreign }, ErrState},
		{"rank beyond world", func(c *Config) { c.Rank, c.World = 3, 2 }, ErrConfig},
		{"no paths", func(c *Config) { c.Paths = nil }, ErrConfig},
		{"negative iodepth", func(c *Config) { c.IODepth = -1 }, ErrConfig},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := baseConfig(ds, "id")
			tc.mod(&cfg)
			l, err := Open(context.Background(), cfg)
			if err == nil {
				l.Close()
				t.Fatal("Open accepted it")
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("Open: %v, want %v", err, tc.want)
			}
		})
	}
}

// wholeColumnLengths reads input_ids list lengths of every file in order
// with arrow-go's reader (the reference).
func wholeColumnLengths(t *testing.T, paths []string) []int {
	t.Helper()
	var out []int
	for _, p := range paths {
		out = append(out, readListLengths(t, p)...)
	}
	return out
}

var _ arrow.Array

func TestSharedEngineWithOtherWorkerCount(t *testing.T) {
	ds := testDataset(t, "v2")
	for _, workers := range []int{1, 3} {
		e, err := engine.New(engine.Options{Workers: workers, SlotSize: 64 << 10, SlotsPerWorker: 128, Logf: func(string, ...any) {}})
		if err != nil {
			t.Fatal(err)
		}
		cfg := baseConfig(ds, "id")
		cfg.SharedEngine = e
		l := openT(t, cfg)
		ids, _, _ := drain(t, l, -1)
		checkExactlyOnce(t, ids, ds.rows)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRowsLongerThanTwoPages: rows of several pages go through the
// synchronous span extension, on the engine path and on the ordered path.
func TestRowsLongerThanTwoPages(t *testing.T) {
	dir := t.TempDir()
	res, err := gen.Run(context.Background(), gen.Config{Dir: dir, Files: 1, RowsPerFile: 120, PageSize: 1024,
		PageVersion: 1, PageIndex: false, Codec: "snappy", Seed: 5, MeanTokens: 1500})
	if err != nil {
		t.Fatal(err)
	}
	want := wholeColumnLengths(t, res.Files)
	for _, fetch := range []Fetch{Unordered, Ordered} {
		t.Run(fetch.String(), func(t *testing.T) {
			cfg := baseConfig(dataset{paths: res.Files}, "input_ids")
			cfg.Shuffle, cfg.Fetch = ShuffleNone, fetch
			l := openT(t, cfg)
			var got []int
			eachBatch(t, l, func(b *Batch) {
				// Unordered batches arrive in landing order: sort by page.
				type pg struct {
					page uint64
					lens []int
				}
				var pages []pg
				for i, a := range b.Arrays {
					pages = append(pages, pg{b.Pages[i], appendLengths(nil, a.(*array.List))})
				}
				slices.SortFunc(pages, func(x, y pg) int { return int(x.page) - int(y.page) })
				for _, p := range pages {
					got = append(got, p.lens...)
				}
				b.Release()
			})
			if !slices.Equal(got, want) {
				t.Fatalf("%d rows, want %d (lengths differ)", len(got), len(want))
			}
			if l.Stats().SlowReads == 0 {
				t.Fatal("no row needed more than two pages: the test does not cover the span extension")
			}
		})
	}
}

// TestAutoPrefetch checks the read-ahead chosen when Config.Prefetch is 0:
// 2 for uncompressed columns; for compressed ones 832 pages in the window
// and at most 256 MiB of slots; never below 2 or above 64.
func TestAutoPrefetch(t *testing.T) {
	for _, c := range []struct {
		perBatch, slot, want int
		compressed           bool
	}{
		{64, 16 << 10, 2, false},     // 8 KiB pages keep 2
		{64, 40 << 10, 12, true},     // compressed: 832 pages in the window
		{1024, 16 << 10, 2, true},    // batches beyond 832 pages keep 2
		{4, 16 << 10, 64, true},      // tiny batches: at most 64
		{64, 82 << 10, 12, true},     // large compressed reads: the same window
		{64, 8<<20 + 8192, 2, true},  // one 8 MiB page: 256 MiB of slots at most
		{16, 2<<20 + 8192, 6, true},  // 2 MiB slots in batches of 16: 256 MiB
		{64, 82 << 10, 2, false},     // 64 KiB uncompressed pages keep 2
		{64, 1<<20 + 8192, 2, false}, // and 1 MiB pages
		{8, 40 << 10, 2, false},      // and small batches
		{4096, 72 << 10, 2, false},   // and huge ones
	} {
		if got := autoPrefetch(c.perBatch, c.slot, 0, c.compressed); got != c.want {
			t.Errorf("autoPrefetch(%d, %d, 0, %v) = %d, want %d", c.perBatch, c.slot, c.compressed, got, c.want)
		}
	}
	// decoded pages bound compressed windows to 128 MiB
	for _, c := range []struct{ perBatch, slot, decoded, want int }{
		{64, 40 << 10, 64 << 10, 12}, // 64 KiB pages: 832 pages, 52 MiB
		{64, 400 << 10, 1 << 20, 2},  // 1 MiB pages: 2 batches
		{16, 400 << 10, 1 << 20, 7},  // in batches of 16: 128 MiB
		{64, 40 << 10, 256 << 10, 7}, // 256 KiB pages: 512 pages
		{64, 40 << 10, 64 << 20, 2},  // never below 2
		{64, 82 << 10, 64 << 10, 12}, // as without an estimate
	} {
		if got := autoPrefetch(c.perBatch, c.slot, c.decoded, true); got != c.want {
			t.Errorf("autoPrefetch(%d, %d, %d, true) = %d, want %d", c.perBatch, c.slot, c.decoded, got, c.want)
		}
	}
	ds := testDataset(t, "v2")
	cfg := baseConfig(ds, "id")
	cfg.BatchPages = 1
	l := openT(t, cfg)
	if got := l.Prefetch(); got < 2 || got > 64 {
		t.Fatalf("Prefetch() = %d after Open with 0", got)
	}
	// A run of fewer batches reads no further ahead than its last.
	cfg.BatchPages = 0
	l = openT(t, cfg)
	if n := l.ix.NumPages(0); l.BatchPages() != min(64, n) || l.Prefetch() != (n+l.BatchPages()-1)/l.BatchPages()-1 {
		t.Fatalf("%d pages: batches of %d, Prefetch() = %d", n, l.BatchPages(), l.Prefetch())
	}
	// zstd pages of ~2 KiB: their headers give the decoded size, and the
	// memory check counts the decoded window
	zc := baseConfig(testDataset(t, "v1walk"), "input_ids")
	lz := openT(t, zc)
	if est, ratio := lz.decodedPageEstimate(); est < 512 || est > 16<<10 || ratio < 1 {
		t.Errorf("decodedPageEstimate() = %d, %.2f for pages of ~2 KiB", est, ratio)
	}
	zc.MemoryLimit = 1
	_, err := Open(context.Background(), zc)
	if !errors.Is(err, ErrMemory) || !strings.Contains(err.Error(), "MiB of decoded pages (") || strings.Contains(err.Error(), "(0 bytes each)") {
		t.Errorf("Open over the memory limit: %v, want ErrMemory counting decoded pages", err)
	}
}

// TestDefaultWorkers checks Engine.Workers' default: every core for a
// compressed column, half of them (at least one) for an uncompressed one,
// and that IODepth is shared by the workers.
func TestDefaultWorkers(t *testing.T) {
	n := runtime.GOMAXPROCS(0)
	for _, c := range []struct {
		kind string
		want int
	}{{"v2", n}, {"v2plain", max(1, n/2)}} {
		cfg := baseConfig(testDataset(t, c.kind), "input_ids")
		cfg.IODepth = 3
		l := openT(t, cfg)
		if got := l.Workers(); got != c.want {
			t.Errorf("%s: %d workers, want %d", c.kind, got, c.want)
		}
		for range 2 { // reads flow at that depth
			b, err := l.Next(context.Background())
			if err != nil {
				t.Fatalf("%s: Next: %v", c.kind, err)
			}
			b.Release()
		}
	}
}

// TestDiskBytesCountWhatTheDeviceMoved checks Stats over one epoch of
// single-page units: PageBytes is the pages themselves, DiskBytes each read
// rounded out to the engine's O_DIRECT alignment (statx DIOALIGN), as fio
// counts the disk's work; buffered reads move the pages alone.
func TestDiskBytesCountWhatTheDeviceMoved(t *testing.T) {
	ds := testDataset(t, "v2plain")
	cfg := baseConfig(ds, "id")
	cfg.IOMode = IOBuffered
	l := openT(t, cfg)
	drain(t, l, -1)
	if st := l.Stats(); st.DiskBytes != st.PageBytes || st.PageBytes == 0 {
		t.Fatalf("buffered: PageBytes %d DiskBytes %d, want them equal", st.PageBytes, st.DiskBytes)
	}
	cfg.IOMode = IODirect
	l = openT(t, cfg)
	drain(t, l, -1)
	ix := l.Index()
	var pageBytes, diskBytes int64
	for g := 0; g < ix.NumPages(0); g++ {
		loc := ix.Locate(0, g)
		path := ix.File(loc.File).Path
		a := dioAlignOf(path)
		end := loc.Offset + int64(loc.Size)
		hi := min((end+a-1)/a*a, ix.File(loc.File).Size)
		pageBytes += int64(loc.Size)
		diskBytes += hi - loc.Offset/a*a
	}
	st := l.Stats()
	if st.PageBytes != pageBytes || st.DiskBytes != diskBytes {
		t.Fatalf("PageBytes %d DiskBytes %d, want %d and %d", st.PageBytes, st.DiskBytes, pageBytes, diskBytes)
	}
	if diskBytes == pageBytes {
		t.Logf("reads are not rounded here (buffered?): DiskBytes equals PageBytes")
	}
}
